"""Statistics for every number mmrag reports: clustered bootstrap, paired tests, agreement.

* :func:`bootstrap_ci` — percentile interval of a mean, resampling *clusters* (question ids) with
  replacement, because samples that share a question are not independent (VLM-DeflectionBench has
  ~2.2 samples per question; HumbleBench's stress settings derive several prompts from one record).
* :func:`paired_bootstrap` — difference of two systems' means on the same samples, resampling the
  same clusters for both, with a two-sided bootstrap p-value.
* :func:`mcnemar` — McNemar's test on paired correctness; exact binomial when the discordant count
  is small (< 25 by default), else chi-square with continuity correction.
* :func:`cohen_kappa` — chance-corrected agreement between two labelings.

Everything is seeded and vectorised with numpy; nothing needs scipy.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any, NamedTuple

import numpy as np

_CHUNK = 256  # bootstrap replicates drawn per block, bounding memory to _CHUNK x n_clusters


def _cluster_sums(values: np.ndarray, clusters: np.ndarray | None, weights: np.ndarray | None = None):
    """Per-cluster sums of ``values`` (and of ``weights``, default 1 per item)."""
    if clusters is None:
        codes = np.arange(len(values))
        n = len(values)
    else:
        _, codes = np.unique(np.asarray(clusters, dtype=object).astype(str), return_inverse=True)
        n = int(codes.max()) + 1 if len(codes) else 0
    w = np.ones(len(values)) if weights is None else np.asarray(weights, dtype=float)
    return np.bincount(codes, weights=values * w, minlength=n), np.bincount(codes, weights=w, minlength=n)


def _boot_means(
    sums: np.ndarray,
    counts: np.ndarray,
    n_boot: int,
    rng: np.random.Generator,
    extra: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Bootstrap replicates of sum/count (minus the same for ``extra`` when given, paired)."""
    n = len(sums)
    out = np.empty(n_boot)
    for start in range(0, n_boot, _CHUNK):
        stop = min(n_boot, start + _CHUNK)
        idx = rng.integers(0, n, size=(stop - start, n))
        with np.errstate(invalid="ignore", divide="ignore"):
            means = sums[idx].sum(1) / counts[idx].sum(1)
            if extra is not None:
                means = means - extra[0][idx].sum(1) / extra[1][idx].sum(1)
        out[start:stop] = means
    return out


def bootstrap_ci(
    values: np.ndarray, clusters: np.ndarray | None = None, level: float = 0.95, n_boot: int = 1000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``mean(values)``, resampling clusters with replacement.

    ``values`` are per-item numbers (0/1 for rates, scores otherwise); ``clusters`` the cluster id
    of each item (``None``: every item is its own cluster).  Returns ``(nan, nan)`` for no items.
    """
    values = np.asarray(values, dtype=float)
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if clusters is not None and len(clusters) != len(values):
        raise ValueError("values and clusters must have the same length")
    if len(values) == 0:
        return (float("nan"), float("nan"))
    sums, counts = _cluster_sums(values, clusters)
    reps = _boot_means(sums, counts, n_boot, np.random.default_rng(seed))
    alpha = (1 - level) / 2
    lo, hi = np.nanquantile(reps, [alpha, 1 - alpha])
    return (float(lo), float(hi))


def hps_ci(
    scores: np.ndarray,
    positive: np.ndarray,
    clusters: np.ndarray | None = None,
    level: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile interval of KnowHal's HPS = (1 - Acc_neg / Acc_pos) x 100, a ratio of two rates.

    Clusters (KnowHal pairs: a positive and its false-premise twin) are resampled jointly, so each
    replicate recomputes both accuracies on the same resampled pairs; replicates whose positive
    accuracy is 0 are undefined and dropped.  ``(nan, nan)`` when either polarity is missing.
    """
    scores = np.asarray(scores, dtype=float)
    pos = np.asarray(positive, dtype=bool)
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if len(scores) != len(pos) or (clusters is not None and len(clusters) != len(scores)):
        raise ValueError("scores, positive and clusters must have the same length")
    if not pos.any() or pos.all():
        return (float("nan"), float("nan"))
    ps, pc = _cluster_sums(scores, clusters, pos.astype(float))
    ns, nc = _cluster_sums(scores, clusters, (~pos).astype(float))
    rng = np.random.default_rng(seed)
    reps = np.empty(n_boot)
    for start in range(0, n_boot, _CHUNK):
        stop = min(n_boot, start + _CHUNK)
        idx = rng.integers(0, len(ps), size=(stop - start, len(ps)))
        with np.errstate(invalid="ignore", divide="ignore"):
            acc_pos = ps[idx].sum(1) / pc[idx].sum(1)
            acc_neg = ns[idx].sum(1) / nc[idx].sum(1)
            reps[start:stop] = np.where(acc_pos > 0, 100.0 * (1.0 - acc_neg / acc_pos), np.nan)
    if np.isnan(reps).all():
        return (float("nan"), float("nan"))
    alpha = (1 - level) / 2
    lo, hi = np.nanquantile(reps, [alpha, 1 - alpha])
    return (float(lo), float(hi))


class PairedResult(NamedTuple):
    diff: float  # mean(a) - mean(b)
    ci: tuple[float, float]
    p_value: float  # two-sided, from the bootstrap distribution of the difference


def paired_bootstrap(
    a: np.ndarray,
    b: np.ndarray,
    clusters: np.ndarray | None = None,
    level: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> PairedResult:
    """Difference of means of two systems scored on the same items (``a[i]`` and ``b[i]`` are the
    same sample), resampling clusters jointly so the pairing is kept."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError("paired_bootstrap needs a and b of the same length (the same samples)")
    if len(a) == 0:
        return PairedResult(float("nan"), (float("nan"), float("nan")), float("nan"))
    sa, ca = _cluster_sums(a, clusters)
    sb, cb = _cluster_sums(b, clusters)
    reps = _boot_means(sa, ca, n_boot, np.random.default_rng(seed), extra=(sb, cb))
    alpha = (1 - level) / 2
    lo, hi = np.nanquantile(reps, [alpha, 1 - alpha])
    diff = float(a.mean() - b.mean())
    # two-sided: how often the resampled difference falls on the other side of zero
    p = 2 * min(np.mean(reps <= 0), np.mean(reps >= 0))
    return PairedResult(diff, (float(lo), float(hi)), float(min(1.0, p)))


def mcnemar(a_correct: Sequence[bool], b_correct: Sequence[bool], exact_below: int = 25) -> tuple[float, float]:
    """McNemar's test of paired correctness: ``(statistic, p_value)``.

    With ``n`` discordant pairs (``n01`` a right and b wrong, ``n10`` the reverse): when ``n`` is
    below ``exact_below`` the exact two-sided binomial test (statistic = ``min(n01, n10)``),
    otherwise chi-square with continuity correction, ``(|n01 - n10| - 1)^2 / n``, 1 d.o.f.
    No discordant pairs gives ``(0.0, 1.0)``.
    """
    a = np.asarray(a_correct, dtype=bool)
    b = np.asarray(b_correct, dtype=bool)
    if a.shape != b.shape:
        raise ValueError("mcnemar needs two equally long sequences over the same samples")
    n01 = int(np.sum(a & ~b))
    n10 = int(np.sum(~a & b))
    n = n01 + n10
    if n == 0:
        return (0.0, 1.0)
    if n < exact_below:
        k = min(n01, n10)
        tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
        return (float(k), float(min(1.0, 2 * tail)))
    stat = (abs(n01 - n10) - 1) ** 2 / n
    return (float(stat), float(math.erfc(math.sqrt(stat / 2))))


def cohen_kappa(labels_a: Sequence[Hashable], labels_b: Sequence[Hashable]) -> float:
    """Cohen's kappa: (observed agreement - chance agreement) / (1 - chance agreement).

    When chance agreement is 1 (both raters used one and the same label throughout) kappa is
    undefined; we return 1.0 if they agree everywhere (they do), documented as our convention.
    """
    a = list(labels_a)
    b = list(labels_b)
    if len(a) != len(b):
        raise ValueError("cohen_kappa needs two labelings of the same items")
    if not a:
        return float("nan")
    cats = sorted(set(a) | set(b), key=str)
    index = {c: i for i, c in enumerate(cats)}
    m = np.zeros((len(cats), len(cats)))
    for x, y in zip(a, b):
        m[index[x], index[y]] += 1
    n = m.sum()
    po = np.trace(m) / n
    pe = float((m.sum(1) / n) @ (m.sum(0) / n))
    if pe >= 1.0:
        return 1.0
    return float((po - pe) / (1 - pe))


def confusion(labels_a: Sequence[Hashable], labels_b: Sequence[Hashable]) -> dict[str, dict[str, int]]:
    """Counts ``{a_label: {b_label: n}}`` — the table behind a kappa."""
    out: dict[str, dict[str, int]] = {}
    for x, y in zip(labels_a, labels_b):
        row = out.setdefault(str(x), {})
        row[str(y)] = row.get(str(y), 0) + 1
    return out


def rate(
    values: np.ndarray,
    clusters: np.ndarray | None,
    *,
    level: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    scale: float = 100.0,
) -> dict[str, Any]:
    """``{"value", "ci": [lo, hi], "n"}`` for the mean of ``values`` times ``scale`` (percent)."""
    values = np.asarray(values, dtype=float)
    if len(values) == 0:
        return {"value": None, "ci": [None, None], "n": 0}
    lo, hi = bootstrap_ci(values, clusters, level=level, n_boot=n_boot, seed=seed)
    return {"value": float(values.mean() * scale), "ci": [lo * scale, hi * scale], "n": int(len(values))}
