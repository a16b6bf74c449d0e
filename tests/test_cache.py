"""The response cache: content-addressed keys, zero calls on re-runs (counted by a real server),
durability across instances and processes, and what must never be cached."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from PIL import Image

sys.path.insert(0, str(Path(__file__).parent))
from loopback_core import Action  # noqa: E402
from loopback_server import LoopbackServer  # noqa: E402

from mmrag.errors import InputError  # noqa: E402
from mmrag.models import (  # noqa: E402
    CachedVLM,
    GenerationSettings,
    OpenAICompatible,
    ResponseCache,
    cache_key,
    create_model,
    parse_model_arg,
)
from mmrag.schema import ContentPart, ImageRef, Message, Prompt, Response  # noqa: E402

G = GenerationSettings(max_new_tokens=16)
FAST = {"backoff_initial": 0.01, "backoff_max": 0.02, "max_retries": 1}
ROOT = Path(__file__).resolve().parents[1]


def image_prompt(img: Path, text: str) -> Prompt:
    return Prompt(
        sample_id=text,
        messages=[
            Message(
                role="user",
                content=[ContentPart(type="image", image=ImageRef(path=str(img))), ContentPart(type="text", text=text)],
            )
        ],
    )


def text_prompt(text: str) -> Prompt:
    return Prompt(sample_id=text, messages=[Message(role="user", content=[ContentPart(type="text", text=text)])])


@pytest.fixture()
def img(tmp_path: Path) -> Path:
    p = tmp_path / "a.png"
    Image.new("RGB", (4, 4), (1, 2, 3)).save(p)
    return p


@pytest.fixture()
def server():
    with LoopbackServer(echo=True) as srv:
        yield srv


def test_key_is_content_addressed(tmp_path, img):
    moved = tmp_path / "elsewhere" / "b.png"
    moved.parent.mkdir()
    shutil.copy(img, moved)
    other = tmp_path / "c.png"
    Image.new("RGB", (4, 4), (9, 9, 9)).save(other)
    k = cache_key("fp", image_prompt(img, "q"), G)
    assert cache_key("fp", image_prompt(moved, "q"), G) == k  # path does not matter
    assert cache_key("fp", image_prompt(other, "q"), G) != k  # pixels do
    assert cache_key("fp2", image_prompt(img, "q"), G) != k  # model does
    assert cache_key("fp", image_prompt(img, "q"), GenerationSettings(max_new_tokens=17)) != k
    assert cache_key("fp", image_prompt(img, "q2"), G) != k
    assert cache_key("fp", image_prompt(img, "q"), G, extra={"id": 1}) != k


def test_second_request_makes_zero_calls_across_instances(tmp_path, server, img):
    db = tmp_path / "responses.sqlite"
    prompts = [image_prompt(img, f"question {i}") for i in range(6)]
    first = create_model(parse_model_arg("openai:m", base_url=server.url), cache=ResponseCache(db))
    r1 = first.generate(prompts, G)
    assert server.stats()["requests"] == 6 and not any(r.cached for r in r1)
    again = first.generate(prompts, G)
    assert server.stats()["requests"] == 6
    assert all(r.cached for r in again) and [r.text for r in again] == [r.text for r in r1]
    # a fresh model and a fresh cache instance on the same file (what a later run does)
    second = create_model(parse_model_arg("openai:m", base_url=server.url), cache=ResponseCache(db))
    r3 = second.generate([image_prompt(img, f"question {i}") for i in range(6)], G)
    assert server.stats()["requests"] == 6
    assert [r.text for r in r3] == [f"question {i}" for i in range(6)]
    assert [r.prompt_id for r in r3] == [p.id for p in prompts]


def test_a_later_process_makes_zero_calls(tmp_path, server):
    db = tmp_path / "shared.sqlite"
    code = textwrap.dedent(f"""
        import sys
        from mmrag.models import create_model, parse_model_arg, ResponseCache, GenerationSettings
        from mmrag.schema import Prompt, Message, ContentPart
        ps = [Prompt(sample_id=str(i), messages=[Message(role="user", content=[ContentPart(type="text", text=f"p{{i}}")])])
              for i in range(5)]
        m = create_model(parse_model_arg("openai:m", base_url={server.url!r}), cache=ResponseCache({str(db)!r}))
        rs = m.generate(ps, GenerationSettings(max_new_tokens=16))
        print(sum(r.cached for r in rs), "|".join(r.text for r in rs))
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out1 = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out1.returncode == 0, out1.stderr
    assert out1.stdout.split() == ["0", "p0|p1|p2|p3|p4"] and server.stats()["requests"] == 5
    out2 = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out2.stdout.split() == ["5", "p0|p1|p2|p3|p4"] and server.stats()["requests"] == 5


def test_sampled_requests_are_not_cached(tmp_path, server):
    m = CachedVLM(OpenAICompatible("m", server.url), ResponseCache(tmp_path / "c.sqlite"))
    hot = GenerationSettings(temperature=0.7)
    m.generate([text_prompt("a")], hot)
    m.generate([text_prompt("a")], hot)
    assert server.stats()["requests"] == 2 and len(m.cache) == 0


def test_errors_are_never_cached(tmp_path, server):
    m = CachedVLM(OpenAICompatible("m", server.url, options=FAST), ResponseCache(tmp_path / "c.sqlite"))
    server.script(Action.status(500), Action.status(500))
    [bad] = m.generate([text_prompt("a")], G)
    assert bad.error == "server_error" and len(m.cache) == 0
    [good] = m.generate([text_prompt("a")], G)  # retried on re-run, then stored
    assert good.error is None and good.text == "a" and not good.cached
    [hit] = m.generate([text_prompt("a")], G)
    assert hit.cached and server.stats()["requests"] == 3


def test_duplicates_in_a_batch_are_sent_once(tmp_path, server):
    m = CachedVLM(OpenAICompatible("m", server.url), ResponseCache(tmp_path / "c.sqlite"))
    p1, p2 = text_prompt("same"), Prompt(id="other-id", sample_id="x", messages=text_prompt("same").messages)
    a, b = m.generate([p1, p2], G)
    assert server.stats()["requests"] == 1 and m.model_calls == 1
    assert (a.prompt_id, b.prompt_id) == (p1.id, "other-id") and a.text == b.text == "same"
    assert not a.cached and b.cached


def test_wal_audit_log_and_no_secrets(tmp_path, server, monkeypatch):
    monkeypatch.setenv("MMRAG_CACHE_TEST_KEY", "sk-top-secret")
    db = tmp_path / "r.sqlite"
    cache = ResponseCache(db)
    m = CachedVLM(OpenAICompatible("m", server.url, "MMRAG_CACHE_TEST_KEY"), cache)
    m.generate([text_prompt("x"), text_prompt("y")], G)
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    lines = [json.loads(ln) for ln in cache.audit_path.read_text().splitlines()]
    assert cache.audit_path.name == "r.audit.jsonl"
    assert [ln["op"] for ln in lines] == ["put", "put"] and {ln["chars"] for ln in lines} == {1}
    assert all(ln["fingerprint"] == m.fingerprint and len(ln["key"]) == 64 for ln in lines)
    cache.close()
    for f in tmp_path.iterdir():
        assert b"sk-top-secret" not in f.read_bytes()


def test_put_refuses_errors_and_roundtrips(tmp_path):
    c = ResponseCache(tmp_path / "x.sqlite")
    assert not c.put("k1", "fp", Response(prompt_id="p", error="timeout"))
    assert c.put("k2", "fp", Response(prompt_id="p", text="hi", latency_s=0.5))
    got = c.get("k2")
    assert got is not None and got.text == "hi" and got.cached and "k2" in c and "k1" not in c
    assert c.stats()["entries"] == 1 and c.clear("fp") == 1 and len(c) == 0


def test_default_location_and_bad_file(tmp_path, monkeypatch):
    monkeypatch.setenv("MMRAG_HOME", str(tmp_path / "home"))
    assert ResponseCache.default().path == tmp_path / "home" / "cache" / "responses.sqlite"
    m = create_model(parse_model_arg("always-deflect"))  # default: shared cache
    assert isinstance(m, CachedVLM) and m.cache.path == tmp_path / "home" / "cache" / "responses.sqlite"
    iso = create_model(parse_model_arg("always-deflect"), cache=tmp_path / "iso.sqlite")
    assert iso.cache.path == tmp_path / "iso.sqlite"
    assert not isinstance(create_model(parse_model_arg("always-deflect"), cache=None), CachedVLM)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(InputError, match="junk.sqlite"):
        ResponseCache(junk)


def test_two_processes_write_the_same_file(tmp_path):
    db = tmp_path / "both.sqlite"
    code = textwrap.dedent("""
        import sys
        from mmrag.models.cache import ResponseCache
        from mmrag.schema import Response
        c = ResponseCache(sys.argv[1])
        tag = sys.argv[2]
        for b in range(20):
            c.put_many([(f"{tag}-{b}-{i}", "fp", Response(prompt_id="p", text=tag)) for i in range(10)])
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(db), t], env=env) for t in ("a", "b")]
    assert all(p.wait(120) == 0 for p in procs)
    c = ResponseCache(db)
    assert len(c) == 400 and len(c.audit_path.read_text().splitlines()) == 400
