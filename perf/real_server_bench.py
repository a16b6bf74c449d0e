"""The OpenAI-compatible client's overhead per request against a real server, beside a bare httpx loop.

The server is llama.cpp (``python -m llama_cpp.server``) serving Gemma 3 270M from ``.venv-llm``
(built by ``scripts/install_llm_server.sh``), started as the ``real_server`` tests start it.  Both
clients send the *same* request bodies (``OpenAICompatible.payload``), one request at a time (the
server decodes one request at a time), alternating which client goes first for each prompt so that
llama.cpp's prompt cache and the machine's load favour neither.  Per request it prints the wall
time and the client process's CPU time of each, their ratio, and the model's decode rate
(completion tokens per second of the bare loop).

Usage: .venv/bin/python perf/real_server_bench.py [--quick] [--n N] [--max-tokens T]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from real_server import ALIAS, LlamaServer, llm_venv, missing_reason  # noqa: E402

from mmrag.models import GenerationSettings, OpenAICompatible  # noqa: E402
from mmrag.schema import ContentPart, Message, Prompt  # noqa: E402

QUESTIONS = [
    "What is the capital of France?",
    "Name a colour of the sky.",
    "How many legs does a spider have?",
    "Which planet is closest to the sun?",
    "What language is spoken in Brazil?",
    "Who wrote Hamlet?",
    "What is frozen water called?",
    "What is two plus two?",
]


def prompt(i: int) -> Prompt:
    q = QUESTIONS[i % len(QUESTIONS)] + ("" if i < len(QUESTIONS) else f" (variant {i})")
    return Prompt(
        sample_id=f"s{i}",
        messages=[
            Message(role="system", content=[ContentPart(type="text", text="Answer in one word.")]),
            Message(role="user", content=[ContentPart(type="text", text=q)]),
        ],
    )


def measure(fn) -> tuple[float, float, object]:
    """(wall s, client CPU s, result) of one call."""
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w, time.process_time() - c, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="6 requests per client instead of 24")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--max-tokens", type=int, default=16)
    args = ap.parse_args()
    n = args.n or (6 if args.quick else 24)
    venv = llm_venv()
    reason = missing_reason(venv)
    if reason:
        sys.exit(f"real_server_bench: {reason}")
    settings = GenerationSettings(max_new_tokens=args.max_tokens)
    with tempfile.TemporaryDirectory() as tmp, LlamaServer(venv, Path(tmp)) as server:
        model = OpenAICompatible(ALIAS, server.url, options={"max_concurrency": 1})
        prompts = [prompt(i) for i in range(n)]
        bodies = [model.payload(p, settings) for p in prompts]
        bare = httpx.Client(timeout=120, headers={"Content-Type": "application/json"})
        loop = asyncio.new_event_loop()

        def ours(p: Prompt):
            [r] = loop.run_until_complete(model.agenerate([p], settings))
            assert r.error is None, r.error_detail
            return r.usage.completion_tokens

        def theirs(body: bytes):
            r = bare.post(server.url + "/chat/completions", content=body)
            r.raise_for_status()
            return r.json()["usage"]["completion_tokens"]

        theirs(bodies[0])  # warm both: the model's first call loads weights into the cache
        ours(prompts[0])
        m_wall, m_cpu, b_wall, b_cpu, tokens = [], [], [], [], 0
        for i, (p, body) in enumerate(zip(prompts, bodies)):
            order = ("m", "b") if i % 2 else ("b", "m")
            for who in order:
                if who == "m":
                    w, c, _ = measure(lambda p=p: ours(p))
                    m_wall.append(w)
                    m_cpu.append(c)
                else:
                    w, c, got = measure(lambda body=body: theirs(body))
                    b_wall.append(w)
                    b_cpu.append(c)
                    tokens += int(got)
        loop.run_until_complete(model.aclose())
        loop.close()
        bare.close()
        decode = server_decode_rates(server.log)
    load = os.getloadavg()[0]
    mw, bw = sum(m_wall), sum(b_wall)
    paired = statistics.median(m - b for m, b in zip(m_wall, b_wall))
    mc, bc = statistics.mean(m_cpu), statistics.mean(b_cpu)
    print(
        f"real server: llama.cpp, {ALIAS} (Gemma 3 270M Q4_K_M), {n} requests per client, max_tokens {args.max_tokens}"
    )
    print(f"load average at the end: {load:.1f} on {os.cpu_count()} cores")
    print(f"  bare httpx loop : {1000 * bw / n:8.1f} ms wall, {bc * 1000:6.2f} ms client CPU per request")
    print(f"  mmrag client    : {1000 * mw / n:8.1f} ms wall, {mc * 1000:6.2f} ms client CPU per request")
    print(
        f"  ratio mmrag/bare: wall {mw / bw:.3f} (median paired difference {1000 * paired:+.1f} ms), "
        f"client CPU {mc / bc:.2f}x ({1000 * (mc - bc):+.2f} ms per request)"
    )
    if decode:
        print(
            f"  server decode rate: median {statistics.median(decode):.1f} tokens/s "
            f"(min {min(decode):.1f}, max {max(decode):.1f}; llama.cpp's own timings)"
        )
    print(f"  completion tokens per second of request wall time (bare loop): {tokens / bw:.1f}")


def server_decode_rates(log: Path) -> list[float]:
    """llama.cpp's own decode rates (``eval time ... tokens per second``, prompt evaluation excluded)."""
    rates = []
    for line in log.read_text(errors="replace").splitlines():
        m = re.search(r"(?<!prompt )eval time =.*runs.*?([\d.]+) tokens per second", line)
        if m and "prompt eval" not in line:
            rates.append(float(m.group(1)))
    return rates


if __name__ == "__main__":
    main()
