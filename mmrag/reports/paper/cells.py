"""Building blocks of the paper tables: rates with intervals laid out as the papers lay them out.

A paper table is *wide*: one row per model (and a row key such as the severity or the source),
one column per (scenario, measure), e.g. ``parametric_acc``.  Every value is a percentage with its
question-clustered bootstrap interval in ``<column>_lo`` / ``<column>_hi`` (the intervals of
:func:`mmrag.reports.tables.rate_ci`, so a paper table and the report's tables agree) and the
number of items it is a share of in ``<column>_n`` (its own denominator: a rate over NOTA-gold
items says how many there were, not the row's size).

Beside every Acc / Defl / Hall triple (which the VLM-DeflectionBench paper sums to 100) stand
``_unparseable`` (the share the judge put in no class: with it the four sum to 100) and
``_undecided`` (the part of those the judge abstained on although there was a reply; the rest
are empty replies and failed requests).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from mmrag.reports.tables import CIOptions, rate_ci

#: the papers' short measure names for the three outcome rates (VLM-DeflectionBench: Acc, Defl, Hall)
TRIPLE = (("acc", "correct"), ("defl", "deflection"), ("hall", "hallucination"))
#: shown beside every triple: the judge's fourth class, and the part of it the judge abstained on
BESIDE = (("unparseable", "unparseable"), ("undecided", "undecided"))
#: a cell over fewer items than this is flagged in every table a person reads
FEW = 30
FEW_MARK = "†"
BESIDE_NOTE = (
    "`unparseable`: the share the judge put in no class (the paper's Acc + Defl + Hall sum to 100; ours do with "
    "it); `undecided`: the part of those where there was a reply and the judge abstained (the rest are empty "
    "replies and failed requests)."
)
FEW_NOTE = (
    f"{FEW_MARK} fewer than {FEW} items in the cell (its n follows the mark): the interval is too wide "
    "to read much into, and 0 or 100 % is not certainty."
)


def put(row: dict, name: str, values: np.ndarray, clusters: np.ndarray, opts: CIOptions) -> None:
    """``row[name]``, ``row[name_lo]``, ``row[name_hi]``: the rate of a boolean / [0, 1] vector, and
    ``row[name_n]``: how many items it is a share of."""
    row[name], row[f"{name}_lo"], row[f"{name}_hi"] = rate_ci(values, clusters, opts)
    row[f"{name}_n"] = len(values)


def triple(row: dict, prefix: str, g: pd.DataFrame, opts: CIOptions) -> None:
    """Acc / Defl / Hall of the rows ``g`` into ``row`` as ``{prefix}_acc`` ... (NaN when empty),
    with ``{prefix}_unparseable`` and ``{prefix}_undecided`` beside them."""
    clusters = g["question_id"].to_numpy()
    for short, col in (*TRIPLE, *BESIDE):
        if col in g.columns:
            put(row, f"{prefix}_{short}" if prefix else short, g[col].to_numpy(dtype=float), clusters, opts)


def wide(
    df: pd.DataFrame, keys: list[str], column: str, levels: Iterable[str], opts: CIOptions, n_col: bool = False
) -> pd.DataFrame:
    """One row per value of ``keys``; for each value ``v`` of ``column`` in ``levels``, the triple
    ``{v}_acc`` / ``{v}_defl`` / ``{v}_hall`` (with intervals, counts and the shares beside them).
    ``n_col`` adds the row's sample count ``n`` (distinct samples over the levels)."""
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


def has_few(t: pd.DataFrame) -> bool:
    """Whether any cell of ``t`` is a share of fewer than :data:`FEW` items."""
    for c in value_columns(t):
        if f"{c}_n" in t.columns:
            n = pd.to_numeric(t[f"{c}_n"], errors="coerce")
            if ((n < FEW) & t[c].notna()).any():
                return True
    return False


def _cell(v, lo, hi, n, digits: int) -> str:
    if pd.isna(v):
        return ""
    text = f"{v:.{digits}f}" if pd.isna(lo) or pd.isna(hi) else f"{v:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"
    if n is not None and not pd.isna(n) and n < FEW:
        text += f" {FEW_MARK}n={int(n)}"
    return text


def rounded(t: pd.DataFrame, digits: int = 1) -> pd.DataFrame:
    """The Markdown view: each value as ``v [lo, hi]`` to ``digits`` decimals, flagged ``†n=3`` when
    it is a share of fewer than :data:`FEW` items; interval and count columns folded in."""
    out = t.copy()
    for c in value_columns(t):
        has_n = f"{c}_n" in t.columns

        def cell(r, c=c, has_n=has_n):
            return _cell(r[c], r[f"{c}_lo"], r[f"{c}_hi"], r[f"{c}_n"] if has_n else None, digits)

        out[c] = t.apply(cell, axis=1) if len(t) else t[c]
        out = out.drop(columns=[f"{c}_lo", f"{c}_hi", *([f"{c}_n"] if has_n else [])])
    for c in out.columns:
        if out[c].dtype.kind == "f":
            out[c] = out[c].map(lambda v: "" if pd.isna(v) else f"{v:.{digits}f}")
        elif isinstance(out[c].dtype, pd.Int64Dtype):  # a count with blanks (a published row has none)
            out[c] = out[c].map(lambda v: "" if pd.isna(v) else str(int(v)))
    return out


def mark_undecided(df: pd.DataFrame, records: list) -> pd.DataFrame:
    """``df`` with an ``undecided`` 0/1 column: the judge abstained on the cell although a reply was
    there (:func:`mmrag.judging.undecided`, read from each record's verdict)."""
    from mmrag.judging import undecided

    flags = {r.key: bool(undecided(r.verdict)) for r in records}
    return df.assign(undecided=[float(flags.get(k, False)) for k in df["key"]])
