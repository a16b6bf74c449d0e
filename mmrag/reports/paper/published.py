"""The papers' published numbers, shipped as data, and the side-by-side view against a run.

``mmrag/reports/paper_data/<paper>.yaml`` holds, per table (``table_4`` ...), the rows the paper
gives: each row has the paper's row keys (``model``, and ``severity`` / ``source`` / ``setting`` /
``positive`` + ``negative`` where the table has them) and values under the column names of our
table (``parametric_acc`` ...), so a number names its paper (the file's ``paper``), its table and
its row.  :func:`stacked` puts the paper's rows under ours in the same columns (``origin`` says
which is which: ``ours`` first, then ``published``); ``compare`` lines one published model's rows
up with ours: published, ours, the difference (ours - published, percentage points), our
interval and the number of items our value is a share of (the metric's own denominator).
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import pandas as pd

from mmrag.errors import InputError


@cache
def published(data_file: str) -> dict[str, Any]:
    """The parsed data file (read as data with a safe loader; never executed)."""
    import yaml

    text = resources.files("mmrag.reports").joinpath("paper_data").joinpath(data_file).read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    if not isinstance(data, dict) or "tables" not in data:
        raise InputError("a paper data file needs 'paper' and 'tables'", path=data_file)
    return data


def table_rows(data_file: str, table: str) -> tuple[list[str], list[dict[str, Any]]]:
    t = published(data_file)["tables"].get(table) or {}
    return list(t.get("keys") or ["model"]), list(t.get("rows") or [])


def paper_models(data_file: str) -> list[str]:
    return sorted(
        {r["model"] for t in published(data_file)["tables"].values() for r in t.get("rows") or [] if "model" in r}
    )


#: the column that says whose a row of a stacked table is
ORIGIN = "origin"
OURS, PUBLISHED = "ours", "published"


def stacked(data_file: str, table: str, ours: pd.DataFrame) -> pd.DataFrame:
    """``ours`` (``origin`` = ours) followed by the paper's rows of ``table`` (``origin`` =
    published) in our columns; a published value has no interval and no n of ours.  ``ours``
    unchanged but for the ``origin`` column when the paper gives no rows for the table."""
    keys, rows = table_rows(data_file, table)
    mine = ours.copy()
    mine.insert(0, ORIGIN, OURS)
    if not rows:
        return mine
    cols = [c for c in mine.columns if c != ORIGIN]
    pub = [
        {ORIGIN: PUBLISHED, **{c: r[c] for c in cols if c in r and (c in keys or isinstance(r[c], (int, float)))}}
        for r in rows
    ]
    theirs = pd.DataFrame(pub, columns=mine.columns)
    out = pd.concat([mine, theirs], ignore_index=True) if len(mine) else theirs
    for c in mine.columns:  # counts stay whole numbers where a published row leaves them blank
        if mine[c].dtype.kind in "iu":
            out[c] = pd.to_numeric(out[c]).astype("Int64")
    return out


def _n_of(o: pd.Series, col: str) -> int | None:
    """The number of items our value ``col`` is a share of: its ``_n``, else the row's ``n``."""
    for c in (f"{col}_n", "n"):
        if c in o.index and not pd.isna(o[c]):
            return int(o[c])
    return None


def compare(data_file: str, table: str, ours: pd.DataFrame, paper_model: str, model: str | None) -> pd.DataFrame:
    """One row per published number of ``paper_model`` in ``table`` that our table also has (every
    published row when the table has no ``model`` key, e.g. dataset statistics)."""
    keys, rows = table_rows(data_file, table)
    cols = ["paper", "table", "row", "column", "published", "ours", "diff", "ours_lo", "ours_hi", "n"]
    if ours.empty:
        return pd.DataFrame(columns=cols)
    if "model" not in ours.columns or "model" not in keys:
        return _lined_up(data_file, table, ours, [r for r in rows if r.get("model") in (None, paper_model)], keys)
    if model is None and ours["model"].nunique() > 1:  # each of our models against the published one
        parts = [
            compare(data_file, table, ours, paper_model, m).assign(model=m) for m in sorted(ours["model"].unique())
        ]
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)
    mine = ours[ours["model"] == model] if model is not None else ours
    return _lined_up(data_file, table, mine, [r for r in rows if r.get("model") == paper_model], keys)


def _lined_up(data_file: str, table: str, mine: pd.DataFrame, rows: list[dict], keys: list[str]) -> pd.DataFrame:
    """Each published number of ``rows`` beside our value of the same row keys and column."""
    cols = ["paper", "table", "row", "column", "published", "ours", "diff", "ours_lo", "ours_hi", "n"]
    paper = published(data_file)["paper"]
    out = []
    for r in rows:
        sel = mine
        for k in keys:
            if k != "model" and k in sel.columns:
                sel = sel[sel[k].astype(str) == str(r.get(k))]
        if sel.empty:
            continue
        o = sel.iloc[0]
        label = ", ".join(f"{k}={r.get(k)}" for k in keys)
        for col, pub in r.items():
            if col in keys or col not in mine.columns or not isinstance(pub, (int, float)):
                continue
            val = float(o[col])
            out.append(
                {
                    "paper": paper,
                    "table": table,
                    "row": label,
                    "column": col,
                    "published": float(pub),
                    "ours": val,
                    "diff": val - float(pub),
                    "ours_lo": float(o[f"{col}_lo"]) if f"{col}_lo" in mine.columns else float("nan"),
                    "ours_hi": float(o[f"{col}_hi"]) if f"{col}_hi" in mine.columns else float("nan"),
                    "n": _n_of(o, col),
                }
            )
    return pd.DataFrame(out, columns=cols)
