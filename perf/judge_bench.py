"""Items/s of the rule judge against an older judge from a git tag, side by side in one run.

    python perf/judge_bench.py [--tag 5253bb8] [--repeats N] [--files NAME ...] [--run RUN_DIR]

Judges the tuning replies (``tests/labels/hand_labelled.jsonl``, ``judge_tuning.jsonl``,
``judge_tuning2.jsonl``: 501 items; ``--repeats`` copies them) with this checkout's ``RuleJudge``
and with the ``mmrag`` package of ``--tag`` (``git archive TAG mmrag`` into a temporary folder),
each in its own subprocess with that folder first on ``PYTHONPATH``, so neither judge's imports or
caches warm the other.  Each worker first judges 40 other replies (``judge_tuning3.jsonl``; the older
judge loads MiniLM and its classifiers there; that warm-up is reported apart), then times
``judge_many`` over the whole batch.
``--run RUN_DIR`` judges that run's replies instead (e.g. the demo's 6,480: ``mmrag demo`` prints
its run directory), written out first as judge records so both judges read the same items.
Prints items/s of both and the ratio.
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

ROOT = Path(__file__).resolve().parent.parent
LABELS = ROOT / "tests" / "labels"
FILES = ("hand_labelled", "judge_tuning", "judge_tuning2")


def worker(files: list[str], repeats: int) -> dict:
    from mmrag.judging import RuleJudge
    from mmrag.judging.records import record_to_item

    batch = []
    for name in files:
        path = Path(name) if name.endswith(".jsonl") else LABELS / f"{name}.jsonl"
        batch += [
            record_to_item(json.loads(x), path, i) for i, x in enumerate(path.read_text().splitlines(), 1) if x.strip()
        ]
    batch *= repeats
    warm_path = LABELS / "judge_tuning3.jsonl"
    warm = [
        record_to_item(json.loads(x), warm_path, i) for i, x in enumerate(warm_path.read_text().splitlines()[:40], 1)
    ]
    judge = RuleJudge()
    t0 = time.perf_counter()
    judge.judge_many(warm)
    load = time.perf_counter() - t0
    t0 = time.perf_counter()
    judge.judge_many(batch)
    took = time.perf_counter() - t0
    return {
        "judge": judge.judge_id,
        "items": len(batch),
        "seconds": took,
        "items_per_s": len(batch) / took,
        "load_s": load,
    }


def run(pythonpath: Path, files: list[str], repeats: int) -> dict:
    env = {
        **os.environ,
        "PYTHONPATH": str(pythonpath),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    out = subprocess.run(
        [sys.executable, __file__, "--worker", "--repeats", str(repeats), "--files", *files],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_records(run_dir: Path, out: Path) -> None:
    """A run's replies as judge records (``mmrag judge --input`` format) in ``out``."""
    from mmrag.runs import read_records

    with out.open("w", encoding="utf-8") as f:
        for r in read_records(run_dir):
            s, p = r.sample, r.prompt
            choices = p.choices or s.choices
            label = p.label or s.label
            rec = {
                "id": r.key,
                "question": s.question,
                "answers": [label] if choices and label else list(s.answers),
                "response": r.response.text,
                "source": s.source,
                "choices": [{"letter": c.letter, "text": c.text} for c in choices],
                "numeric_ranges": [list(x) for x in s.numeric_ranges],
                "metadata": {k: v for k, v in s.metadata.items() if k in ("polarity", "false_premise", "dimension")},
            }
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tag", default="5253bb8")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--files", nargs="+", default=list(FILES))
    ap.add_argument("--run", type=Path, help="judge this run directory's replies (e.g. the demo's)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.files, args.repeats)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        if args.run:
            items = Path(tmp) / "run_items.jsonl"
            run_records(args.run, items)
            args.files = [str(items)]
        (Path(tmp) / "old").mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.tag, "mmrag"], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(Path(tmp) / "old")], input=archive, check=True)
        old = run(Path(tmp) / "old", args.files, args.repeats)
        new = run(ROOT, args.files, args.repeats)
    for r in (old, new):
        print(
            f"{r['judge']:<10} {r['items']:>6} items  {r['seconds']:7.2f} s  {r['items_per_s']:8.0f} items/s"
            f"   (warm-up, loads included: {r['load_s']:.1f} s)"
        )
    print(f"ratio ({new['judge']} / {old['judge']} items/s): {new['items_per_s'] / old['items_per_s']:.1f}x")


if __name__ == "__main__":
    main()
