"""VLM-DeflectionBench metrics: Accuracy, Deflection and Hallucination rates, CRAG truthfulness.

Choices we made, all documented in docs/metrics.md:

* the three rates are over the *decided* responses (correct + deflection + hallucination), so they
  sum to 100; ``unparseable`` responses are shown apart, as a count and as a share of all
  responses — never folded into a class;
* the truthfulness score of Meta's CRAG / CRAG-MM (correct +1, deflection 0, hallucination -1,
  averaged, here in percent, so it equals accuracy minus hallucination rate) is over the same
  decided responses;
* every rate carries a percentile bootstrap interval clustered by ``sample.question_id``
  (``level``, ``n_boot`` and ``seed`` configurable); groups (``by``) get their own rates and
  intervals.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from mmrag.metrics.base import METRICS, GroupKey, Scored, clusters_of, group, outcome_counts
from mmrag.metrics.stats import rate

_TRUTH = {"correct": 1.0, "deflection": 0.0, "hallucination": -1.0}


def deflection_rates(items: Sequence[Scored], *, level: float = 0.95, n_boot: int = 1000,
                     seed: int = 0) -> dict[str, Any]:
    """Rates (percent, with CIs) of one set of items."""
    counts = outcome_counts(items)
    decided = [it for it in items if it.verdict.outcome != "unparseable"]
    outcomes = np.array([it.verdict.outcome for it in decided], dtype=object)
    clusters = clusters_of(decided)
    kw = {"level": level, "n_boot": n_boot, "seed": seed}
    out: dict[str, Any] = {
        "n": len(items),
        "n_decided": len(decided),
        "counts": counts,
        "accuracy": rate(outcomes == "correct", clusters, **kw),
        "deflection": rate(outcomes == "deflection", clusters, **kw),
        "hallucination": rate(outcomes == "hallucination", clusters, **kw),
        "truthfulness": rate(np.array([_TRUTH[o] for o in outcomes]), clusters, **kw),
        "unparseable": {"count": counts["unparseable"],
                        "rate": 100.0 * counts["unparseable"] / len(items) if items else None},
    }
    return out


def deflection_metrics(items: Sequence[Scored], by: Sequence[GroupKey] = ("scenario", "source"), *,
                       level: float = 0.95, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Overall rates plus rates per group for each key in ``by`` (see :mod:`mmrag.metrics.base`
    for keys; a tuple key crosses several, e.g. ``("scenario", "source")`` inside ``by``)."""
    kw = {"level": level, "n_boot": n_boot, "seed": seed}
    result: dict[str, Any] = {"overall": deflection_rates(items, **kw), "by": {},
                              "ci": {"level": level, "n_boot": n_boot, "seed": seed, "cluster": "question_id"}}
    for key in by:
        name, groups = group(items, key)
        result["by"][name] = {g: deflection_rates(members, **kw) for g, members in groups.items()}
    return result


METRICS.register("deflection", deflection_metrics)
