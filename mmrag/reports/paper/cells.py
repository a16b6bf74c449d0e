"""Building blocks of the paper tables: rates with intervals laid out as the papers lay them out.

A paper table is *wide*: one row per model (and a row key such as the severity or the source),
one column per (scenario, measure), e.g. ``parametric_acc``.  Every value is a percentage with its
question-clustered bootstrap interval in ``<column>_lo`` / ``<column>_hi`` (the intervals of
:func:`mmrag.reports.tables.rate_ci`, so a paper table and the report's tables agree).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from mmrag.reports.tables import CIOptions, rate_ci

#: the papers' short measure names for the three outcome rates (VLM-DeflectionBench: Acc, Defl, Hall)
TRIPLE = (("acc", "correct"), ("defl", "deflection"), ("hall", "hallucination"))


def put(row: dict, name: str, values: np.ndarray, clusters: np.ndarray, opts: CIOptions) -> None:
    """``row[name]``, ``row[name_lo]``, ``row[name_hi]``: the rate of a boolean / [0, 1] vector."""
    row[name], row[f"{name}_lo"], row[f"{name}_hi"] = rate_ci(values, clusters, opts)


def triple(row: dict, prefix: str, g: pd.DataFrame, opts: CIOptions) -> None:
    """Acc / Defl / Hall of the rows ``g`` into ``row`` as ``{prefix}_acc`` ... (NaN when empty)."""
    clusters = g["question_id"].to_numpy()
    for short, col in TRIPLE:
        put(row, f"{prefix}_{short}" if prefix else short, g[col].to_numpy(), clusters, opts)


def wide(
    df: pd.DataFrame, keys: list[str], column: str, levels: Iterable[str], opts: CIOptions, n_col: bool = False
) -> pd.DataFrame:
    """One row per value of ``keys``; for each value ``v`` of ``column`` in ``levels``, the triple
    ``{v}_acc`` / ``{v}_defl`` / ``{v}_hall`` (with intervals).  ``n_col`` adds the row's sample
    count ``n`` (distinct samples over the levels)."""
    levels = list(levels)
    rows = []
    for key, g in df.groupby(keys, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        row: dict = dict(zip(keys, key))
        if n_col:
            row["n"] = int(g["sample_id"].nunique())
        for lv in levels:
            triple(row, lv, g[g[column] == lv], opts)
        rows.append(row)
    return pd.DataFrame(rows)


def value_columns(t: pd.DataFrame) -> list[str]:
    """The columns that carry a value with an interval (``x`` where ``x_lo`` exists)."""
    return [c for c in t.columns if f"{c}_lo" in t.columns]


def rounded(t: pd.DataFrame, digits: int = 1) -> pd.DataFrame:
    """The Markdown view: each value as ``v [lo, hi]`` to ``digits`` decimals; interval columns folded in."""
    out = t.copy()
    for c in value_columns(t):

        def cell(r, c=c):
            v, lo, hi = r[c], r[f"{c}_lo"], r[f"{c}_hi"]
            if pd.isna(v):
                return ""
            if pd.isna(lo) or pd.isna(hi):
                return f"{v:.{digits}f}"
            return f"{v:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"

        out[c] = t.apply(cell, axis=1) if len(t) else t[c]
        out = out.drop(columns=[f"{c}_lo", f"{c}_hi"])
    for c in out.columns:
        if out[c].dtype.kind == "f":
            out[c] = out[c].map(lambda v: "" if pd.isna(v) else f"{v:.{digits}f}")
    return out
