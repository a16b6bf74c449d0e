"""Write the golden verdicts of the rule judge over every labelled file (``tests/labels/golden/``).

    PYTHONPATH=$PWD python tools/judge_golden.py          # rewrite every snapshot
    PYTHONPATH=$PWD python tools/judge_golden.py --check  # exit 1 and list the changes, write nothing

Why: every change of the judge's behaviour should be visible in review.  Each labelled file
``tests/labels/NAME.jsonl`` has a snapshot ``tests/labels/golden/NAME.jsonl`` with one line per
record: ``id``, ``outcome`` and ``reason``.  ``tests/test_judge_golden.py`` fails when a verdict
differs from its snapshot; after a deliberate change, run this tool and commit the snapshots with
the change, so the diff shows every verdict it moved.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

LABELS = Path(__file__).resolve().parent.parent / "tests" / "labels"
GOLDEN = LABELS / "golden"


def files() -> list[Path]:
    data = yaml.safe_load((LABELS / "manifest.yaml").read_text(encoding="utf-8"))
    return [LABELS / f["file"] for f in data["files"]]


def verdict_lines(path: Path) -> list[str]:
    from mmrag.judging import make_judge
    from mmrag.judging.records import record_to_item

    recs = [(i, json.loads(x)) for i, x in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if x.strip()]
    verdicts = make_judge("rule").judge_many([record_to_item(r, path, i) for i, r in recs])
    return [
        json.dumps({"id": r.get("id", f"line{i}"), "outcome": v.outcome, "reason": v.reason}, ensure_ascii=False)
        for (i, r), v in zip(recs, verdicts)
    ]


def changes(path: Path) -> list[str]:
    """The snapshot lines of ``path`` that the judge no longer produces (missing snapshot: all)."""
    snap = GOLDEN / path.name
    now = verdict_lines(path)
    old = snap.read_text(encoding="utf-8").splitlines() if snap.exists() else []
    return [f"{a}  ->  {b}" for a, b in zip(old, now) if a != b] + (
        ["line count differs"] if len(old) != len(now) else []
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    failed = 0
    for path in files():
        if args.check:
            diff = changes(path)
            failed += bool(diff)
            for line in diff[:20]:
                print(f"{path.name}: {line}")
        else:
            GOLDEN.mkdir(exist_ok=True)
            (GOLDEN / path.name).write_text("\n".join(verdict_lines(path)) + "\n", encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
