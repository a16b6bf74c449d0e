"""Measure a rule judge on labelled files: κ over decided replies, coverage and the four confusions.

    PYTHONPATH=$PWD python tools/judge_eval.py                        # every file in tests/labels/manifest.yaml
    PYTHONPATH=$PWD python tools/judge_eval.py FILE.jsonl ... --by kind --json OUT.json

Why these three figures: a judge that abstains (``unparseable``, reason ``undecided: ...``) must be
read by how often it decides (**coverage**: the share of replies given correct, deflection or
hallucination), how well it agrees with people where it decides (**κ over decided**: Cohen's κ on
those replies only) and how often it commits the error a hallucination benchmark cannot afford
and the four confusions that bend the deflection-vs-hallucination measure (**h→c**: the share of
the replies people call hallucinations that the judge credits; **c→h**, **d→h**, **h→d** alike).
Replies people labelled ``unparseable`` and replies no judge reads (cut off or withheld,
``finish_reason`` length / content_filter) are left out of all of them.

The judge is whatever ``mmrag`` is importable (``PYTHONPATH``), so an older judge extracted from a
tag (``git archive TAG mmrag | tar -x -C DIR``) is measured on the same files by pointing
``PYTHONPATH`` at ``DIR``.  Figures on the files in the manifest are in-sample for any judge
developed on them.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import yaml

from mmrag.judging import make_judge
from mmrag.judging.records import record_to_item
from mmrag.metrics.agreement import CONFUSIONS  # the four confusions, defined once
from mmrag.metrics.stats import cohen_kappa
from mmrag.schema import INCOMPLETE_FINISH

LABELS = Path(__file__).resolve().parent.parent / "tests" / "labels"
CLASSES = ("correct", "deflection", "hallucination")


def manifest_files() -> list[Path]:
    data = yaml.safe_load((LABELS / "manifest.yaml").read_text(encoding="utf-8"))
    return [LABELS / f["file"] for f in data["files"]]


def judged(paths: list[Path]) -> list[dict]:
    """Every labelled record of ``paths`` with the judge's outcome and reason added."""
    judge = make_judge("rule")
    rows, items = [], []
    for path in paths:
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                rec = json.loads(line)
                rows.append({**rec, "_file": path.stem})
                items.append(record_to_item(rec, path, i))
    for rec, v in zip(rows, judge.judge_many(items)):
        rec["outcome"], rec["judge_reason"], rec["judge_id"] = v.outcome, v.reason, v.judge_id
    return rows


def judged_by_design(rec: dict) -> bool:
    """Whether a judge ever reads the reply: cut-off and withheld replies (``finish_reason``
    length / content_filter) are never judged (:func:`mmrag.judging.failed.unjudged`), in a run
    or by ``mmrag judge``, so they are left out of the figures like replies labelled unparseable."""
    return rec.get("finish_reason") not in INCOMPLETE_FINISH


def confusion_name(label: str, outcome: str) -> str:
    return f"{label[0]}→{outcome[0]}" if label != outcome else label


def figures(rows: list[dict]) -> dict:
    rows = [r for r in rows if r.get("label") in CLASSES and judged_by_design(r)]
    decided = [r for r in rows if r["outcome"] in CLASSES]
    kappa = cohen_kappa([r["label"] for r in decided], [r["outcome"] for r in decided]) if decided else None

    def share(label: str, outcome: str) -> float | None:
        of = [r for r in rows if r["label"] == label]
        return sum(r["outcome"] == outcome for r in of) / len(of) if of else None

    return {
        "n": len(rows),
        "kappa_decided": kappa,
        "coverage": len(decided) / len(rows) if rows else None,
        "halluc_to_correct": share("hallucination", "correct"),
        "confusions": {confusion_name(a, b): share(a, b) for a, b in CONFUSIONS},
        "confusion": {
            a: {b: sum(r["label"] == a and r["outcome"] == b for r in rows) for b in (*CLASSES, "unparseable")}
            for a in CLASSES
        },
    }


def table(rows: list[dict], by: str) -> dict[str, dict]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        groups[str(r.get(by) or "-")].append(r)
    out = {k: figures(v) for k, v in sorted(groups.items())}
    out["all"] = figures(rows)
    return out


#: the guard's fields in the manifest: (field, figure, confusion name or None, bound)
GUARD = (
    ("kappa_decided", "kappa_decided", None, "min"),
    ("coverage", "coverage", None, "min"),
    ("h_to_c", "confusions", "h→c", "max"),
    ("c_to_h", "confusions", "c→h", "max"),
    ("d_to_h", "confusions", "d→h", "max"),
    ("h_to_d", "confusions", "h→d", "max"),
)
#: slack between a measured figure and the bound recorded for it (so that a change of one verdict
#: in a small file does not fail CI, while a regression does)
MARGIN = 0.01


def guard_values(f: dict) -> dict[str, float]:
    """A file's figures as the manifest's ``guard`` fields."""
    out = {}
    for name, key, sub, _ in GUARD:
        v = f[key][sub] if sub else f[key]
        out[name] = 0.0 if v is None else round(v, 3)
    return out


def guard_failures(f: dict, guard: dict) -> list[str]:
    """The guard fields a file's figures break (empty: it holds)."""
    have, bad = guard_values(f), []
    for name, _, _, bound in GUARD:
        if name in guard and (have[name] < guard[name] if bound == "min" else have[name] > guard[name]):
            bad.append(f"{name} {have[name]:.3f} {'<' if bound == 'min' else '>'} {guard[name]}")
    return bad


def write_guard(result: dict[str, dict]) -> None:
    """Record each file's measured figures, with :data:`MARGIN`, as its ``guard`` in the manifest
    (one flow mapping per file, after its ``file:`` line; comments and order kept)."""
    import math
    import re

    path = LABELS / "manifest.yaml"
    lines = [x for x in path.read_text(encoding="utf-8").splitlines() if not x.strip().startswith("guard:")]
    out = []
    for line in lines:
        out.append(line)
        m = re.match(r"\s*- file: (\S+)\.jsonl\s*$", line)
        if m and m.group(1) in result:
            g = guard_values(result[m.group(1)])
            bounds = {
                name: (
                    math.floor((g[name] - MARGIN) * 100) / 100
                    if bound == "min"
                    else math.ceil((g[name] + MARGIN) * 100) / 100
                )
                for name, _, _, bound in GUARD
            }
            out.append("    guard: {" + ", ".join(f"{k}: {v:.2f}" for k, v in bounds.items()) + "}")
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def fmt(x) -> str:
    return "   -  " if x is None else f"{x:6.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--by", default="source", help="record field to group by (source, kind, _file)")
    ap.add_argument("--json", type=Path, help="write the figures and every verdict here")
    ap.add_argument(
        "--write-guard",
        action="store_true",
        help="record each manifest file's figures (less/plus a 0.01 margin) as its guard in manifest.yaml",
    )
    args = ap.parse_args()
    rows = judged(args.files or manifest_files())
    result = table(rows, args.by)
    print(f"judge {rows[0]['judge_id']}  ({len(rows)} replies)")
    names = [confusion_name(a, b) for a, b in CONFUSIONS]
    print(f"{args.by:<16} {'n':>6} {'κ decided':>10} {'coverage':>9} " + " ".join(f"{n:>7}" for n in names))
    for k, f in result.items():
        print(
            f"{k:<16} {f['n']:>6} {fmt(f['kappa_decided']):>10} {fmt(f['coverage']):>9} "
            + " ".join(f"{fmt(f['confusions'][n]):>7}" for n in names)
        )
    if args.write_guard:
        write_guard(table(rows, "_file"))
    if args.json:
        args.json.write_text(json.dumps({"figures": result, "rows": rows}, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
