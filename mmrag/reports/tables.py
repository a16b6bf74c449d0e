"""Outcome-rate tables with confidence intervals, one per axis a researcher slices a run along.

Every rate (correct, deflection, hallucination, unparseable, in percent) comes with a bootstrap
confidence interval *clustered by question* (``question_id``): VLM-DeflectionBench has several
samples per question and HumbleBench's stress settings derive several prompts from one record, so
resampling rows independently would pretend those near-copies are independent evidence and give
intervals that are too narrow.  The interval itself is :func:`mmrag.metrics.bootstrap_ci`
(percentile bootstrap over resampled questions, ``n_boot`` draws, fixed ``seed``), so two reports
of the same run print the same numbers.

A table pools whatever is not in its ``by`` columns: the modality table pools distractor counts,
the distractor table pools modalities.  Strictness is always kept apart (a different prompt is a
different experiment), and the strictness table only uses scenario cells that were run at several
levels (:func:`strictness_rows`).  Clustering keeps pooling honest: the same question seen under
four distractor counts is still one cluster.  Each table is made
only when the data varies along its axis, so a run with one strictness level gets no strictness
table.  New tables register in :data:`TABLES`; nothing dispatches on table names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mmrag.benchmarks.family import HUMBLEBENCH, KNOWHAL
from mmrag.errors import InputError
from mmrag.scenarios.kinds import kind_order, kinds_where
from mmrag.scenarios.spec import MODALITIES, STRESS_ORDER, STRICTNESS_LEVELS
from mmrag.schema import OUTCOMES

#: Grouping columns shown first in every table, when present.
_DISPLAY_ORDER = ("benchmark", "model")


@dataclass(frozen=True)
class CIOptions:
    """How intervals are computed; the defaults are the documented ones (docs/reports.md)."""

    level: float = 0.95
    n_boot: int = 1000
    seed: int = 0


#: natural (not alphabetical) order of the categorical knobs in tables; scenario kinds follow their
#: registered paper order (:func:`mmrag.scenarios.kinds.kind_order`)
ORDERS: dict[str, tuple[str, ...]] = {
    "strictness": STRICTNESS_LEVELS,
    "positive_modality": MODALITIES,
    "negative_modality": MODALITIES,
    "stress": ("common", *STRESS_ORDER),
    "polarity": ("positive", "negative"),
}


def order_key(col: pd.Series) -> pd.Series:
    if col.name == "kind":
        return col.map(lambda v: kind_order(v)[0] if isinstance(v, str) else -1)
    order = ORDERS.get(str(col.name))
    if order is None:
        return col
    rank = {v: i for i, v in enumerate(order)}
    return col.map(lambda v: rank.get(v, len(order)) if isinstance(v, str) else -1)


def rate_ci(values: np.ndarray, clusters: np.ndarray, opts: CIOptions) -> tuple[float, float, float]:
    """(rate, lo, hi) in percent of a boolean vector, clustered by ``clusters``."""
    from mmrag.metrics import bootstrap_ci

    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return (float("nan"),) * 3
    lo, hi = bootstrap_ci(v, np.asarray(clusters), level=opts.level, n_boot=opts.n_boot, seed=opts.seed)
    return 100.0 * float(v.mean()), 100.0 * float(lo), 100.0 * float(hi)


def rate_table(
    df: pd.DataFrame, by: list[str], *, outcomes: tuple[str, ...] = OUTCOMES, opts: CIOptions = CIOptions()
) -> pd.DataFrame:
    """One row per group of ``by``: ``n``, ``n_questions`` and, per outcome, ``rate``, ``_lo``, ``_hi``.

    Groups with a missing key (a knob that does not apply, e.g. the negative modality of an oracle
    prompt) are kept, not dropped.
    """
    cols = [*by, "n", "n_questions", "coverage"] + [f"{o}{s}" for o in outcomes for s in ("", "_lo", "_hi")]
    if df.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for key, g in df.groupby(by, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        row: dict[str, object] = dict(zip(by, key))
        row["n"] = len(g)
        row["n_questions"] = g["question_id"].nunique()
        # coverage: percent of responses the judge put in one of the three classes (docs/labelling.md)
        row["coverage"] = 100.0 - 100.0 * float(g["unparseable"].mean()) if "unparseable" in g else float("nan")
        clusters = g["question_id"].to_numpy()
        for o in outcomes:
            row[o], row[f"{o}_lo"], row[f"{o}_hi"] = rate_ci(g[o].to_numpy(), clusters, opts)
        rows.append(row)
    out = pd.DataFrame(rows, columns=cols)
    out = out.sort_values(by, key=order_key, kind="stable", na_position="first", ignore_index=True)
    return out.astype({"n": "int64", "n_questions": "int64"})


@dataclass(frozen=True)
class TableSpec:
    """A named slice: which rows (``select``), grouped by what, and which column must vary."""

    name: str
    title: str
    by: tuple[str, ...]
    select: Callable[[pd.DataFrame], pd.Series]
    varies: str | None = None

    def applies(self, df: pd.DataFrame) -> bool:
        sub = df[self.select(df)]
        if sub.empty:
            return False
        return self.varies is None or sub[self.varies].nunique(dropna=True) > 1

    def build(self, df: pd.DataFrame, opts: CIOptions = CIOptions()) -> pd.DataFrame:
        sub = df[self.select(df)]
        by = [c for c in self.by if c in sub.columns]
        if "run" in sub.columns and sub["run"].nunique() > 1:
            by = ["run", *by]
        return rate_table(sub, by, opts=opts)


#: Every table a report may contain, in report order (add more with :func:`register_table`).
TABLES: dict[str, TableSpec] = {}


def register_table(spec: TableSpec) -> TableSpec:
    TABLES[spec.name] = spec
    return spec


def _all(df: pd.DataFrame) -> pd.Series:
    return pd.Series(True, index=df.index)


def _retrieval(df: pd.DataFrame) -> pd.Series:
    """Rows whose scenario kind shows retrieved documents (the kind says so, not its name)."""
    return df["kind"].isin(kinds_where(lambda k: k.uses_contexts, df["kind"].unique()))


def _strictness_kinds(df: pd.DataFrame) -> pd.Series:
    return df["kind"].isin(kinds_where(lambda k: k.takes_strictness, df["kind"].unique()))


#: the knobs that, with the kind, identify a scenario cell apart from its strictness
_CELL = ("kind", "n_distractors", "positive_modality", "negative_modality", "stress")


def strictness_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of the scenario cells that were run at two or more strictness levels.

    A strictness comparison must hold everything else fixed: a sweep often runs every distractor
    count at ``none`` but only one cell at ``soft``/``moderate``/``severe``, and pooling all of
    ``none`` against that one cell would mix the strictness effect with the distractor effect.
    """
    d = df[_strictness_kinds(df)]
    if d.empty:
        return d
    levels = d.groupby(list(_CELL), dropna=False)["strictness"].transform("nunique")
    return d[levels > 1]


def _strictness(df: pd.DataFrame) -> pd.Series:
    return pd.Series(df.index.isin(strictness_rows(df).index), index=df.index)


for _spec in (
    TableSpec(
        "scenario", "Outcome rates per scenario", ("benchmark", "model", "kind", "scenario", "scenario_id"), _all
    ),
    TableSpec(
        "modality",
        "Positive x negative modality cells (retrieval scenarios)",
        ("benchmark", "model", "kind", "strictness", "positive_modality", "negative_modality"),
        _retrieval,
        varies="negative_modality",
    ),
    TableSpec(
        "distractors",
        "Distractor count (retrieval scenarios)",
        ("benchmark", "model", "kind", "strictness", "n_distractors"),
        _retrieval,
        varies="n_distractors",
    ),
    TableSpec(
        "strictness",
        "Prompt strictness (scenario cells run at several levels)",
        ("benchmark", "model", "kind", "strictness"),
        _strictness,
        varies="strictness",
    ),
    TableSpec(
        "source", "Source dataset", ("benchmark", "model", "kind", "strictness", "source"), _all, varies="source"
    ),
    TableSpec(
        "humblebench_type",
        "HumbleBench question type per stress setting",
        ("benchmark", "model", "stress", "type"),
        lambda d: d["benchmark_kind"] == HUMBLEBENCH.id,
        varies="type",
    ),
    TableSpec(
        "knowhal_dimension",
        "KnowHal dimension and polarity",
        ("benchmark", "model", "dimension", "polarity"),
        lambda d: d["benchmark_kind"] == KNOWHAL.id,
        varies="dimension",
    ),
):
    register_table(_spec)


def build_tables(
    df: pd.DataFrame, names: list[str] | None = None, opts: CIOptions = CIOptions()
) -> dict[str, tuple[TableSpec, pd.DataFrame]]:
    """Every applicable table (or the ``names`` asked for, applicable or not) as ``{name: (spec, frame)}``."""
    out: dict[str, tuple[TableSpec, pd.DataFrame]] = {}
    for name in names if names is not None else list(TABLES):
        if name not in TABLES:
            raise InputError(f"unknown table '{name}'; known: {', '.join(TABLES)}", field="tables")
        spec = TABLES[name]
        if names is None and not spec.applies(df):
            continue
        out[name] = (spec, spec.build(df, opts))
    return out
