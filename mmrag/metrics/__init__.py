"""mmrag.metrics: from verdicts to numbers, each rate with a clustered bootstrap interval.

``METRICS.get(name)(items)`` returns the metrics a benchmark family names (``BenchmarkFamily.metrics``:
``deflection`` | ``humblebench`` | ``knowhal`` or a plug-in's) for a list of :class:`Scored` items.
The outcome rates themselves are defined once, in :mod:`mmrag.metrics.rates`.
"""

from __future__ import annotations

from mmrag.metrics.base import GROUP_KEYS, METRICS, Scored, family_metric, group, outcome_counts
from mmrag.metrics.deflection import deflection_metrics, deflection_rates
from mmrag.metrics.humblebench import (
    humblebench_metrics,
    nota_measures,
    official_humblebench_metrics,
    score_humblebench_predictions,
)
from mmrag.metrics.knowhal import knowhal_metrics
from mmrag.metrics.stats import (
    PairedResult,
    bootstrap_ci,
    cohen_kappa,
    confusion,
    hps_ci,
    mcnemar,
    paired_bootstrap,
    rate,
)

__all__ = [
    "Scored",
    "METRICS",
    "family_metric",
    "GROUP_KEYS",
    "group",
    "outcome_counts",
    "deflection_metrics",
    "deflection_rates",
    "humblebench_metrics",
    "official_humblebench_metrics",
    "nota_measures",
    "score_humblebench_predictions",
    "knowhal_metrics",
    "bootstrap_ci",
    "paired_bootstrap",
    "PairedResult",
    "mcnemar",
    "cohen_kappa",
    "confusion",
    "rate",
    "hps_ci",
]
