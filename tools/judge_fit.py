"""Rebuild the rule judge's learned combiner, and measure how it generalises (leave one file out).

    PYTHONPATH=$PWD python tools/judge_fit.py --lofo      # report only: kappa per left-out file
    PYTHONPATH=$PWD python tools/judge_fit.py --write     # fit on every file, write data/combiner.json

Why leave-one-file-out: each labelled file in ``tests/data`` was written by a different person or
pass, in its own style; a change that only helps on the files it was fitted to shows up as a drop
when that file is left out.  For each file, the combiner is fitted on all the other files and the
left-out file is judged with it; kappa against the human labels is reported per file and, pooling
the left-out predictions, per source.  "rules" is the judge without the combiner (its rules were
hand-tuned on some of these files, so its per-file figures are in-sample for those).

Reads only the files named in :data:`FILES`.  A held-out set written for a later round is kept
off main (and out of this list) until the judge it measures is frozen; after its one measurement it
joins the list as development data (set 5 did so for ``rule@6``, set 6 for ``rule@7``, set 7 for
``rule@8``, set 8 for ``rule@9``, set 9 for ``rule@11``, set 10 for ``rule@12``, set 11 for
``rule@13``, sets 12 and 13 for ``rule@14``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mmrag.judging import RuleJudge  # noqa: E402
from mmrag.judging import combiner as cb  # noqa: E402
from mmrag.judging.open_answer import OpenAnswerConfig  # noqa: E402
from mmrag.judging.records import record_to_item  # noqa: E402
from mmrag.metrics.stats import cohen_kappa  # noqa: E402

DATA = ROOT / "tests" / "data"
FILES = ("hand_labelled", "judge_tuning", "judge_tuning2", "judge_heldout", "judge_heldout2", "judge_tuning3",
         "judge_heldout3", "judge_heldout4", "judge_tuning4", "judge_heldout5", "judge_tuning5", "judge_heldout6",
         "judge_tuning6", "judge_tuning7", "judge_heldout7", "judge_heldout8",
         "judge_heldout9", "judge_heldout10", "judge_heldout11", "judge_tuning8", "judge_heldout12",
         "judge_heldout13")


def load(names):
    """Rows, items, rule verdicts (combiner off) and combiner features of every named file."""
    judge = RuleJudge(OpenAnswerConfig(combiner=False))
    bank = judge.open.rules.semantic.bank
    rows, items, files = [], [], []
    for name in names:
        path = DATA / f"{name}.jsonl"
        if not path.exists():
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                rec = json.loads(line)
                rows.append(rec)
                items.append(record_to_item(rec, path, i))
                files.append(name)
    verdicts = judge.judge_many(items)
    views = [cb.view_of(*it) for it in items]
    bank.prime([t for v in views if v.reply.strip() for t in cb.embed_texts(v)])
    x = np.stack([cb.features(v, vd, bank) if v.reply.strip() else np.zeros(len(cb.FEATURES))
                  for v, vd in zip(views, verdicts)])
    return rows, verdicts, x, files


def eligible(verdicts, rows, scope: str) -> np.ndarray:
    ok = [cb.needs_combiner(v) if scope == "undecided" else
          (not v.details.get("error") and bool((r.get("response") or "").strip())) for v, r in zip(verdicts, rows)]
    return np.array(ok)


def apply(weights: dict, x: np.ndarray, rule: list[str], mask: np.ndarray, conf: float,
          conf_correct: float) -> list[str]:
    model = cb.Combiner(weights={**weights, "min_confidence": conf, "min_confidence_correct": conf_correct})
    out = list(rule)
    if mask.any():
        p = model.proba(x[mask])
        for j, i in enumerate(np.flatnonzero(mask)):
            k = model.pick(p[j])   # the judge's own decision rule, thresholds included
            if k is not None:
                out[i] = cb.CLASSES[k]
    return out


def lofo(rows, verdicts, x, files, scope: str, c: float, conf: float, conf_correct: float,
         model: str = "boosted_trees") -> dict:
    labels = [r["label"] for r in rows]
    rule = [v.outcome for v in verdicts]
    mask = eligible(verdicts, rows, scope)
    trainable = mask & np.array([lab in cb.CLASSES for lab in labels])
    pred = list(rule)
    for name in dict.fromkeys(files):
        here = np.array([f == name for f in files])
        w = cb.FITTERS[model](x[trainable & ~here], [labels[i] for i in np.flatnonzero(trainable & ~here)], c)
        got = apply(w, x, rule, mask & here, conf, conf_correct)
        for i in np.flatnonzero(here):
            pred[i] = got[i]
    return {"pred": pred, "rule": rule, "labels": labels}


def report(rows, files, res) -> None:
    labels, rule, pred = res["labels"], res["rule"], res["pred"]

    def k(idx, which):
        return cohen_kappa([labels[i] for i in idx], [which[i] for i in idx])

    print(f"{'slice':16} {'n':>5} {'rules':>7} {'lofo':>7}")
    for name in dict.fromkeys(files):
        idx = [i for i, f in enumerate(files) if f == name]
        print(f"{name:16} {len(idx):5d} {k(idx, rule):7.3f} {k(idx, pred):7.3f}")
    by_src = defaultdict(list)
    for i, r in enumerate(rows):
        by_src[r.get("source") or "(none)"].append(i)
    for src, idx in sorted(by_src.items()):
        print(f"  {src:14} {len(idx):5d} {k(idx, rule):7.3f} {k(idx, pred):7.3f}")
    allidx = list(range(len(rows)))
    print(f"{'all':16} {len(allidx):5d} {k(allidx, rule):7.3f} {k(allidx, pred):7.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lofo", action="store_true", help="leave-one-file-out report")
    ap.add_argument("--write", action="store_true", help="fit on every file and write the weights")
    ap.add_argument("--scope", choices=("undecided", "all"), default="undecided")
    ap.add_argument("--model", choices=tuple(cb.FITTERS), default="boosted_trees",
                    help="combiner model kind (boosted trees: best leave-one-file-out kappa, docs/judging.md)")
    ap.add_argument("--C", type=float, default=0.3, help="inverse L2 strength of the logistic regression")
    ap.add_argument("--confidence", type=float, default=0.45, help="least probability to replace a rule verdict")
    ap.add_argument("--confidence-correct", type=float, default=0.55, help="... with 'correct'")
    ap.add_argument("--files", nargs="*", default=list(FILES))
    args = ap.parse_args()
    rows, verdicts, x, files = load(args.files)
    if args.lofo:
        report(rows, files, lofo(rows, verdicts, x, files, args.scope, args.C, args.confidence,
                                 args.confidence_correct, args.model))
    if args.write:
        labels = [r["label"] for r in rows]
        mask = eligible(verdicts, rows, "undecided") & np.array([lab in cb.CLASSES for lab in labels])
        w = cb.FITTERS[args.model](x[mask], [labels[i] for i in np.flatnonzero(mask)], args.C)
        w.update(min_confidence=args.confidence, min_confidence_correct=args.confidence_correct, version="1", trained_on=sorted(set(files)), n=int(mask.sum()))
        cb.WEIGHTS_PATH.write_text(json.dumps(w, separators=(",", ":")) + "\n", encoding="utf-8")
        print(f"wrote {cb.WEIGHTS_PATH} ({int(mask.sum())} undecided verdicts)")


if __name__ == "__main__":
    main()
