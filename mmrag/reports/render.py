"""Render report tables three ways: Markdown (report.md), rich (terminal), CSV (analysis).

The CSV keeps every number as a number (``correct``, ``correct_lo``, ``correct_hi`` ...); Markdown
and the terminal fold each value with its interval into one cell, ``62.5 [48.1, 75.0]``, and
differences carry a sign, ``-12.5 [-20.0, -4.2]``.  A knob that does not apply prints as ``–``.
Rate columns are headed as everywhere else (:func:`mmrag.metrics.rates.header`: ``correct % all``),
so the denominator is named in every table a human reads.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from mmrag.metrics.rates import RATES, header
from mmrag.util import atomic_write_text

_HEADERS = {r.id: header(r.id) for r in RATES}

DASH = "–"


def _is_missing(v: object) -> bool:
    try:
        return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))
    except TypeError:  # pragma: no cover
        return False


def _num(v: object, signed: bool = False) -> str:
    if _is_missing(v):
        return DASH
    return f"{float(v):+.1f}" if signed else f"{float(v):.1f}"  # type: ignore[arg-type]


def _p(v: object) -> str:
    if _is_missing(v):
        return DASH
    f = float(v)  # type: ignore[arg-type]
    return "<0.001" if f < 0.001 else f"{f:.3f}"


def display_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Strings for humans: ``X`` + ``X_lo`` + ``X_hi`` become one ``X`` cell; ``d_*`` are signed."""
    out: dict[str, list[str]] = {}
    cols = list(df.columns)
    skip = {c for c in cols if (c.endswith("_lo") and c[:-3] + "_hi" in cols) or (c.endswith("_hi") and c[:-3] + "_lo" in cols)}
    for c in cols:
        if c in skip:
            continue
        signed = c.startswith("d_")
        if f"{c}_lo" in cols and f"{c}_hi" in cols:
            out[c] = [DASH if _is_missing(v) else _num(v, signed) if _is_missing(lo) or _is_missing(hi)
                      else f"{_num(v, signed)} [{_num(lo, signed)}, {_num(hi, signed)}]"
                      for v, lo, hi in zip(df[c], df[f"{c}_lo"], df[f"{c}_hi"])]
        elif c.startswith("p_"):
            out[c] = [_p(v) for v in df[c]]
        elif pd.api.types.is_float_dtype(df[c]):
            out[c] = [_num(v, signed) for v in df[c]]
        else:
            out[c] = [DASH if _is_missing(v) else str(v) for v in df[c]]
    return pd.DataFrame(out, columns=list(out))


def _numeric(col: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)


def _md_cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def to_markdown(df: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table (numbers right-aligned)."""
    d = display_frame(df)
    if d.empty:
        return "_(no rows)_\n"
    right = [_numeric(df[c]) for c in d.columns]
    lines = ["| " + " | ".join(_md_cell(_HEADERS.get(str(c), str(c))) for c in d.columns) + " |",
             "| " + " | ".join("---:" if r else "---" for r in right) + " |"]
    for _, row in d.iterrows():
        lines.append("| " + " | ".join(_md_cell(str(v)) for v in row) + " |")
    return "\n".join(lines) + "\n"


def to_rich(df: pd.DataFrame, title: str = ""):
    """A :class:`rich.table.Table` for the terminal."""
    from rich.table import Table

    d = display_frame(df)
    t = Table(title=title or None, show_lines=False)
    for c in d.columns:
        t.add_column(_HEADERS.get(str(c), str(c)), justify="right" if _numeric(df[c]) else "left", overflow="fold")
    for _, row in d.iterrows():
        t.add_row(*[str(v) for v in row])
    return t


def write_csv(df: pd.DataFrame, path: str | Path) -> Path:
    """All numbers as numbers, written atomically."""
    path = Path(path)
    atomic_write_text(path, df.to_csv(index=False))
    return path
