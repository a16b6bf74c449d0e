"""The conventions researchers bring from the OpenAI SDK, lmms-eval and inspect_ai.

* ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` are used when no flag names a key or a server: the
  loopback server sees the header, and no file the run writes holds the key;
* ``--temperature``, ``--top-p``, ``--seed`` and ``--gen-kwargs k=v,...`` reach the request body,
  the model fingerprint and the response-cache key;
* the cache key and the fingerprint hold the whole base URL, path too;
* test-only backends (``sleepy``) are usable but listed nowhere a user reads.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from cli_runs import cli_run
from loopback_server import LoopbackServer
from typer.testing import CliRunner

from mmrag.cli import app, main
from mmrag.errors import InputError
from mmrag.models import GenerationSettings, OpenAICompatible, cache_key, parse_model_arg
from mmrag.models.factory import parse_gen_kwargs
from mmrag.schema import ContentPart, Message, Prompt

KEY = "sk-env-convention-8c1f2a9d"


def _files(*roots: Path):
    for root in roots:
        if root.is_file():
            yield root
        elif root.is_dir():
            yield from (p for p in root.rglob("*") if p.is_file())


def _prompt(text: str = "hi") -> Prompt:
    return Prompt(sample_id="s", messages=[Message(role="user", content=[ContentPart(type="text", text=text)])])


def test_openai_env_variables_are_used_when_no_flag_is_given(tmp_path, monkeypatch, module_home):
    with LoopbackServer(answer="Paris") as srv:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url)
        run = tmp_path / "run"
        cli_run(run, "--cache-path", str(tmp_path / "cache.sqlite"), model="openai:env-model")
        assert srv.records and all(r.headers.get("authorization") == f"Bearer {KEY}" for r in srv.records)
    manifest = json.loads((run / "manifest.json").read_text())
    [m] = manifest["config"]["models"]
    assert m["api_key_env"] == "OPENAI_API_KEY" and m["base_url"] == srv.url  # the name, never the key
    for f in _files(run, tmp_path, Path(os.environ["MMRAG_HOME"])):
        assert KEY.encode() not in f.read_bytes(), f"the key leaked into {f}"


def test_flags_win_over_the_environment_and_a_missing_url_says_both_ways(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    spec = parse_model_arg("openai:m", base_url="http://127.0.0.1:7/v2", api_key_env="MY_KEY")
    assert (spec.base_url, spec.api_key_env) == ("http://127.0.0.1:7/v2", "MY_KEY")
    assert parse_model_arg("openai:m").api_key_env is None  # no variable set: no key sent
    monkeypatch.delenv("OPENAI_BASE_URL")
    with pytest.raises(InputError, match="OPENAI_BASE_URL"):
        parse_model_arg("openai:m")


def test_gen_kwargs_parse_like_lmms_eval():
    got = parse_gen_kwargs("temperature=0.2,top_p=0.9,max_tokens=64,until=###,num_beams=1,do_sample=false,x=none")
    assert got == {
        "temperature": 0.2,
        "top_p": 0.9,
        "max_new_tokens": 64,
        "stop": ["###"],
        "extra": {"num_beams": 1, "do_sample": False, "x": None},
    }
    for bad, why in (("temperature", "key=value"), ("a=1,a=2", "twice")):
        with pytest.raises(InputError, match=why):
            parse_gen_kwargs(bad)
    with pytest.raises(InputError, match="temperature"):
        parse_model_arg("always-deflect", **parse_gen_kwargs("temperature=-1"))


def test_generation_flags_reach_the_body_the_fingerprint_and_the_cache_key(tmp_path, module_home):
    with LoopbackServer(answer="Paris") as srv:
        run = tmp_path / "run"
        cli_run(
            run,
            "--base-url",
            srv.url,
            "--top-p",
            "0.5",
            "--seed",
            "7",
            "--gen-kwargs",
            "max_new_tokens=9,repetition_penalty=1.1",
            "--no-cache",
            model="openai:gen-model",
            limit=1,
        )
        [rec] = srv.records
    body = rec.body
    assert (body["top_p"], body["seed"], body["max_tokens"], body["repetition_penalty"]) == (0.5, 7, 9, 1.1)
    manifest = json.loads((run / "manifest.json").read_text())
    fp = manifest["models"]["openai:gen-model"]
    assert fp.startswith(f"openai:gen-model@127.0.0.1:{srv.port}/v1[") and "top_p=0.5" in fp and "seed=7" in fp
    assert "repetition_penalty" in fp
    # the cache key changes with every setting, extra gen kwargs included; defaults keep old keys
    p = _prompt()
    base = GenerationSettings()
    keys = {
        cache_key("m", p, s)
        for s in (base, base.model_copy(update={"top_p": 0.5}), base.model_copy(update={"extra": {"num_beams": 2}}))
    }
    assert len(keys) == 3
    legacy = {k: v for k, v in base.model_dump(mode="json").items() if k != "extra"}
    assert cache_key("m", p, base) == cache_key("m", p, legacy)


def test_a_flag_and_the_same_gen_kwarg_is_an_error(tmp_path, capsys):
    rc = main(
        [
            "run",
            "-b",
            "demo",
            "-m",
            "always-deflect",
            "--temperature",
            "0.5",
            "--gen-kwargs",
            "temperature=0.1",
            "--out",
            str(tmp_path / "r"),
        ]
    )
    assert rc != 0 and "--gen-kwargs" in capsys.readouterr().err and not (tmp_path / "r").exists()


def test_the_base_url_path_is_part_of_the_model_identity():
    a = OpenAICompatible("m", "http://127.0.0.1:9/team-a/v1")
    b = OpenAICompatible("m", "http://127.0.0.1:9/team-b/v1")
    c = OpenAICompatible("m", "http://127.0.0.1:9/team-a/v1/?api_key=pw-secret")
    assert a.fingerprint == "openai:m@127.0.0.1:9/team-a/v1" and a.fingerprint != b.fingerprint
    assert c.fingerprint == a.fingerprint and "pw-secret" not in c.fingerprint
    p, s = _prompt(), GenerationSettings()
    assert cache_key(a.fingerprint, p, s) != cache_key(b.fingerprint, p, s)


def test_test_only_backends_are_hidden_but_usable():
    with pytest.raises(InputError) as err:
        parse_model_arg("no-such-backend")
    assert "sleepy" not in str(err.value) and "openai:MODEL" in str(err.value)
    assert parse_model_arg("sleepy:context-reader@1").backend == "sleepy"
    with pytest.raises(InputError, match="needs a model"):
        parse_model_arg("sleepy")


def test_help_says_limit_is_per_benchmark_and_lists_the_generation_flags():
    runner = CliRunner()
    for cmd in ("run", "sweep"):
        out = runner.invoke(app, [cmd, "--help"], env={"COLUMNS": "240"}).output
        text = " ".join(re.sub(r"[│╭╮╰╯─]", " ", out).split())  # rich's help boxes wrap long lines
        assert "per benchmark" in text and "4N requests" in text, cmd
        for flag in ("--temperature", "--top-p", "--seed", "--gen-kwargs"):
            assert flag in text, (cmd, flag)
