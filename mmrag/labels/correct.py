"""Rates corrected for the judge's measured errors: the matrix method, with a two-part bootstrap.

The judge's confusion ``M[j, t] = P(judge says j | the reply truly is t)`` (4 judged outcomes x 3
true classes) is estimated from the labelled sample, each label weighted by ``N_h / m_h`` (run
replies over labelled replies of its stratum ``source|outcome``), which undoes the sampling by
outcome.  The observed shares ``p`` of a cell then satisfy ``p = M pi`` for the cell's true shares
``pi``; we solve that for ``pi`` by least squares under ``sum(pi) = 1`` (the multi-class form of
Rogan & Gladen's estimator: with two classes and no unparseable outcome it *is* their
``(p + Sp - 1) / (Se + Sp - 1)``).  Values outside [0, 1] are clipped and flagged.

The assumption, stated wherever a corrected rate is shown: the confusion is the same in every cell
it is applied to (all scenarios and models of a source, or of the run when pooled).  A source gets
its own confusion when it has at least ``min_labels`` labels, otherwise the pooled one.

Interval: percentile bootstrap over both sources of error at once.  Each replicate redraws the
labels within their strata (multinomial on each stratum's label counts) and so a confusion, and
redraws the cell's question clusters with replacement (within each source) and so ``p``.  A
30-label sample gives wide intervals, a 300-label one narrow ones.  A true class no label showed
(or no replicate redrew) keeps the judge's own column for it (the judge is taken at its word
where nothing says otherwise).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mmrag.labels.store import HUMAN_LABELS
from mmrag.schema import OUTCOMES

JUDGED: tuple[str, ...] = OUTCOMES  # columns of cluster counts 0..3, then 4 = failed request
FAILED = len(OUTCOMES)
POOLED = "pooled"
MIN_LABELS = 30
_CHUNK = 256
METHOD = (
    "misclassification correction by matrix inversion (Rogan & Gladen 1978, extended to 3 true x 4 judged "
    "classes by least squares under sum = 1), confusion estimated from the labels re-weighted to the run"
)
ASSUMPTION = (
    "the judge's confusion is taken to be the same in every cell it is applied to "
    "(all scenarios and models of a source, or of the whole run where pooled)"
)


def solve(M: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``argmin ||M pi - p||`` subject to ``sum(pi) = 1``, batched over leading axes.

    ``M``: (..., 4, 3); ``p``: (..., 4).  Solved through the KKT system with a pseudo-inverse, so a
    rank-deficient confusion gives the minimum-norm solution instead of an error."""
    k = M.shape[-1]
    lead = M.shape[:-2]
    A = np.zeros((*lead, k + 1, k + 1))
    A[..., :k, :k] = 2 * np.swapaxes(M, -1, -2) @ M
    A[..., :k, k] = 1.0
    A[..., k, :k] = 1.0
    rhs = np.concatenate([2 * np.einsum("...jt,...j->...t", M, p), np.ones((*lead, 1))], axis=-1)
    x = np.einsum("...ab,...b->...a", np.linalg.pinv(A), rhs)
    return x[..., :k]


def _normalise(W: np.ndarray) -> np.ndarray:
    """Weighted counts (..., 4, 3) -> P(j | t); an empty column becomes the judge's own class."""
    col = W.sum(axis=-2, keepdims=True)
    eye = np.zeros(W.shape[-2:])
    eye[np.arange(W.shape[-1]), np.arange(W.shape[-1])] = 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        M = np.where(col > 0, W / np.where(col > 0, col, 1.0), eye)
    return M


@dataclass
class Confusion:
    """Estimated confusions (one per group: ``pooled`` and each source with enough labels) and
    their bootstrap replicates."""

    groups: list[str]
    M: np.ndarray  # (G, 4, 3)
    M_boot: np.ndarray  # (B, G, 4, 3)
    n_labels: dict[str, int]
    weighted: np.ndarray  # (G, 4, 3) weighted counts (the run-level confusion table)
    counts: np.ndarray  # (G, 4, 3) raw label counts
    min_labels: int = MIN_LABELS
    meta: dict[str, Any] = field(default_factory=dict)

    def group_of(self, source: str) -> int:
        return self.groups.index(source) if source in self.groups else self.groups.index(POOLED)

    def basis(self, source: str) -> str:
        return "per source" if source in self.groups and source != POOLED else POOLED

    @classmethod
    def estimate(
        cls,
        sources: Sequence[str],
        judged: Sequence[str],
        truth: Sequence[str],
        stratum_sizes: dict[tuple[str, str], int],
        *,
        n_boot: int = 1000,
        seed: int = 0,
        min_labels: int = MIN_LABELS,
    ) -> Confusion:
        """From labelled pairs (source, judge outcome, true class) and the run's reply count of
        every stratum ``(source, outcome)``."""
        src = np.asarray(sources, dtype=object).astype(str)
        j = np.array([JUDGED.index(x) for x in judged], dtype=int)
        t = np.array([HUMAN_LABELS.index(x) for x in truth], dtype=int)
        strata = sorted({(s, int(a)) for s, a in zip(src, j)})
        H = len(strata)
        m = np.zeros(H, dtype=int)
        q = np.zeros((H, len(HUMAN_LABELS)))
        pos = {h: i for i, h in enumerate(strata)}
        for s, a, b in zip(src, j, t):
            i = pos[(s, int(a))]
            m[i] += 1
            q[i, b] += 1
        size = np.array([stratum_sizes.get((s, JUDGED[a]), 0) for s, a in strata], dtype=float)
        w = np.where(m > 0, size / np.maximum(m, 1), 0.0)
        per_source = {s: int((src == s).sum()) for s in sorted(set(src))}
        groups = [POOLED] + [s for s, k in per_source.items() if k >= min_labels]
        S = np.zeros((H, len(groups)))
        S[:, 0] = 1.0
        for i, (s, _) in enumerate(strata):
            if s in groups:
                S[i, groups.index(s)] = 1.0
        Jh = np.zeros((H, len(JUDGED)))
        Jh[np.arange(H), [a for _, a in strata]] = 1.0

        def table(cnt: np.ndarray) -> np.ndarray:  # (..., H, 3) -> (..., G, 4, 3)
            return np.einsum("...ht,hg,hj->...gjt", cnt * w[:, None], S, Jh)

        rng = np.random.default_rng(seed)
        pvals = np.where(m[:, None] > 0, q / np.maximum(m, 1)[:, None], 1.0 / q.shape[1])
        boot = np.empty((n_boot, len(groups), len(JUDGED), len(HUMAN_LABELS)))
        for start in range(0, n_boot, _CHUNK):
            stop = min(n_boot, start + _CHUNK)
            cnt = rng.multinomial(m, pvals, size=(stop - start, H)).astype(float)
            boot[start:stop] = _normalise(table(cnt))
        raw = np.einsum("ht,hg,hj->gjt", q, S, Jh)
        weighted = table(q)
        n_labels = {POOLED: int(len(src)), **{g: per_source[g] for g in groups[1:]}}
        return cls(
            groups=groups,
            M=_normalise(weighted),
            M_boot=boot,
            n_labels=n_labels,
            weighted=weighted,
            counts=raw,
            min_labels=min_labels,
            meta={"per_source_labels": per_source},
        )


def _part(M: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Corrected shares of all responses (3,) of one source's part of a cell, and which were clipped."""
    tot = counts.sum()
    nf = counts[:FAILED].sum()
    if nf == 0:
        return np.zeros(len(HUMAN_LABELS)), np.zeros(len(HUMAN_LABELS), dtype=bool)
    pi = solve(M, counts[:FAILED] / nf)
    clipped = (pi < -1e-9) | (pi > 1 + 1e-9)
    return np.clip(pi, 0.0, 1.0) * (nf / tot), clipped


def correct_cell(
    conf: Confusion, parts: Sequence[tuple[str, np.ndarray]], *, level: float = 0.95, seed: int = 0, salt: int = 0
) -> dict[str, Any]:
    """Corrected rates (percent of all responses) of one cell, with intervals.

    ``parts``: per source of the cell, ``(source, cluster_counts)`` where ``cluster_counts`` is
    (clusters, 5): per question, its replies judged correct / deflection / hallucination /
    unparseable and its failed requests.  The sources' shares of the cell are kept fixed; each
    replicate redraws the clusters within each source and pairs them with replicate ``b`` of the
    confusion."""
    n_boot = conf.M_boot.shape[0]
    total = float(sum(c.sum() for _, c in parts))
    point = np.zeros(len(HUMAN_LABELS))
    reps = np.zeros((n_boot, len(HUMAN_LABELS)))
    clipped = np.zeros(len(HUMAN_LABELS), dtype=bool)
    rng = np.random.default_rng([seed, salt])  # one stream per cell
    for source, counts in parts:
        counts = np.asarray(counts, dtype=float)
        if counts.sum() == 0:
            continue
        g = conf.group_of(source)
        share = counts.sum() / total
        est, flags = _part(conf.M[g], counts.sum(0))
        point += share * est
        clipped |= flags
        C = len(counts)
        for start in range(0, n_boot, _CHUNK):
            stop = min(n_boot, start + _CHUNK)
            b = stop - start
            idx = rng.integers(0, C, size=(b, C)) + (np.arange(b) * C)[:, None]
            mult = np.bincount(idx.ravel(), minlength=b * C).reshape(b, C)  # times each cluster is drawn
            cb = mult @ counts  # (b, 5)
            nf = cb[:, :FAILED].sum(1)
            with np.errstate(invalid="ignore", divide="ignore"):
                pb = cb[:, :FAILED] / np.where(nf > 0, nf, 1.0)[:, None]
                pi = np.clip(solve(conf.M_boot[start:stop, g], pb), 0.0, 1.0)
                reps[start:stop] += share * pi * (nf / cb.sum(1))[:, None]
    alpha = (1 - level) / 2
    lo, hi = np.nanquantile(reps, [alpha, 1 - alpha], axis=0)
    return {
        t: {
            "value": 100.0 * float(point[i]),
            "ci": [100.0 * float(lo[i]), 100.0 * float(hi[i])],
            "clipped": bool(clipped[i]),
        }
        for i, t in enumerate(HUMAN_LABELS)
    }


def cluster_counts(outcomes: Sequence[str], failed: Sequence[bool], clusters: Sequence[Any]) -> np.ndarray:
    """(clusters, 5) counts of the judged outcomes (0..3) and failed requests (4) per cluster."""
    out = np.asarray(outcomes, dtype=object)
    col = np.array([JUDGED.index(o) for o in out], dtype=int) if len(out) else np.zeros(0, dtype=int)
    col = np.where(np.asarray(failed, dtype=bool), FAILED, col)
    _, codes = np.unique(np.asarray(clusters, dtype=object).astype(str), return_inverse=True)
    n = int(codes.max()) + 1 if len(codes) else 0
    m = np.zeros((n, FAILED + 1))
    np.add.at(m, (codes, col), 1.0)
    return m
