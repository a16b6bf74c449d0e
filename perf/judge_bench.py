"""Cost of the rule judge with and without its MiniLM deflection detector, side by side.

Judges the tuning replies (tests/data/hand_labelled.jsonl + judge_tuning.jsonl, 331 distinct
items; ``--repeats`` copies them, and the copies are then served by the per-process embedding memo,
as repeated replies are in a real run) with ``RuleJudge`` twice in one process: rules only
(``OpenAnswerConfig(semantic=False)``, the peer: what the judge cost before issue 12) and the full
judge (sentence embeddings batched per ``judge_many``).  Prints items/s of each and the
ratio; the encoder load is timed apart.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from mmrag.judging import RuleJudge
from mmrag.judging.open_answer import OpenAnswerConfig
from mmrag.judging.records import record_to_item

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"


def items(repeats: int):
    out = []
    for name in ("hand_labelled.jsonl", "judge_tuning.jsonl", "judge_tuning2.jsonl"):
        path = DATA / name
        out += [record_to_item(json.loads(x), path, i) for i, x in enumerate(path.read_text().splitlines(), 1)]
    return out * repeats


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    batch = items(args.repeats)
    rules_only = RuleJudge(OpenAnswerConfig(semantic=False))
    t0 = time.perf_counter()
    rules_only.judge_many(batch)
    t_rules = time.perf_counter() - t0
    full = RuleJudge()
    t0 = time.perf_counter()
    bank = full.open.rules.semantic.bank  # load MiniLM and the classifier outside the timing: the
    bank.prototypes()                     # rules now settle batch[0] without them, so judging it
    bank.encoder.encode_text(["warm-up"])  # no longer loads them (the memo is not touched here)
    full.judge_many([batch[0]])
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    full.judge_many(batch)
    t_full = time.perf_counter() - t0
    print(f"items: {len(batch)}")
    print(f"rules only (peer):     {t_rules:7.2f} s  {len(batch) / t_rules:8.0f} items/s")
    print(f"rules + MiniLM:        {t_full:7.2f} s  {len(batch) / t_full:8.0f} items/s   (encoder load {t_load:.1f} s)")
    print(f"ratio (full / rules):  {t_full / t_rules:.1f}x the time")


if __name__ == "__main__":
    main()
