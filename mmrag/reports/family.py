"""Benchmark-family tables: HumbleBench's stress panel and KnowHal's dimension x polarity view.

They follow the definitions of :mod:`mmrag.metrics` (so a report and ``summary.json`` agree) but
work on the pandas frame, per model and setting, with question-clustered intervals.

HumbleBench (per model and stress setting), every value a percent with its CI:

* ``correct`` -- the share judged correct (the rate of :mod:`mmrag.metrics.rates`, one name everywhere);
* ``official_accuracy`` -- the official rule's ``Overall_accuracy`` against the prompt's label; on
  the noise-image setting (labels unchanged) it is the paper's "accuracy under noise" (27.58 % on
  average in the paper; the mean of the official logs' noise ``Overall_accuracy`` is 27.7);
* ``nota_share`` -- the share of responses that chose the prompt's NOTA option, found by its text
  after shuffling (the official ``E_proportion``; the official plotting script draws it on the
  noise-image setting as "accuracy on HumbleBench-GN");
* ``nota_hit_rate`` / ``non_nota_accuracy`` -- as :func:`mmrag.metrics.nota_measures` defines them:
  the official rule's accuracy on NOTA-gold items and on the other items (so ``official_accuracy``
  is their weighted mean);
* ``nota_hit_rate_robust`` / ``non_nota_accuracy_robust`` / ``false_nota_rate`` -- the robust
  reading: NOTA chosen (by the judge's extracted choice) on NOTA-gold items, judged correct on the
  other items, NOTA chosen on the other items;
* ``unparseable`` -- responses the judge could not read.

KnowHal (per model and dimension): accuracy on positive and on negative (false-premise) questions,
``overall = (acc_pos + acc_neg) / 2`` and ``HPS = (1 - acc_neg / acc_pos) * 100`` as the paper
defines them.  An item's accuracy is its graded ``score`` (VQA soft accuracy where the judge gives
one).  Intervals are clustered by the pair (``metadata.pair_id``, else the question).  Two summary
rows per model: ``macro`` averages the dimensions (the paper's and ``summary.json``'s headline,
no interval), ``pooled`` takes every item at once (with intervals).  HPS is a ratio of two rates;
it is reported as a point value, and is empty when positive accuracy is 0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mmrag.benchmarks.family import HUMBLEBENCH, KNOWHAL
from mmrag.metrics import hps_ci
from mmrag.reports.tables import CIOptions, order_key, rate_ci


def humblebench_panel(df: pd.DataFrame, opts: CIOptions = CIOptions()) -> pd.DataFrame:
    """One row per (benchmark, model, stress) of the HumbleBench rows of ``df``."""
    from mmrag.judging.mcq_official import official_is_correct

    hb = df[df["benchmark_kind"] == HUMBLEBENCH.id]
    if not hb.empty:
        hb = hb.assign(
            official_correct=[official_is_correct(r or "", lb or "") for r, lb in zip(hb["response"], hb["label"])]
        )
    rows = []
    for (bench, model, stress), g in hb.groupby(["benchmark", "model", "stress"], sort=True):
        gold, other = g[g["label_is_nota"]], g[~g["label_is_nota"]]
        row: dict[str, object] = {
            "benchmark": bench,
            "model": model,
            "stress": stress,
            "n": len(g),
            "n_nota_gold": len(gold),
        }
        cells = {
            "correct": (g, "correct"),
            "official_accuracy": (g, "official_correct"),
            "nota_share": (g, "chose_nota"),
            "nota_hit_rate": (gold, "official_correct"),
            "non_nota_accuracy": (other, "official_correct"),
            "nota_hit_rate_robust": (gold, "chose_nota"),
            "non_nota_accuracy_robust": (other, "correct"),
            "false_nota_rate": (other, "chose_nota"),
            "unparseable": (g, "unparseable"),
        }
        for name, (sub, col) in cells.items():
            row[name], row[f"{name}_lo"], row[f"{name}_hi"] = rate_ci(
                sub[col].to_numpy(), sub["question_id"].to_numpy(), opts
            )
        rows.append(row)
    out = pd.DataFrame(rows)
    if not out.empty:
        out = out.sort_values(["benchmark", "model", "stress"], key=order_key, kind="stable", ignore_index=True)
    return out


def _hps(acc_pos: float, acc_neg: float) -> float:
    if pd.isna(acc_pos) or pd.isna(acc_neg) or acc_pos <= 0:
        return float("nan")
    return 100.0 * (1.0 - acc_neg / acc_pos)


def _pol_cells(g: pd.DataFrame, opts: CIOptions) -> dict[str, object]:
    row: dict[str, object] = {}
    row["hps_lo"], row["hps_hi"] = hps_ci(
        g["score"].to_numpy(),
        (g["polarity"] == "positive").to_numpy(),
        g["_cluster"].to_numpy(),
        level=opts.level,
        n_boot=opts.n_boot,
        seed=opts.seed,
    )
    for name, pol in (("acc_pos", "positive"), ("acc_neg", "negative")):
        sub = g[g["polarity"] == pol]
        row[f"n_{pol[:3]}"] = len(sub)
        row[name], row[f"{name}_lo"], row[f"{name}_hi"] = rate_ci(
            sub["score"].to_numpy(), sub["_cluster"].to_numpy(), opts
        )
    return row


def knowhal_table(df: pd.DataFrame, opts: CIOptions = CIOptions()) -> pd.DataFrame:
    """One row per (benchmark, model, dimension), then ``macro`` and ``pooled`` rows per model."""
    kh = df[(df["benchmark_kind"] == KNOWHAL.id) & df["polarity"].isin(["positive", "negative"])]
    if kh.empty:
        return pd.DataFrame()
    kh = kh.assign(_cluster=kh["pair_id"].where(kh["pair_id"].notna(), kh["question_id"]).astype(str))
    rows = []
    for (bench, model), gm in kh.groupby(["benchmark", "model"], sort=True):
        dims = []
        for dim, g in gm.groupby("dimension", sort=True):
            row = {"benchmark": bench, "model": model, "dimension": str(dim), **_pol_cells(g, opts)}
            dims.append(row)
        macro: dict[str, object] = {
            "benchmark": bench,
            "model": model,
            "dimension": "macro",
            "n_pos": sum(int(r["n_pos"]) for r in dims),
            "n_neg": sum(int(r["n_neg"]) for r in dims),
        }
        for name in ("acc_pos", "acc_neg"):
            vals = [float(r[name]) for r in dims if not pd.isna(r[name])]
            macro[name] = float(np.mean(vals)) if vals else float("nan")
            macro[f"{name}_lo"] = macro[f"{name}_hi"] = float("nan")
        macro["hps_lo"] = macro["hps_hi"] = float("nan")
        pooled = {"benchmark": bench, "model": model, "dimension": "pooled", **_pol_cells(gm, opts)}
        for row in (*dims, macro, pooled):
            row["overall"] = (float(row["acc_pos"]) + float(row["acc_neg"])) / 2.0
            row["hps"] = _hps(float(row["acc_pos"]), float(row["acc_neg"]))
            rows.append(row)
    return pd.DataFrame(rows)
