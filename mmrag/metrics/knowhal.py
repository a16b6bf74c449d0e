"""KnowHal metrics: positive / negative accuracy per dimension, Overall and HPS.

From the paper: Overall = mean(positive accuracy, negative accuracy) and the Hallucination
Propensity Score HPS = (1 - Acc_neg / Acc_pos) x 100 (how much accuracy is lost when the question
carries a false premise).  Choices we made (docs/metrics.md):

* an item's accuracy is the verdict's ``score`` (VQA soft accuracy for open positives, 0/1 for
  Relation options and for negatives); an unparseable item counts 0 and is reported apart;
* per dimension E / A / R / K, then ``positive`` / ``negative`` averages are the *mean over the
  dimensions present* (macro, as per-dimension tables are averaged); the pooled (micro) values
  are given too, with bootstrap intervals clustered by ``pair_id``;
* HPS is ``None`` when positive accuracy is 0;
* when the judge recorded both a rule-based and an LLM call on negatives, their agreement (share
  and Cohen's kappa) is reported under ``judge_agreement``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mmrag.metrics.base import METRICS, Scored, outcome_counts
from mmrag.metrics.stats import cohen_kappa, confusion, rate
from mmrag.schema import Verdict

DIMENSIONS = ("E", "A", "R", "K")


def graded_accuracy(v: Verdict) -> float:
    """An item's graded accuracy: the verdict's ``score`` (e.g. VQA soft accuracy) when the judge
    gave one, else 1 for correct and 0 otherwise; unparseable counts 0 (never skipped)."""
    if v.outcome == "unparseable":
        return 0.0
    if v.score is not None:
        return float(v.score)
    return 1.0 if v.outcome == "correct" else 0.0


def _acc(it: Scored) -> float:
    return graded_accuracy(it.verdict)


def _summary(pos: float | None, neg: float | None) -> dict[str, float | None]:
    overall = (pos + neg) / 2 if pos is not None and neg is not None else None
    hps = (1 - neg / pos) * 100 if pos and neg is not None else None
    return {"positive": pos, "negative": neg, "overall": overall, "hps": hps}


def _mean_pct(values: list[float]) -> float | None:
    return 100.0 * float(np.mean(values)) if values else None


def knowhal_metrics(
    items: Sequence[Scored], *, level: float = 0.95, n_boot: int = 1000, seed: int = 0
) -> dict[str, Any]:
    per_dim: dict[str, dict[str, Any]] = {}
    for dim in DIMENSIONS:
        pos = [
            _acc(it)
            for it in items
            if it.sample.metadata.get("dimension") == dim and it.sample.metadata.get("polarity") == "positive"
        ]
        neg = [
            _acc(it)
            for it in items
            if it.sample.metadata.get("dimension") == dim and it.sample.metadata.get("polarity") == "negative"
        ]
        if pos or neg:
            per_dim[dim] = {**_summary(_mean_pct(pos), _mean_pct(neg)), "n_positive": len(pos), "n_negative": len(neg)}
    pos_avg = [d["positive"] for d in per_dim.values() if d["positive"] is not None]
    neg_avg = [d["negative"] for d in per_dim.values() if d["negative"] is not None]
    macro = _summary(float(np.mean(pos_avg)) if pos_avg else None, float(np.mean(neg_avg)) if neg_avg else None)
    kw: dict[str, Any] = {"level": level, "n_boot": n_boot, "seed": seed}
    micro: dict[str, Any] = {}
    for pol in ("positive", "negative"):
        sel = [it for it in items if it.sample.metadata.get("polarity") == pol]
        clusters = np.array(
            [str(it.sample.metadata.get("pair_id") or it.sample.question_id) for it in sel], dtype=object
        )
        micro[pol] = rate(np.array([_acc(it) for it in sel]), clusters, **kw)
    micro.update(
        {
            k: v
            for k, v in _summary(micro["positive"]["value"], micro["negative"]["value"]).items()
            if k in ("overall", "hps")
        }
    )
    result: dict[str, Any] = {"per_dimension": per_dim, **macro, "micro": micro, "outcomes": outcome_counts(items)}
    pairs = [
        (it.verdict.details["rule_outcome"], it.verdict.details["llm_outcome"])
        for it in items
        if "rule_outcome" in it.verdict.details and "llm_outcome" in it.verdict.details
    ]
    if pairs:
        rule, llm = zip(*pairs)
        result["judge_agreement"] = {
            "n": len(pairs),
            "agreement": 100.0 * float(np.mean([a == b for a, b in pairs])),
            "kappa": cohen_kappa(rule, llm),
            "confusion_rule_vs_llm": confusion(rule, llm),
        }
    return result


METRICS.register("knowhal", knowhal_metrics)
