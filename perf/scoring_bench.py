"""Scoring the full HumbleBench size: mmrag's official-metric scorer vs the official one.

22,831 records x 6 settings (common, noise image, NOTA-only, shuffled options, cautious prompt,
forced grounding), synthetic predictions drawn per setting from a model-like mix: bare letters,
"B.", "(C)", "The answer is D", option text, verbose reasoning with unique wording, empty replies.
Both scorers run in this process on the same records; the script checks that every number is
identical and prints the speed ratio.

    .venv/bin/python perf/scoring_bench.py [--quick] [--repeats N]

The official scorer is PyPI humblebench 1.0.2 (installed by scripts/install_peers.sh).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mmrag.metrics.humblebench import official_humblebench_metrics  # noqa: E402

N_FULL = 22_831
TYPES = ["Object"] * 7224 + ["Relation"] * 7528 + ["Attribute"] * 8079
LABEL_WEIGHTS = {"A": 17.53, "B": 20.16, "C": 27.07, "D": 20.67, "E": 14.57}
SETTINGS = [
    "common",
    "noise_image",
    "nota_only",
    "shuffle_nota_position",
    "cautious_prompt",
    "noise_image__forced_grounding_prompt",
]
OBJECTS = ["dog", "cat", "bench", "tree", "car", "person", "umbrella", "kite", "bus", "horse", "cup", "sofa"]


def _prediction(rng: random.Random, label: str, p_right: float, p_e: float) -> str:
    letter = label if rng.random() < p_right else ("E" if rng.random() < p_e else rng.choice("ABCD"))
    r = rng.random()
    if r < 0.55:
        return letter
    if r < 0.65:
        return f"{letter}."
    if r < 0.70:
        return f"({letter})"
    if r < 0.78:
        return f"The answer is {letter}"
    if r < 0.80:
        return ""
    if r < 0.83:
        return rng.choice(OBJECTS)
    # verbose reasoning, unique per record
    obj, other = rng.sample(OBJECTS, 2)
    return (
        f"<think>The image shows a {obj} near the {other} at position {rng.randint(0, 10**6)}; "
        f"option {rng.choice('ABCDE')} mentions the {obj}.</think> Answer: {letter}"
    )


def build(n: int, seed: int = 0) -> dict[str, tuple[list[str], list[str], list[str]]]:
    rng = random.Random(seed)
    types = (TYPES * (n // len(TYPES) + 1))[:n]
    rng.shuffle(types)
    letters, weights = zip(*LABEL_WEIGHTS.items())
    labels = rng.choices(letters, weights=weights, k=n)
    data = {}
    for s, setting in enumerate(SETTINGS):
        srng = random.Random(seed * 100 + s)
        labs = (
            ["E"] * n
            if setting == "nota_only"
            else ([srng.choice("ABCDE") for _ in labels] if setting == "shuffle_nota_position" else list(labels))
        )
        p_right, p_e = (0.2, 0.8) if setting.startswith("noise") else (0.7, 0.3 if "cautious" in setting else 0.15)
        preds = [_prediction(srng, lb, p_right, p_e) for lb in labs]
        data[setting] = (preds, labs, types)
    return data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3,000 records per setting instead of 22,831")
    ap.add_argument("--repeats", type=int, default=3, help="timed repeats; the best is reported")
    args = ap.parse_args()
    try:
        from HumbleBench.utils import metrics as official
    except ImportError as exc:
        sys.exit(f"official humblebench not importable ({exc}); run scripts/install_peers.sh first")
    n = 3000 if args.quick else N_FULL
    data = build(n)
    records = {k: [{"prediction": p, "label": lb, "type": t} for p, lb, t in zip(*v)] for k, v in data.items()}

    def run_official():
        return {k: official.compute_metrics(recs) for k, recs in records.items()}

    def run_ours():
        return {k: official_humblebench_metrics(*v) for k, v in data.items()}

    timings = {}
    results = {}
    for name, fn in (("official", run_official), ("mmrag", run_ours)):
        best = float("inf")
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            results[name] = fn()
            best = min(best, time.perf_counter() - t0)
        timings[name] = best
    same = results["official"] == results["mmrag"]
    total = n * len(SETTINGS)
    print(f"records: {n} x {len(SETTINGS)} settings = {total}")
    print(
        f"official humblebench 1.0.2 compute_metrics: {timings['official']:.3f} s "
        f"({total / timings['official']:,.0f} records/s)"
    )
    print(
        f"mmrag official_humblebench_metrics:        {timings['mmrag']:.3f} s "
        f"({total / timings['mmrag']:,.0f} records/s)"
    )
    print(f"identical numbers: {same}")
    print(f"speed-up: {timings['official'] / timings['mmrag']:.1f}x")
    if not same:
        sys.exit("MISMATCH between the official scorer and mmrag")


if __name__ == "__main__":
    main()
