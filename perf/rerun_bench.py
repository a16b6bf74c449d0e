"""Re-running a finished run: model calls and wall time, against the first run, in one script.

``--part server`` (default of ``--quick``): a 1,000-cell run (`mmrag run`, demo world, parametric
+ oracle, 500 samples) against the loopback chat server (separate process, fixed latency, room for
64 in flight), with an isolated response cache.  Then, measured the same way (whole `mmrag`
processes, start-up included):

1. the same command again (the run directory is complete: nothing to do);
2. the same command into a new run directory (every answer comes from the response cache).

Prints requests seen by the server and wall-time ratios.

``--part demo``: the harness against the judge it cannot skip.  After one cold ``mmrag demo``
(its world, indices, mining-query vectors and all 6,480 replies cached), in fresh processes:

- **cached rerun**: ``mmrag run`` of the demo's cells (810 samples x 4 scenarios x 2 baselines)
  into a new directory: 0 model calls.  Timed as the command after its imports (cells/s) and as
  the whole process;
- **judge alone**: the rule judge over exactly those 6,480 (sample, prompt, reply) triples read
  from that run, in one ``judge_many`` call (after a 50-item warm-up), the work no rerun can skip;
- **resume of the finished run** (``mmrag run --resume``) and ``mmrag --help``, whole processes.

The rerun's records are compared with the cold demo's (:mod:`run_content`: byte-identical rows
but for timings and cache flags, objects and rates).  Best of ``--repeats``; CPU seconds (user +
system) beside wall seconds, since this machine is shared.  Usage:
``.venv/bin/python perf/rerun_bench.py [--part server|demo|all] [--quick] [--repeats 3] [--checkout DIR]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from loopback_server import ServerProcess  # noqa: E402


def _run(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"command failed ({res.returncode}): {' '.join(cmd)}\n{res.stderr[-2000:]}")
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=500, help="samples; cells = 2 x limit")
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--quick", action="store_true", help="100 samples, the server part only")
    ap.add_argument(
        "--part", choices=("server", "demo", "all"), default=None, help="default: all (server with --quick)"
    )
    ap.add_argument("--repeats", type=int, default=3, help="demo part: repeats (best kept)")
    ap.add_argument("--checkout", type=Path, default=ROOT, help="demo part: the mmrag checkout to time")
    args = ap.parse_args()
    part = args.part or ("server" if args.quick else "all")
    if part in ("demo", "all"):
        sys.path.insert(0, str(ROOT / "perf"))
        from demo_rerun import main as demo_part

        demo_part(args.repeats, args.checkout)
    if part == "demo":
        return
    limit = 100 if args.quick else args.limit
    with (
        tempfile.TemporaryDirectory() as tmp,
        ServerProcess(latency=args.latency, max_concurrency=64, echo=True) as srv,
    ):
        tmp = Path(tmp)
        env = dict(
            os.environ,
            MMRAG_HOME=str(tmp / "home"),
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            HF_DATASETS_OFFLINE="1",
        )
        base = [
            sys.executable,
            "-m",
            "mmrag.cli",
            "run",
            "--benchmark",
            "demo",
            "--model",
            "openai:echo",
            "--base-url",
            srv.url,
            "--scenarios",
            "parametric,oracle",
            "--limit",
            str(limit),
            "--batch-size",
            str(args.batch_size),
            "--cache-path",
            str(tmp / "cache.sqlite"),
        ]
        # warm the demo world and its indices so the first timed run measures a run, not set-up
        _run(
            [
                sys.executable,
                "-m",
                "mmrag.cli",
                "run",
                "--benchmark",
                "demo",
                "--model",
                "always-deflect",
                "--scenarios",
                "oracle",
                "--limit",
                "1",
                "--out",
                str(tmp / "warm"),
            ],
            env,
        )
        r0 = srv.stats()["requests"]
        first = _run(base + ["--out", str(tmp / "a")], env)
        r1 = srv.stats()["requests"]
        same_dir = _run(base + ["--out", str(tmp / "a")], env)
        r2 = srv.stats()["requests"]
        new_dir = _run(base + ["--out", str(tmp / "b")], env)
        r3 = srv.stats()["requests"]
        n = json.loads((tmp / "a" / "manifest.json").read_text())["counts"]["records"]
    out = {
        "cells": n,
        "latency_s": args.latency,
        "first_run_s": round(first, 2),
        "first_run_requests": r1 - r0,
        "rerun_same_dir_s": round(same_dir, 2),
        "rerun_same_dir_requests": r2 - r1,
        "rerun_same_dir_ratio": round(same_dir / first, 3),
        "rerun_new_dir_s": round(new_dir, 2),
        "rerun_new_dir_requests": r3 - r2,
        "rerun_new_dir_ratio": round(new_dir / first, 3),
    }
    print(json.dumps(out, indent=2))
    print(
        f"[rerun] first run {first:.1f} s ({r1 - r0} requests); same command again {same_dir:.1f} s "
        f"({r2 - r1} requests, {100 * same_dir / first:.1f} %); into a new directory {new_dir:.1f} s "
        f"({r3 - r2} requests, {100 * new_dir / first:.1f} %)"
    )


if __name__ == "__main__":
    main()
