"""Does a real ``mmrag run`` keep a model server's window full?  Measured by the server.

Three measurements, each a whole ``mmrag run`` process (start-up included) against loopback
chat servers (``tests/loopback_server.py``, each in its own process):

1. **one model, lognormal latency** — the server answers after a lognormal delay (median 0.3 s,
   sigma 1: reply lengths vary like a VLM's), has no limit of its own, and records when each
   request arrived and was answered.  The run uses ``--max-concurrency 32``.  Figure: the mean
   number of requests the server had in flight from the first arrival to the last one (while
   requests remained to be sent), against 32; and req/s against the ideal 32 / E[latency].
2. **two models in one run** — the same, each model on its own server, each with its own window
   of 32: each server's mean in flight against 32.
3. **the harness's ceiling** — a zero-latency server: records/s end to end, and where the time
   goes (the engine's per-stage counters, and the top of a cProfile of the same run in-process).

Cells: the demo world, parametric + oracle (no negative mining), ``--limit`` samples, no
response cache (every cell is a real request).
Usage: ``.venv/bin/python perf/run_engine_bench.py [--limit 810] [--only 1,2,3] [--profile]``
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from loopback_server import ServerProcess, mean_in_flight  # noqa: E402

MEDIAN, SIGMA, WINDOW = 0.3, 1.0, 32


BENCH = "demo"
#: scenarios per benchmark: DeflectionBench-style open answers (judged by rules + the MiniLM
#: deflection detector), or HumbleBench-style multiple choice (option matching only)
SCENARIOS = {
    "demo": [{"kind": "parametric"}, {"kind": "oracle"}],
    "demo-humblebench": [
        {"kind": "humblebench", "stress": list(s)}
        for s in ((), ("nota_only",), ("shuffle_options",), ("cautious_prompt",))
    ],
}
CODE = ROOT  # the checkout whose `mmrag run` is measured (--peer DIR: another checkout, for a side-by-side)
PEER = False


def _env(home: Path) -> dict[str, str]:
    return dict(
        os.environ,
        MMRAG_HOME=str(home),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        PYTHONPATH=str(CODE),
    )


def _config(tmp: Path, urls: list[str], limit: int, name: str) -> Path:
    # the old engine knows only the backend option; this one the model's window (which sets it)
    window = {"options": {"max_concurrency": WINDOW}} if PEER else {"max_concurrency": WINDOW}
    cfg = {
        "benchmarks": [{"name": BENCH}],
        "limit": limit,
        "cache": {"enabled": False},
        "scenarios": SCENARIOS[BENCH],
        "models": [{"backend": "openai", "model": f"m{i}", "base_url": u, **window} for i, u in enumerate(urls)],
    }
    p = tmp / f"{name}.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


def _run(cfg: Path, out: Path, home: Path) -> float:
    t0 = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-m", "mmrag.cli", "run", "--config", str(cfg), "--out", str(out)],
        env=_env(home),
        capture_output=True,
        text=True,
        cwd=CODE,
    )
    if res.returncode != 0:
        raise SystemExit(f"mmrag run failed:\n{res.stderr[-3000:]}")
    return time.perf_counter() - t0


def _served(srv: ServerProcess) -> dict:
    recs = [r for r in srv.records() if r["path"].endswith("/chat/completions")]
    first, last = min(r["t"] for r in recs), max(r["t"] for r in recs)
    span = last - first
    return {
        "requests": len(recs),
        "mean_in_flight": mean_in_flight(recs),
        "span_s": span,
        "req_per_s": (len(recs) - 1) / span if span > 0 else float("nan"),
        "statuses": srv.stats()["statuses"],
        "max_open": srv.stats()["max_open"],
    }


def bench_lognormal(tmp: Path, home: Path, limit: int, n_models: int) -> list[dict]:
    mean_latency = MEDIAN * math.exp(SIGMA**2 / 2)
    servers = [ServerProcess(latency=MEDIAN, latency_sigma=SIGMA, answer="blue") for _ in range(n_models)]
    try:
        cfg = _config(tmp, [s.url for s in servers], limit, f"lognormal{n_models}")
        wall = _run(cfg, tmp / f"run-lognormal{n_models}", home)
        got = [_served(s) for s in servers]
    finally:
        for s in servers:
            s.stop()
    print(
        f"\n[{1 if n_models == 1 else 2}] {n_models} model(s), lognormal latency (median {MEDIAN} s, sigma {SIGMA}, "
        f"mean {mean_latency:.3f} s), --max-concurrency {WINDOW}; whole `mmrag run` {wall:.1f} s"
    )
    ideal = WINDOW / mean_latency
    for i, g in enumerate(got):
        ratio = g["mean_in_flight"] / WINDOW
        print(
            f"    model m{i}: {g['requests']} requests; server-measured mean in flight {g['mean_in_flight']:.1f} of "
            f"{WINDOW} = {100 * ratio:.1f} % (target >= 90 %); {g['req_per_s']:.1f} req/s vs ideal {ideal:.1f} "
            f"= {g['req_per_s'] / ideal:.3f}; max open {g['max_open']}; statuses {g['statuses']}"
        )
        g["ratio"] = ratio
    return got


def bench_ceiling(tmp: Path, home: Path, limit: int, profile: bool) -> dict:
    with ServerProcess(latency=0.0, answer="blue") as srv:
        cfg = _config(tmp, [srv.url], limit, "ceiling")
        wall = _run(cfg, tmp / "run-ceiling", home)
        g = _served(srv)
        manifest = json.loads((tmp / "run-ceiling" / "manifest.json").read_text())
        n = manifest["counts"]["records"]
        print(
            f"\n[3] harness ceiling: zero-latency server, {n} records, whole `mmrag run` {wall:.1f} s "
            f"(start-up included); {g['req_per_s']:.1f} req/s while sending, mean in flight {g['mean_in_flight']:.1f}"
        )
        stages = manifest.get("stages", {})
        if stages:
            print("    engine stage totals (s): " + ", ".join(f"{k} {v:.2f}" for k, v in stages.items()))
        if profile:
            _profile(cfg, tmp / "run-ceiling-prof", home)
    return {"wall": wall, "req_per_s": g["req_per_s"], "records": n}


def _profile(cfg: Path, out: Path, home: Path) -> None:
    code = (
        "import cProfile, pstats, sys; from mmrag.runs import execute, load_run_config; "
        "cfg = load_run_config(sys.argv[1]); cProfile.run('execute(cfg, sys.argv[2])', sys.argv[3]); "
        "s = pstats.Stats(sys.argv[3]); s.sort_stats('tottime').print_stats(18)"
    )
    res = subprocess.run(
        [sys.executable, "-c", code, str(cfg), str(out), str(out) + ".prof"],
        env=_env(home),
        capture_output=True,
        text=True,
    )
    lines = [ln for ln in res.stdout.splitlines() if ln.strip()]
    print("    cProfile (in-process, by own time):")
    for ln in lines[-20:]:
        print("      " + ln[:150])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=810, help="demo samples (cells per model = 2 x limit)")
    ap.add_argument("--only", default="1,2,3")
    ap.add_argument("--profile", action="store_true", help="also cProfile the ceiling run in-process")
    ap.add_argument("--home", default=None, help="MMRAG_HOME to reuse (the demo world is generated once)")
    ap.add_argument(
        "--benchmark",
        default="demo",
        choices=sorted(SCENARIOS),
        help="demo: open answers (rules + MiniLM detector); demo-humblebench: MCQ option matching",
    )
    ap.add_argument(
        "--peer",
        default=None,
        metavar="DIR",
        help="measure `mmrag run` of another checkout DIR (e.g. the main branch's)",
    )
    a = ap.parse_args()
    global CODE, PEER, BENCH
    BENCH = a.benchmark
    if a.peer:
        CODE, PEER = Path(a.peer).resolve(), True
        print(f"measuring the engine of {CODE}")
    only = {int(x) for x in a.only.split(",")}
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        home = Path(a.home) if a.home else tmp / "home"
        ok = True
        if 1 in only:
            ok &= bench_lognormal(tmp, home, a.limit, 1)[0]["ratio"] >= 0.9
        if 2 in only:
            ok &= all(g["ratio"] >= 0.9 for g in bench_lognormal(tmp, home, a.limit, 2))
        if 3 in only:
            bench_ceiling(tmp, home, a.limit, a.profile)
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    print("summary: " + ("PASS" if ok else "MISS") + " (mean in flight >= 90 % of the window, measured by the server)")


if __name__ == "__main__":
    main()
