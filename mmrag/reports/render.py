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
    skip = {
        c
        for c in cols
        if (c.endswith("_lo") and c[:-3] + "_hi" in cols) or (c.endswith("_hi") and c[:-3] + "_lo" in cols)
    }
    for c in cols:
        if c in skip:
            continue
        signed = c.startswith("d_")
        if f"{c}_lo" in cols and f"{c}_hi" in cols:
            out[c] = [
                DASH
                if _is_missing(v)
                else _num(v, signed)
                if _is_missing(lo) or _is_missing(hi)
                else f"{_num(v, signed)} [{_num(lo, signed)}, {_num(hi, signed)}]"
                for v, lo, hi in zip(df[c], df[f"{c}_lo"], df[f"{c}_hi"])
            ]
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
    lines = [
        "| " + " | ".join(_md_cell(_HEADERS.get(str(c), str(c))) for c in d.columns) + " |",
        "| " + " | ".join("---:" if r else "---" for r in right) + " |",
    ]
    for _, row in d.iterrows():
        lines.append("| " + " | ".join(_md_cell(str(v)) for v in row) + " |")
    return "\n".join(lines) + "\n"


#: characters of the longest model label in a terminal table (longer names are shortened)
LABEL_WIDTH = 24
_JOINTS = frozenset(" :=,/-_@|")


def short_labels(names, width: int = LABEL_WIDTH) -> dict[str, str]:
    """A short label per name, unique among ``names``: the name itself when it fits in ``width``;
    else the shortest head that no other name shares, cut at a joint (``=``, ``,``, ``-``, ``/``
    ...) and ended with ``…``; else a head, ``…`` and the shortest tail that tells it apart.

    ``sim-vlm:text_prior=0.1,strictness_gain=0.5`` and ``…=0.9,…`` become
    ``sim-vlm:text_prior=0.1…`` and ``sim-vlm:text_prior=0.9…``, never the one
    ``sim-vlm:text_prior…`` that a squeezed terminal column made of both.  A label ``H…T`` is
    used only when no other name starts with ``H`` and ends with ``T``; names that cannot be told
    apart within ``width`` keep their full text."""
    names = list(dict.fromkeys(str(n) for n in names))
    out = {n: n for n in names if len(n) <= width}
    for n in (n for n in names if len(n) > width):
        others = [o for o in names if o != n]
        out[n] = _head_label(n, others, width) or _head_tail_label(n, others, width) or n
    return out


def _head_label(n: str, others: list[str], width: int) -> str | None:
    for h in range(1, width):
        if n[h] not in _JOINTS and n[h - 1] not in _JOINTS:
            continue  # whole tokens: "…=0.1…", never "…=0.…"
        if not any(o.startswith(n[:h]) and len(o) > h for o in others):
            return n[:h] + "…"
    return None


def _head_tail_label(n: str, others: list[str], width: int) -> str | None:
    for tail in range(1, width - 1):
        for longer in range(tail, width - 1):  # whole tokens where they fit: "…70B-Instruct"
            if n[-longer - 1] in _JOINTS or n[-longer] in _JOINTS:
                tail = longer
                break
        head, end = n[: width - 1 - tail], n[-tail:]
        # "H…T" is ambiguous when another name also starts with H and ends with T
        if not any(o.startswith(head) and o.endswith(end) for o in others):
            return f"{head}…{end}"
    return None


def label_legend(labels: dict[str, str]) -> str:
    """``short = full`` for every shortened name, one a line ('' when nothing was shortened)."""
    return "\n".join(f"{short} = {full}" for full, short in labels.items() if short != full)


def with_legend(table, labels: dict[str, str]):
    """The table, followed by the legend of its shortened labels (unwrapped, whatever the table's
    width), as one renderable."""
    legend = label_legend(labels)
    if not legend:
        return table
    from rich.console import Group
    from rich.text import Text

    return Group(table, Text(legend, no_wrap=True, overflow="ignore"))


def to_rich(df: pd.DataFrame, title: str = ""):
    """A :class:`rich.table.Table` for the terminal; long model names get short unique labels,
    spelled out under the table."""
    from rich.table import Table

    d = display_frame(df)
    labels = short_labels(d["model"]) if "model" in d.columns else {}
    if labels:
        d = d.assign(model=d["model"].map(labels))
    # a value with its interval is two lines, the value over "[lo, hi]", never cut inside the brackets
    ci = [c for c in d.columns if f"{c}_lo" in df.columns and f"{c}_hi" in df.columns]
    for c in ci:
        d[c] = d[c].str.replace(" [", "\n[", regex=False)
    t = Table(title=title or None, show_lines=False)
    for c in d.columns:
        # the model column keeps its labels whole; every other one wraps (at spaces first) rather
        # than cutting its text to "corr…"
        is_model = c == "model"
        widest = max((len(part) for v in d[c] for part in str(v).split("\n")), default=0)
        t.add_column(
            _HEADERS.get(str(c), str(c)),
            justify="right" if _numeric(df[c]) else "left",
            overflow="fold",
            no_wrap=is_model or c in ci,
            min_width=max(map(len, labels.values()), default=0) if is_model else (widest if c in ci else None),
        )
    for _, row in d.iterrows():
        t.add_row(*[str(v) for v in row])
    return with_legend(t, labels)


def write_csv(df: pd.DataFrame, path: str | Path) -> Path:
    """All numbers as numbers, written atomically."""
    path = Path(path)
    atomic_write_text(path, df.to_csv(index=False))
    return path
