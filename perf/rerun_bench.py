"""Re-running a finished run: model calls and wall time, against the first run, in one script.

A 1,000-cell run (`mmrag run`, demo world, parametric + oracle, 500 samples) against the loopback
chat server (separate process, fixed latency, room for 64 in flight), with an isolated response
cache.  Then, measured the same way (whole `mmrag` processes, start-up included):

1. the same command again (the run directory is complete: nothing to do);
2. the same command into a new run directory (every answer comes from the response cache).

Prints requests seen by the server and wall-time ratios.  Usage:
``.venv/bin/python perf/rerun_bench.py [--quick] [--latency 0.2] [--limit 500]``
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
    ap.add_argument("--quick", action="store_true", help="100 samples")
    args = ap.parse_args()
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
        n = sum(1 for _ in open(tmp / "a" / "samples.jsonl"))
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
