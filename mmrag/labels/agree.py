"""Agreement of a run's judge with the run's own labels (``mmrag judge-agreement RUN_DIR``).

The measures are those of :func:`mmrag.metrics.agreement.summarise` (people are A, the judge is
B), on the labelled pairs as they are — so kappa equals ``sklearn.metrics.cohen_kappa_score`` on
the same pairs — plus the same re-weighted to the whole run (``kappa_run``, ``agreement_run``:
each pair weighs ``N_h / m_h``, because the sample over-represents rare judge outcomes), each with
a percentile bootstrap interval that redraws the labelled pairs within their strata
(``source|outcome``, the sampling design).  Coverage is the run's: percent of all responses the
judge gave one of the three classes.  With two or more labellers, inter-annotator kappa on the
keys both labelled.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from mmrag.labels.rates import choose_labeller, labelled_pairs, run_frame, stratum_sizes
from mmrag.labels.store import HUMAN_LABELS
from mmrag.labels.store import load as load_labels
from mmrag.metrics.agreement import summarise
from mmrag.metrics.stats import cohen_kappa, confusion
from mmrag.schema import OUTCOMES

DEFAULT_BY = ("source", "kind")
K = len(OUTCOMES)


def kappa_from_counts(C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(kappa, agreement in percent) of confusion counts (..., K, K), vectorised; kappa is 1.0
    where chance agreement is 1 (as :func:`mmrag.metrics.stats.cohen_kappa`)."""
    n = C.sum(axis=(-1, -2))
    with np.errstate(invalid="ignore", divide="ignore"):
        po = np.trace(C, axis1=-2, axis2=-1) / n
        pe = (C.sum(-1) * C.sum(-2)).sum(-1) / n**2
        kappa = np.where(pe >= 1.0 - 1e-12, 1.0, (po - pe) / (1.0 - pe))
    return kappa, 100.0 * po


def _weights(pairs: pd.DataFrame, sizes: dict[tuple[str, str], int]) -> np.ndarray:
    m = pairs.groupby(["source", "outcome"])["key"].transform("size").to_numpy()
    N = np.array([sizes.get((str(s), str(o)), 0) for s, o in zip(pairs["source"], pairs["outcome"])], dtype=float)
    return N / m


def _boot_counts(
    codes: np.ndarray, strata: np.ndarray, w: np.ndarray, n_boot: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap confusion counts (B, K, K), unweighted and weighted, redrawing within strata."""
    rng = np.random.default_rng(seed)
    cols = []
    for h in np.unique(strata):
        members = np.flatnonzero(strata == h)
        cols.append(members[rng.integers(0, len(members), size=(n_boot, len(members)))])
    idx = np.concatenate(cols, axis=1)
    flat = (codes[idx] + (np.arange(n_boot) * K * K)[:, None]).ravel()
    plain = np.bincount(flat, minlength=n_boot * K * K).reshape(n_boot, K, K).astype(float)
    weighted = np.bincount(flat, weights=w[idx].ravel(), minlength=n_boot * K * K).reshape(n_boot, K, K)
    return plain, weighted


def block(
    pairs: pd.DataFrame, w: np.ndarray, *, level: float = 0.95, n_boot: int = 1000, seed: int = 0
) -> dict[str, Any]:
    """The measures of one group of labelled pairs, with intervals."""
    truth = pairs["truth"].tolist()
    judged = pairs["outcome"].tolist()
    out = summarise(truth, judged)
    if not truth:
        return out
    codes = np.array([OUTCOMES.index(t) * K + OUTCOMES.index(j) for t, j in zip(truth, judged)])
    Cw = np.bincount(codes, weights=w, minlength=K * K).reshape(K, K)
    kr, ar = kappa_from_counts(Cw)
    out["kappa_run"], out["agreement_run"] = float(kr), float(ar)
    strata = (pairs["source"].astype(str) + "|" + pairs["outcome"].astype(str)).to_numpy()
    plain, weighted = _boot_counts(codes, strata, w, n_boot, seed)
    alpha = (1 - level) / 2
    ci = {}
    for name, C in (("kappa", plain), ("agreement", plain), ("kappa_run", weighted), ("agreement_run", weighted)):
        k, a = kappa_from_counts(C)
        v = k if name.startswith("kappa") else a
        lo, hi = np.nanquantile(v, [alpha, 1 - alpha])
        ci[name] = [float(lo), float(hi)]
    out["ci"] = ci
    return out


def inter_annotator(labels: pd.DataFrame) -> list[dict[str, Any]]:
    """Kappa, agreement and confusion of every two labellers over the keys both labelled."""
    lab = labels[labels["label"].isin(HUMAN_LABELS)]
    out = []
    for a, b in combinations(sorted(lab["labeller"].unique()), 2):
        m = lab[lab["labeller"] == a].merge(lab[lab["labeller"] == b], on="key", suffixes=("_a", "_b"))
        if m.empty:
            continue
        la, lb = m["label_a"].tolist(), m["label_b"].tolist()
        out.append(
            {
                "a": a,
                "b": b,
                "n": len(m),
                "agreement": 100.0 * float(np.mean([x == y for x, y in zip(la, lb)])),
                "kappa": cohen_kappa(la, lb),
                "confusion": confusion(la, lb),
            }
        )
    return out


def agreement(
    run: Any,
    labels: pd.DataFrame | None = None,
    *,
    labeller: str | None = None,
    by: Sequence[str] = DEFAULT_BY,
    level: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """The judge against ``labeller``'s labels (default: the labeller with most labels): the
    overall block, one per value of each ``by`` field (any column of the run frame), the run's
    coverage and inter-annotator agreement.  ``run``: a run directory or its frame."""
    from mmrag.errors import InputError

    df = run_frame(run)
    if labels is None:
        if isinstance(run, pd.DataFrame):
            raise InputError("give the labels (mmrag.labels.load(RUN_DIR)) with a frame")
        labels = load_labels(run)
    who = choose_labeller(labels, labeller)
    pairs = labelled_pairs(df, labels, who)
    if pairs.empty:
        raise InputError(
            "this run has no labels yet: label a sample with `mmrag label RUN_DIR` "
            "(or bring labels with `mmrag label RUN_DIR --import FILE`)"
        )
    for f in by:
        if f not in df.columns:
            raise InputError(f"unknown field {f!r}; one of {', '.join(df.columns)}", field="--by")
    w = _weights(pairs, stratum_sizes(df))
    out = block(pairs, w, level=level, n_boot=n_boot, seed=seed)
    out.update(
        {
            "labeller": who,
            "labellers": sorted(labels["labeller"].unique()),
            "coverage_run": 100.0 * float((df["outcome"] != "unparseable").mean()) if len(df) else None,
            "n_run": int(len(df)),
        }
    )
    out["by"] = {}
    for f in by:
        groups: dict[str, Any] = {}
        for value, g in pairs.groupby(pairs[f].astype(object).where(pairs[f].notna(), "(none)"), sort=True):
            idx = g.index.to_numpy()
            groups[str(value)] = block(g.reset_index(drop=True), w[idx], level=level, n_boot=n_boot, seed=seed)
        out["by"][f] = groups
    out["inter_annotator"] = inter_annotator(labels)
    return out
