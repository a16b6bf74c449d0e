"""The outcome rates, defined once: name, header, denominator.

Every surface that prints a rate — the console table, ``summary.json`` / ``summary.md``, the
report tables and figures, the run DataFrame's columns — takes it from here, so the same run can
never show two accuracies.  (It once did: 25.0 in one place and 31.2 in another when 4 of 16
replies were unparseable, because one surface left unparseable replies out of the denominator.)

* **Denominator: all responses**, as the papers count (VLM-DeflectionBench's Accuracy /
  Deflection / Hallucination rates are shares of all evaluated samples; HumbleBench's official
  accuracy divides by every record).  An unparseable reply therefore lowers every other rate and is
  shown as its own rate; the four rates sum to 100.
* **One name per rate**: the outcome it counts (``correct``, ``deflection``, ``hallucination``,
  ``unparseable``) — the key in summary.json and metric dicts, the frame's 0/1 column whose mean it
  is, the report tables' column.  ``correct`` is what VLM-DeflectionBench calls Accuracy; the
  official HumbleBench keys (``Overall_accuracy`` …) appear only in its official output.
* Headers say the denominator: ``correct % all`` (see :func:`header`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mmrag.schema import OUTCOMES


@dataclass(frozen=True)
class Rate:
    """One outcome rate: ``id`` is the outcome counted (and the rate's only name)."""

    id: str
    description: str

    @property
    def header(self) -> str:
        return header(self.id)


#: What every rate is a share of (named in every header and in docs/metrics.md).
DENOMINATOR = "all responses"
DENOMINATOR_SHORT = "% all"

RATES: tuple[Rate, ...] = (
    Rate("correct", "the answer matches the gold answer (the paper's Accuracy)"),
    Rate("deflection", "the model declined to answer"),
    Rate("hallucination", "the model answered, wrongly"),
    Rate("unparseable", "the judge could not decide (counted, never folded into another class)"),
)
if tuple(r.id for r in RATES) != OUTCOMES:  # pragma: no cover - one rate per outcome, in the same order
    raise RuntimeError("mmrag.metrics.rates.RATES must list every outcome of mmrag.schema.OUTCOMES, in order")

#: CRAG / CRAG-MM truthfulness weights (correct +1, deflection 0, hallucination -1); an unparseable
#: reply is a missing answer and weighs 0, like a deflection (documented in docs/metrics.md).
TRUTHFULNESS_WEIGHTS = {"correct": 1.0, "deflection": 0.0, "hallucination": -1.0, "unparseable": 0.0}


def header(rate_id: str) -> str:
    """The column header of a rate everywhere it is printed: ``correct % all``."""
    return f"{rate_id} {DENOMINATOR_SHORT}"


def outcome_rates(outcomes: Iterable[str]) -> dict[str, float | None]:
    """``{outcome: percent of all responses}`` for every outcome (None when there are none)."""
    arr = np.asarray(list(outcomes), dtype=object)
    n = len(arr)
    return {r.id: (100.0 * float((arr == r.id).sum()) / n if n else None) for r in RATES}


def outcome_indicators(outcomes: Sequence[str]) -> dict[str, np.ndarray]:
    """The 0/1 vector of each rate (its mean times 100 is the rate)."""
    arr = np.asarray(list(outcomes), dtype=object)
    return {r.id: (arr == r.id).astype(float) for r in RATES}


def truthfulness_scores(outcomes: Sequence[str]) -> np.ndarray:
    return np.array([TRUTHFULNESS_WEIGHTS[o] for o in outcomes], dtype=float)


def rates_with_ci(outcomes: Sequence[str], clusters: np.ndarray, **ci: Any) -> dict[str, Any]:
    """Every rate with its clustered bootstrap interval (``mmrag.metrics.stats.rate``), plus the
    CRAG truthfulness score, all over all responses."""
    from mmrag.metrics.stats import rate

    out: dict[str, Any] = {rid: rate(v, clusters, **ci) for rid, v in outcome_indicators(outcomes).items()}
    out["truthfulness"] = rate(truthfulness_scores(outcomes), clusters, **ci)
    return out
