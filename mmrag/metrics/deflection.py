"""VLM-DeflectionBench metrics: the outcome rates (correct = the paper's Accuracy, deflection,
hallucination, unparseable) and CRAG truthfulness.

Choices we made, all documented in docs/metrics.md:

* every rate is over **all responses** (:mod:`mmrag.metrics.rates`, the one definition), so the
  four rates sum to 100 and an unparseable reply is counted as its own rate, never folded into a
  class nor dropped from the denominator;
* the truthfulness score of Meta's CRAG / CRAG-MM (correct +1, deflection 0, hallucination -1,
  unparseable 0, averaged, here in percent, so it equals the correct rate minus the hallucination
  rate) is over the same responses;
* every rate carries a percentile bootstrap interval clustered by ``sample.question_id``
  (``level``, ``n_boot`` and ``seed`` configurable); groups (``by``) get their own rates and
  intervals.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mmrag.metrics.base import METRICS, GroupKey, Scored, clusters_of, group, outcome_counts
from mmrag.metrics.rates import DENOMINATOR, rates_with_ci


def deflection_rates(
    items: Sequence[Scored], *, level: float = 0.95, n_boot: int = 1000, seed: int = 0
) -> dict[str, Any]:
    """Rates (percent, with CIs) of one set of items."""
    outcomes = [it.verdict.outcome for it in items]
    return {
        "n": len(items),
        "denominator": DENOMINATOR,
        "counts": outcome_counts(items),
        **rates_with_ci(outcomes, clusters_of(items), level=level, n_boot=n_boot, seed=seed),
    }


def deflection_metrics(
    items: Sequence[Scored],
    by: Sequence[GroupKey] = ("scenario", "source"),
    *,
    level: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Overall rates plus rates per group for each key in ``by`` (see :mod:`mmrag.metrics.base`
    for keys; a tuple key crosses several, e.g. ``("scenario", "source")`` inside ``by``)."""
    kw: dict[str, Any] = {"level": level, "n_boot": n_boot, "seed": seed}
    result: dict[str, Any] = {
        "overall": deflection_rates(items, **kw),
        "by": {},
        "ci": {"level": level, "n_boot": n_boot, "seed": seed, "cluster": "question_id"},
    }
    for key in by:
        name, groups = group(items, key)
        result["by"][name] = {g: deflection_rates(members, **kw) for g, members in groups.items()}
    return result


METRICS.register("deflection", deflection_metrics)
