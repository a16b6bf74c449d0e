"""The OpenAI-compatible backend against a real HTTP server on loopback (tests/loopback_server.py)."""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import time
from pathlib import Path

import pytest
from PIL import Image

sys.path.insert(0, str(Path(__file__).parent))
from loopback_core import Action  # noqa: E402
from loopback_server import LoopbackServer, ServerProcess  # noqa: E402

from mmrag.errors import InputError  # noqa: E402
from mmrag.models import AIMDLimiter, GenerationSettings, OpenAICompatible, create_model, parse_model_arg  # noqa: E402
from mmrag.schema import ContentPart, ImageRef, Message, Prompt  # noqa: E402

FAST = {"backoff_initial": 0.01, "backoff_max": 0.05, "max_retries": 2}
G = GenerationSettings(max_new_tokens=16)


def text_prompt(text: str, sid: str = "s") -> Prompt:
    return Prompt(sample_id=sid, messages=[Message(role="user", content=[ContentPart(type="text", text=text)])])


@pytest.fixture()
def server():
    with LoopbackServer(echo=True) as srv:
        yield srv


@pytest.fixture()
def png(tmp_path: Path) -> Path:
    p = tmp_path / "red.png"
    Image.new("RGB", (8, 6), (200, 10, 10)).save(p)
    return p


def test_wire_format_images_headers_and_key(server, png, monkeypatch):
    monkeypatch.setenv("MMRAG_TEST_KEY", "sk-very-secret")
    m = OpenAICompatible("qwen-test", server.url, "MMRAG_TEST_KEY", {"headers": {"X-Team": "eval"}, **FAST})
    prompt = Prompt(
        sample_id="a",
        messages=[
            Message(role="system", content=[ContentPart(type="text", text="Be brief.")]),
            Message(
                role="user",
                content=[
                    ContentPart(type="image", image=ImageRef(path=str(png))),
                    ContentPart(type="text", text="What colour?"),
                ],
            ),
        ],
    )
    [r] = m.generate([prompt], GenerationSettings(max_new_tokens=7, stop=["\n"]))
    assert r.error is None and r.text == "What colour?"
    [rec] = server.records
    assert rec.path == "/v1/chat/completions"
    assert rec.headers["authorization"] == "Bearer sk-very-secret"
    assert rec.headers["x-team"] == "eval"
    body = rec.body
    assert body["model"] == "qwen-test" and body["max_tokens"] == 7 and body["temperature"] == 0.0
    assert body["stop"] == ["\n"]
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    img, txt = body["messages"][1]["content"]
    assert txt == {"type": "text", "text": "What colour?"}
    url = img["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == png.read_bytes()
    # the key never leaves the Authorization header
    for s in (m.fingerprint, repr(m), json.dumps(r.model_dump(mode="json"))):
        assert "sk-very-secret" not in s
    assert m.fingerprint == f"openai:qwen-test@127.0.0.1:{server.port}/v1"  # the path too: one host, many endpoints


def test_missing_key_variable_is_an_input_error(server, monkeypatch):
    monkeypatch.delenv("MMRAG_NOPE", raising=False)
    with pytest.raises(InputError, match="MMRAG_NOPE"):
        OpenAICompatible("m", server.url, "MMRAG_NOPE")
    with pytest.raises(InputError, match="options.max_concurrency"):
        OpenAICompatible("m", server.url, options={"max_concurrency": 0})


def test_never_more_in_flight_than_the_cap_and_order_kept():
    with LoopbackServer(echo=True, latency=0.03) as srv:
        m = OpenAICompatible("m", srv.url, options={"max_concurrency": 3, **FAST})
        prompts = [text_prompt(f"q{i}", str(i)) for i in range(30)]
        rs = m.generate(prompts, G)
        assert [r.text for r in rs] == [f"q{i}" for i in range(30)]
        assert [r.prompt_id for r in rs] == [p.id for p in prompts]
        assert srv.stats()["max_open"] == 3  # reached, never exceeded
        assert m.limiter.max_in_flight <= 3


def test_retry_after_is_honoured(server):
    server.script(Action.status(429, retry_after=1))
    m = OpenAICompatible("m", server.url, options=FAST)
    [r] = m.generate([text_prompt("hello")], G)
    assert r.error is None and r.text == "hello"
    first, second = server.records
    assert first.status == 429 and second.status == 200
    assert second.t - first.t >= 1.0  # waited as told, not the 10 ms backoff
    assert m.meter.retries == 1


def test_retry_after_http_date_and_ms_are_parsed():
    import httpx

    from mmrag.models.retry import parse_retry_after

    assert parse_retry_after(httpx.Headers({"retry-after-ms": "250"})) == 0.25
    assert parse_retry_after(httpx.Headers({"retry-after": "3"})) == 3.0
    date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 <= parse_retry_after(httpx.Headers({"retry-after": date})) <= 31
    assert parse_retry_after(httpx.Headers({})) is None


def test_server_error_then_success_and_dropped_connection(server):
    server.script(Action.status(500), Action.close())
    m = OpenAICompatible("m", server.url, options=FAST)
    [r] = m.generate([text_prompt("x")], G)
    assert r.error is None and r.text == "x"
    assert [rec.status for rec in server.records] == [500, -1, 200]


def test_timeouts_become_an_error_after_retries(server):
    server.script(Action.hang(1.0), Action.hang(1.0))
    m = OpenAICompatible("m", server.url, options={**FAST, "timeout": 0.2, "max_retries": 1})
    t0 = time.monotonic()
    [r] = m.generate([text_prompt("x")], G)
    assert r.error == "timeout" and r.text == ""
    assert len(server.records) == 2 and time.monotonic() - t0 < 1.5
    assert m.meter.errors["timeout"] == 1


def test_persistent_429_is_rate_limit_after_all_attempts(server):
    server.script(*[Action.status(429) for _ in range(3)])
    m = OpenAICompatible("m", server.url, options=FAST)
    [r] = m.generate([text_prompt("x")], G)
    assert r.error == "rate_limit" and r.text == "" and "429" in r.error_detail
    assert len(server.records) == 3  # 1 + max_retries


@pytest.mark.parametrize(
    "action,error",
    [
        (Action.malformed(), "bad_response"),
        (Action.bad_shape(), "bad_response"),
        (Action.overflow(), "context_overflow"),
        (Action.status(401), "other"),
    ],
)
def test_non_retryable_failures_are_classified(server, action, error):
    server.script(action)
    m = OpenAICompatible("m", server.url, options=FAST)
    [r] = m.generate([text_prompt("x")], G)
    assert r.error == error and r.text == ""
    assert len(server.records) == 1  # the same request would fail the same way: no retry


def test_context_limit_from_server_config():
    with LoopbackServer(echo=True, max_prompt_tokens=5) as srv:
        m = OpenAICompatible("m", srv.url, options=FAST)
        short, long = m.generate([text_prompt("a b c"), text_prompt("one two three four five six seven")], G)
        assert short.error is None and long.error == "context_overflow"
        assert "maximum context length" in long.error_detail


def test_usage_and_cost_accounting(server):
    m = OpenAICompatible("m", server.url, options={"input_price_per_mtok": 2.0, "output_price_per_mtok": 10.0})
    rs = m.generate([text_prompt("one two three"), text_prompt("four five")], G)
    assert [(r.usage.prompt_tokens, r.usage.completion_tokens) for r in rs] == [(3, 3), (2, 2)]
    assert rs[0].usage.cost_usd == pytest.approx((3 * 2.0 + 3 * 10.0) / 1e6)
    meter = m.meter.as_dict()
    assert meter["prompt_tokens"] == 5 and meter["completion_tokens"] == 5
    assert meter["cost_usd"] == pytest.approx((5 * 2.0 + 5 * 10.0) / 1e6)


def test_adaptive_concurrency_backs_off_under_a_hidden_limit():
    with LoopbackServer(echo=True, latency=0.03, max_concurrency=4) as srv:
        m = OpenAICompatible(
            "m",
            srv.url,
            options={
                "max_concurrency": 16,
                "initial_concurrency": 8,
                "backoff_initial": 0.01,
                "backoff_max": 0.05,
                "max_retries": 8,
            },
        )
        rs = m.generate([text_prompt(f"q{i}") for i in range(80)], G)
        assert all(r.error is None for r in rs)
        assert m.limiter.decreases >= 1 and m.limiter.limit < 8
        assert srv.stats()["statuses"].get("429", 0) >= 1


def test_aimd_limiter_rules():
    lim = AIMDLimiter(cap=10, initial=2, latency_factor=None)

    async def cycle(signal: str, latency: float = 0.1):
        t = await lim.acquire()
        lim.release(t, signal, latency)

    async def main():
        for _ in range(20):
            await cycle("ok")
        assert lim.limit == 10  # slow start, clipped at the cap
        a, b = await lim.acquire(), await lim.acquire()
        lim.release(a, "overload")
        assert lim.limit == pytest.approx(7.0)
        lim.release(b, "overload")  # same burst: ignored
        assert lim.limit == pytest.approx(7.0) and lim.decreases == 1
        await cycle("ok")  # additive now: +1/limit
        assert lim.limit == pytest.approx(7.0 + 1 / 7.0)

    asyncio.run(main())
    lat = AIMDLimiter(cap=8, initial=8, latency_factor=2.0)

    async def rising():
        for _ in range(12):
            t = await lat.acquire()
            lat.release(t, "ok", 0.1)
        for _ in range(30):
            t = await lat.acquire()
            lat.release(t, "ok", 0.5)
            if lat.decreases:
                break

    asyncio.run(rising())
    assert lat.decreases == 1 and lat.limit < 8


def test_generate_inside_a_running_loop(server):
    m = OpenAICompatible("m", server.url, options=FAST)

    async def notebook_cell():
        return m.generate([text_prompt("from a loop")], G)

    [r] = asyncio.run(notebook_cell())
    assert r.text == "from a loop"


def test_server_as_a_separate_process():
    with ServerProcess(latency=0.01, answer="fixed answer") as proc:
        proc.script(Action.status(503))
        m = OpenAICompatible("m", proc.url, options=FAST)
        [r] = m.generate([text_prompt("x")], G)
        assert r.text == "fixed answer"
        st = proc.stats()
        assert st["requests"] == 2 and st["statuses"] == {"503": 1, "200": 1}
        assert [r["status"] for r in proc.records()] == [503, 200]
        proc.reset()
        assert proc.stats()["requests"] == 0
        proc.kill()  # a crashed server: errors, not exceptions
        [dead] = m.generate([text_prompt("x")], G)
        assert dead.error == "connection" and "Connect" in dead.error_detail  # refused: not a server error


def test_model_arg_parsing_and_factory(server):
    spec = parse_model_arg("openai:llava:13b", base_url=server.url, max_new_tokens=9, timeout=5.0)
    assert (spec.backend, spec.model, spec.settings.max_new_tokens, spec.options) == (
        "openai",
        "llava:13b",
        9,
        {"timeout": 5.0},
    )
    m = create_model(spec, cache=None)
    assert isinstance(m, OpenAICompatible) and m.options.timeout == 5.0
    with pytest.raises(InputError, match="--base-url"):
        parse_model_arg("openai:x")
    with pytest.raises(InputError, match="unknown model backend"):
        parse_model_arg("nonsense:x")
    with pytest.raises(InputError, match="needs a model"):
        parse_model_arg("transformers")
    with pytest.raises(InputError, match="max_new_tokens"):
        parse_model_arg("always-deflect", max_new_tokens="many")
