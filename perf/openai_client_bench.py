"""Benchmark of the OpenAI-compatible client against the loopback server (tests/loopback_server.py).

Three measurements, each with its peer measured in the same run:

1. throughput — server with a fixed 200 ms latency and room for 64 concurrent requests (429 above);
   mmrag's client (cap 64, adaptive) vs the ideal 64 / 0.2 s = 320 req/s, vs a sequential client,
   and vs bare httpx clients (one pool of 64, and 8 pools of 8: the transport floor);
2. hidden rate limit — the server answers 429 above a concurrency the client is not told; the
   adaptive client vs the best fixed concurrency found by scanning (same retry policy for all);
3. cache re-run — a finished 1,000-request batch run again through the response cache with a fresh
   cache instance, fresh model and freshly built prompts (as a later process would): model calls and
   wall time vs the first run.

The server always runs in its own process so it does not share the client's event loop.
Usage: .venv/bin/python perf/openai_client_bench.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from loopback_server import ServerProcess  # noqa: E402

from mmrag.models import CachedVLM, GenerationSettings, OpenAICompatible, ResponseCache  # noqa: E402
from mmrag.schema import ContentPart, ImageRef, Message, Prompt  # noqa: E402

G = GenerationSettings(max_new_tokens=32)


def make_images(d: Path, n: int) -> list[Path]:
    from PIL import Image

    out = []
    for i in range(n):
        p = d / f"img{i}.png"
        Image.new("RGB", (32, 32), (i * 5 % 256, i * 11 % 256, i * 17 % 256)).save(p)
        out.append(p)
    return out


def make_prompts(n: int, images: list[Path]) -> list[Prompt]:
    return [
        Prompt(
            sample_id=f"s{i}",
            messages=[
                Message(role="system", content=[ContentPart(type="text", text="Answer in one word.")]),
                Message(
                    role="user",
                    content=[
                        ContentPart(type="image", image=ImageRef(path=str(images[i % len(images)]))),
                        ContentPart(type="text", text=f"Question number {i}: what is shown?"),
                    ],
                ),
            ],
        )
        for i in range(n)
    ]


def timed(model, prompts) -> tuple[float, list]:
    t0 = time.perf_counter()
    rs = model.generate(prompts, G)
    return time.perf_counter() - t0, rs


async def bare_httpx(url: str, bodies: list[bytes], conc: int, shard: int | None = None) -> float:
    """The transport alone: a Semaphore(conc) over one httpx pool of ``conc`` connections (what a
    straightforward client does), or over pools of ``shard`` connections (the floor of mmrag's
    client: no retries, limiter, rendering or Response objects)."""
    size = shard or conc
    n = conc // size
    clients = [
        httpx.AsyncClient(
            limits=httpx.Limits(max_connections=size, max_keepalive_connections=size),
            timeout=60,
            verify=False,
            headers={"Content-Type": "application/json"},
        )
        for _ in range(n)
    ]
    sem = asyncio.Semaphore(conc)
    load = [0] * n

    async def one(b: bytes) -> None:
        async with sem:
            i = min(range(n), key=load.__getitem__)
            load[i] += 1
            r = await clients[i].post(url + "/chat/completions", content=b)
            r.json()
            load[i] -= 1

    t0 = time.perf_counter()
    await asyncio.gather(*(one(b) for b in bodies))
    dt = time.perf_counter() - t0
    for c in clients:
        await c.aclose()
    return dt


def bench_throughput(n: int, n_seq: int, images: list[Path]) -> dict:
    with ServerProcess(latency=0.2, max_concurrency=64, answer="blue") as srv:
        prompts = make_prompts(n, images)
        warm = OpenAICompatible("bench", srv.url, options={"max_concurrency": 64})
        warm.generate(prompts[:64], G)  # connection/import warm-up
        srv.reset()
        m = OpenAICompatible("bench", srv.url, options={"max_concurrency": 64})
        dt, rs = timed(m, prompts)
        errors = sum(r.error is not None for r in rs)
        st = srv.stats()
        seq = OpenAICompatible("bench", srv.url, options={"max_concurrency": 1, "adaptive": False})
        dt_seq, _ = timed(seq, prompts[:n_seq])
        bodies = [m.payload(p, G) for p in prompts]
        dt_bare = asyncio.run(bare_httpx(srv.url, bodies, 64))
        dt_floor = asyncio.run(bare_httpx(srv.url, bodies, 64, shard=8))
    tput, tput_seq, tput_bare, tput_floor = n / dt, n_seq / dt_seq, n / dt_bare, n / dt_floor
    print(f"\n[1] throughput, 200 ms latency, room for 64 in flight, {n} requests")
    print(
        f"    mmrag client (cap 64, adaptive): {tput:7.1f} req/s  ({dt:.2f} s, errors {errors}, "
        f"server max in flight {st['max_open']}, 429s {st['statuses'].get('429', 0)})"
    )
    print(f"    ideal 64/0.2 s                 : {320.0:7.1f} req/s  -> ratio {tput / 320:.3f} (target >= 0.90)")
    print(f"    sequential client ({n_seq} req)  : {tput_seq:7.1f} req/s  -> speed-up {tput / tput_seq:.1f}x")
    print(f"    bare httpx, one pool of 64     : {tput_bare:7.1f} req/s  -> mmrag/bare {tput / tput_bare:.3f}")
    print(f"    bare httpx, 8 pools of 8       : {tput_floor:7.1f} req/s  -> mmrag/floor {tput / tput_floor:.3f}")
    return {"tput": tput, "ratio_ideal": tput / 320, "tput_seq": tput_seq, "tput_bare": tput_bare}


def bench_rate_limit(n: int, limit: int, grid: list[int], images: list[Path]) -> dict:
    retry = {"max_retries": 30, "backoff_initial": 0.05, "backoff_max": 1.0}
    prompts = make_prompts(n, images)
    results = {}
    with ServerProcess(latency=0.1, max_concurrency=limit, answer="blue") as srv:
        OpenAICompatible("bench", srv.url).generate(prompts[:8], G)
        print(f"\n[2] hidden server limit: 429 above {limit} in flight, 100 ms latency, {n} requests per run")
        for c in grid:
            srv.reset()
            m = OpenAICompatible("bench", srv.url, options={"max_concurrency": c, "adaptive": False, **retry})
            dt, rs = timed(m, prompts)
            st = srv.stats()
            results[c] = n / dt
            print(
                f"    fixed {c:3d}: {n / dt:7.1f} req/s  429s {st['statuses'].get('429', 0):5d}  "
                f"errors {sum(r.error is not None for r in rs)}"
            )
        srv.reset()
        m = OpenAICompatible("bench", srv.url, options={"max_concurrency": 64, **retry})
        dt, rs = timed(m, prompts)
        st = srv.stats()
    best_c = max(results, key=results.get)
    adaptive = n / dt
    lim = m.limiter
    mean_limit = _mean_limit(lim.history, dt)
    print(
        f"    adaptive (cap 64): {adaptive:7.1f} req/s  429s {st['statuses'].get('429', 0):5d}  "
        f"errors {sum(r.error is not None for r in rs)}  decreases {lim.decreases_by}  final limit {lim.limit:.1f}"
        f"  mean limit {mean_limit:.1f}"
    )
    print(
        f"    best fixed: {best_c} at {results[best_c]:.1f} req/s -> adaptive/best = "
        f"{adaptive / results[best_c]:.3f} (target >= 0.80)"
    )
    return {
        "adaptive": adaptive,
        "best_fixed": results[best_c],
        "best_c": best_c,
        "scan": results,
        "ratio": adaptive / results[best_c],
    }


def _mean_limit(history: list[tuple[float, float]], span: float) -> float:
    if len(history) < 2:
        return history[-1][1] if history else float("nan")
    total = sum((t1 - t0) * lim for (t0, lim), (t1, _) in zip(history, history[1:]))
    return total / (history[-1][0] - history[0][0])


def bench_cache(n: int, images_dir: Path, n_images: int) -> dict:
    images = make_images(images_dir, n_images)
    with ServerProcess(latency=0.2, max_concurrency=64, answer="blue") as srv, tempfile.TemporaryDirectory() as d:
        db = Path(d) / "responses.sqlite"
        first = CachedVLM(OpenAICompatible("bench", srv.url, options={"max_concurrency": 64}), ResponseCache(db))
        t1, r1 = timed(first, make_prompts(n, images))
        calls1 = srv.stats()["requests"]
        # a later process: new cache instance, new model, prompts rebuilt (image hashes recomputed)
        fresh = [ImageRef(path=str(p)) for p in images]
        second = CachedVLM(OpenAICompatible("bench", srv.url, options={"max_concurrency": 64}), ResponseCache(db))
        t2, r2 = timed(second, make_prompts(n, [Path(i.path) for i in fresh]))
        calls2 = srv.stats()["requests"] - calls1
    same = all(a.text == b.text for a, b in zip(r1, r2)) and all(r.cached for r in r2)
    print(f"\n[3] cache re-run of a {n}-request batch ({n_images} distinct images)")
    print(f"    first run : {t1:6.3f} s, {calls1} model calls")
    print(f"    re-run    : {t2:6.3f} s, {calls2} model calls, identical answers: {same}")
    print(f"    re-run / first = {t2 / t1:.4f} (target <= 0.05)")
    return {"t1": t1, "t2": t2, "calls2": calls2, "ratio": t2 / t1}


def main() -> None:
    import os

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer requests (about 30 s instead of about 90 s)")
    a = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as d:
        images = make_images(Path(d), 20)
        if a.quick:
            t = bench_throughput(1500, 10, images)
            r = bench_rate_limit(400, 20, [8, 16, 20, 24, 32], images)
        else:
            t = bench_throughput(4000, 25, images)
            r = bench_rate_limit(1000, 20, [4, 8, 12, 16, 18, 20, 22, 24, 32, 48], images)
        c = bench_cache(1000, Path(d), 50)
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    ok = t["ratio_ideal"] >= 0.9 and r["ratio"] >= 0.8 and c["calls2"] == 0 and c["ratio"] <= 0.05
    print(
        f"\nsummary: throughput/ideal {t['ratio_ideal']:.3f}, adaptive/best-fixed {r['ratio']:.3f}, "
        f"cache re-run calls {c['calls2']} at {c['ratio']:.4f} of the first run -> {'PASS' if ok else 'MISS'}"
    )


if __name__ == "__main__":
    main()
