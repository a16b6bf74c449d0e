"""``perf/rerun_bench.py --part demo``: a cached rerun of the demo's 6,480 cells beside the judge
alone on the same replies, a finished run's resume and ``mmrag --help`` (see rerun_bench.py)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
}
#: the demo's cells as a plain `mmrag run` (what `mmrag demo` runs)
DEMO_RUN = [
    "run",
    "--benchmark",
    "demo",
    "--model",
    "always-deflect,context-reader",
    "--scenarios",
    "parametric,oracle,realistic,adversarial",
    "--distractors",
    "2",
]

_TIMED_CLI = textwrap.dedent("""
    import json, sys, time
    t0 = time.perf_counter(); c0 = time.process_time()
    from mmrag.cli import main
    t1 = time.perf_counter(); c1 = time.process_time()
    rc = main(sys.argv[1:])
    t2 = time.perf_counter(); c2 = time.process_time()
    print("TIMES " + json.dumps({"rc": rc, "import_s": t1 - t0, "run_s": t2 - t1, "run_cpu_s": c2 - c1}))
""")

_JUDGE_ALONE = textwrap.dedent("""
    import json, sys, time
    from mmrag.judging import judge_many, make_judge
    from mmrag.runs import read_records
    recs = read_records(sys.argv[1])
    items = [(r.sample, r.prompt, r.response) for r in recs]
    judge = make_judge("rule")
    judge_many(judge, items[:50])
    t0 = time.perf_counter(); c0 = time.process_time()
    verdicts = judge_many(judge, items)
    t1 = time.perf_counter(); c1 = time.process_time()
    same = sum(v.outcome == r.verdict.outcome for v, r in zip(verdicts, recs))
    print("TIMES " + json.dumps({"items": len(items), "s": t1 - t0, "cpu_s": c1 - c0, "same": same}))
""")


def _child(cmd: list[str], env: dict[str, str]) -> tuple[float, float, dict]:
    """Wall and CPU seconds of one child process, and the TIMES line it printed (if any).  It runs
    in the checkout being timed (PYTHONPATH): ``python -m`` and ``-c`` put the working folder first
    on ``sys.path``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=env["PYTHONPATH"], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd[:6])} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("TIMES ")), None)
    return wall, cpu, json.loads(line[6:]) if line else {}


def main(repeats: int, checkout: Path) -> None:
    sys.path.insert(0, str(HERE))
    from run_content import compare

    load0 = os.getloadavg()
    print(f"checkout: {checkout}; machine: {os.cpu_count()} CPUs, load average {load0[0]:.1f} / {load0[1]:.1f}")
    with tempfile.TemporaryDirectory(prefix="mmrag-rerun-bench-") as tmp:
        home = Path(tmp) / "home"
        env = {**os.environ, **OFFLINE, "MMRAG_HOME": str(home), "PYTHONPATH": str(checkout)}
        py = sys.executable
        cold_wall, _, _ = _child([py, "-m", "mmrag.cli", "demo", "--out", str(home / "cold")], env)
        best: dict[str, tuple] = {}

        def keep(name: str, value: tuple) -> None:
            if name not in best or value[0] < best[name][0]:
                best[name] = value

        for i in range(max(1, repeats)):
            out = home / f"rerun{i}"
            wall, cpu, t = _child([py, "-c", _TIMED_CLI, *DEMO_RUN, "--out", str(out)], env)
            manifest = json.loads((out / "manifest.json").read_text())
            assert manifest["counts"]["model_calls"] == 0, "the cached rerun made model calls"
            keep("rerun", (t["run_s"], t["run_cpu_s"], wall, cpu, t["import_s"], manifest["counts"]["records"]))
            keep("judge", _judge(py, out, env))
            keep("resume", _child([py, "-m", "mmrag.cli", "run", "--resume", str(out)], env)[:2])
            keep("help", _child([py, "-m", "mmrag.cli", "--help"], env)[:2])
        problems = compare(home / "cold", home / "rerun0")
    load1 = os.getloadavg()
    run_s, run_cpu, wall, cpu, import_s, cells = best["rerun"]
    judge_s, judge_cpu, items = best["judge"]
    print(f"cold `mmrag demo` (fresh home): {cold_wall:.1f} s wall; {cells:,} cells; best of {repeats}")
    print(f"{'':52} {'wall s':>8} {'CPU s':>8} {'cells/s':>9}")
    print(f"{'cached rerun: `mmrag run` (mmrag.cli.main)':52} {run_s:8.2f} {run_cpu:8.2f} {cells / run_s:9.0f}")
    print(f"{'cached rerun: the whole process':52} {wall:8.2f} {cpu:8.2f} {cells / wall:9.0f}")
    print(f"{'judge alone on the same replies (judge_many)':52} {judge_s:8.2f} {judge_cpu:8.2f} {items / judge_s:9.0f}")
    print(f"{'`mmrag run --resume` of the finished run':52} {best['resume'][0]:8.2f} {best['resume'][1]:8.2f}")
    print(f"{'`mmrag --help`':52} {best['help'][0]:8.2f} {best['help'][1]:8.2f}")
    print(
        f"rerun / judge alone: {run_s / judge_s:.2f}x the time (cells/s {cells / run_s:.0f} vs {items / judge_s:.0f}); "
        f"`import mmrag.cli` {import_s:.2f} s"
    )
    print("records: " + ("identical to the cold demo's" if not problems else "DIFFERENT: " + "; ".join(problems)))
    print(f"load average after: {load1[0]:.1f} / {load1[1]:.1f}")


def _judge(py: str, out: Path, env: dict[str, str]) -> tuple[float, float, int]:
    _, _, t = _child([py, "-c", _JUDGE_ALONE, str(out)], env)
    if t["same"] != t["items"]:
        sys.exit(f"the judge alone disagrees with the run on {t['items'] - t['same']} replies")
    return t["s"], t["cpu_s"], t["items"]
