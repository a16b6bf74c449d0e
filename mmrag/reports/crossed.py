"""``mmrag report --by KNOB[,KNOB]``: outcome rates crossed by one or two knobs of the run.

The built-in tables each pool what they do not show (the distractor table pools modalities, the
modality table pools distractor counts).  An ablation over two knobs — distractor count x
negative modality — needs them crossed: one table row per model x value x value, with the
question-clustered interval, and one figure with a panel per value of the second knob, the first
knob along x and a line per outcome.  Any column of :func:`mmrag.load` is a knob here (a scenario
knob, ``source``, ``type`` ...); what varies in the rows and is not crossed is named as pooled.

A row whose second knob does not apply at its x (realistic n = 0 shows no negatives, so it has no
negative modality) is one experiment: the table keeps it as one row (the knob printed ``–``), and
the figure draws it in every panel as the shared starting point (``shared`` in ``.data``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.figure import Figure

from mmrag.errors import InputError
from mmrag.reports.plotkit import OUTCOME_COLORS, OUTCOME_LABELS, STYLE, DrawnFigure, drawn, failures, model_label
from mmrag.reports.tables import CIOptions, order_key, rate_ci, rate_table

#: outcomes drawn as lines (unparseable is in the table)
LINES = ("correct", "deflection", "hallucination")
#: knobs named when they vary in the rows and are not crossed
POOLABLE = ("benchmark", "kind", "n_distractors", "negative_modality", "positive_modality", "strictness", "stress")
#: y limits that leave room for a point (and its error cap) at 0 or 100 %
Y_LIMITS = (-6.0, 106.0)
_NOT_KNOBS = frozenset({"correct", "deflection", "hallucination", "unparseable", "response", "key", "reason"})


def parse_by(text: str | Sequence[str], df: pd.DataFrame) -> list[str]:
    """``"a,b"`` (or a list) -> the knob names, checked against the frame's columns."""
    names = [p.strip() for p in (text.split(",") if isinstance(text, str) else text) if p.strip()]
    if not 1 <= len(names) <= 2 or len(set(names)) != len(names):
        raise InputError(f"give one or two different knobs, got {','.join(names) or 'none'}", field="--by")
    known = [c for c in df.columns if c not in _NOT_KNOBS]
    for n in names:
        if n not in known:
            raise InputError(f"no knob or column {n!r}; one of {', '.join(known)}", field="--by")
    return names


def _groups(df: pd.DataFrame, by: list[str]) -> list[str]:
    """Model, the benchmark and kind when several are present (never pooled silently), then ``by``."""
    keys = [c for c in ("benchmark",) if c not in by and df[c].nunique() > 1] + ["model"]
    keys += [c for c in ("kind",) if c not in by and df[c].nunique() > 1]
    return [k for k in keys if k not in by] + by


def pooled_over(df: pd.DataFrame, keep: Sequence[str]) -> dict[str, list[str]]:
    """Knobs that vary in ``df`` and are not in ``keep``, with their values (what a view averages over)."""
    out = {}
    for c in POOLABLE:
        if c in keep or c not in df.columns:
            continue
        values = [str(v) for v in _ordered(df[c])]
        if len(values) > 1:
            out[c] = values
    return out


def pooled_sentence(pooled: dict[str, list[str]]) -> str:
    return "; ".join(f"{k} ({', '.join(v)})" for k, v in pooled.items())


def crossed_table(df: pd.DataFrame, by: list[str], opts: CIOptions = CIOptions()) -> pd.DataFrame:
    """One row per model (benchmark, kind when several) x ``by`` values, every rate with its interval."""
    return rate_table(df, _groups(df, by), opts=opts)


def _ordered(values: pd.Series) -> list:
    present = pd.Series(values.dropna().unique(), name=values.name)
    return present.iloc[np.argsort(order_key(present).to_numpy(), kind="stable")].tolist()


def crossed_numbers(df: pd.DataFrame, by: list[str], opts: CIOptions = CIOptions()) -> pd.DataFrame:
    """model, kind, panel (second knob, "" without one), outcome, x, rate, lo, hi, n, shared."""
    x, facet = by[0], (by[1] if len(by) > 1 else None)
    d = df[df[x].notna()]
    panels = _ordered(d[facet]) if facet else [""]
    rows = []
    for (model, kind), g in d.groupby(["model", "kind"], sort=True):
        for panel in panels:
            if facet:
                own = g[g[facet] == panel]
                shared = g[g[facet].isna() & ~g[x].isin(own[x])]  # e.g. realistic n = 0: no negatives
                parts = [(own, False), (shared, True)]
            else:
                parts = [(g, False)]
            for part, is_shared in parts:
                for xv, cell in part.groupby(x, sort=True):
                    for outcome in LINES:
                        r, lo, hi = rate_ci(cell[outcome].to_numpy(), cell["question_id"].to_numpy(), opts)
                        rows.append(
                            {
                                "model": model,
                                "kind": kind,
                                "panel": panel,
                                "outcome": outcome,
                                "x": xv,
                                "rate": r,
                                "lo": lo,
                                "hi": hi,
                                "n": len(cell),
                                "shared": is_shared,
                            }
                        )
    cols = ["model", "kind", "panel", "outcome", "x", "rate", "lo", "hi", "n", "shared"]
    out = pd.DataFrame(rows, columns=cols)
    if out.empty:
        return out
    xs = pd.Series(out["x"], name=x)
    out = out.assign(_k=order_key(xs).to_numpy(), _p=out["panel"].map({p: i for i, p in enumerate(panels)}))
    out = out.sort_values(["model", "kind", "_p", "outcome", "_k"], kind="stable")
    return out.drop(columns=["_k", "_p"]).reset_index(drop=True)


def draw_crossed(df: pd.DataFrame, by: list[str], opts: CIOptions = CIOptions()) -> DrawnFigure:
    """Panels: one per value of the second knob (columns) and per model (rows); x: the first knob;
    a line per outcome (and per kind, dashed, when several kinds vary along x); 95 % error bars."""
    data = crossed_numbers(df, by, opts)
    failed = failures(df)
    x, facet = by[0], (by[1] if len(by) > 1 else None)
    numeric = pd.api.types.is_numeric_dtype(df[x])
    xs = sorted(data["x"].unique()) if numeric else _ordered(pd.Series(data["x"], name=x))
    pos = {v: (float(v) if numeric else float(i)) for i, v in enumerate(xs)}
    panels = list(dict.fromkeys(data["panel"])) or [""]
    models = sorted(data["model"].unique()) or [""]
    kinds = list(dict.fromkeys(data["kind"]))
    ncols = min(len(panels), 4) if len(models) == 1 else len(panels)
    nrows = len(models) * math.ceil(len(panels) / ncols)
    span = (max(pos.values()) - min(pos.values())) if pos else 1.0
    with rc_context(STYLE):
        fig = Figure(figsize=(0.6 + 2.9 * ncols, 1.1 + 2.5 * nrows), layout="constrained")
        axes = fig.subplots(nrows, ncols, sharey=True, squeeze=False)
        for mi, model in enumerate(models):
            for pi, panel in enumerate(panels):
                r, c = mi * math.ceil(len(panels) / ncols) + pi // ncols, pi % ncols
                ax = axes[r, c]
                for kind, outcome in ((k, o) for k in kinds for o in LINES):
                    s = data[
                        (data["model"] == model)
                        & (data["panel"] == panel)
                        & (data["kind"] == kind)
                        & (data["outcome"] == outcome)
                    ]
                    if s.empty:
                        continue
                    s = s.assign(_p=s["x"].map(pos)).sort_values("_p")
                    offset = (LINES.index(outcome) - 1) * 0.015 * (span or 1.0)
                    rate = s["rate"].to_numpy(dtype=float)
                    err = np.nan_to_num(np.vstack([rate - s["lo"].to_numpy(float), s["hi"].to_numpy(float) - rate]))
                    ax.errorbar(
                        s["_p"].to_numpy(float) + offset,
                        rate,
                        yerr=err,
                        color=OUTCOME_COLORS[outcome],
                        ls=("-", "--", ":", "-.")[kinds.index(kind) % 4],
                        marker="os^D"[LINES.index(outcome)],
                        ms=4,
                        capsize=2,
                        elinewidth=0.8,
                        label=OUTCOME_LABELS[outcome] + (f" · {kind}" if len(kinds) > 1 else ""),
                    )
                ax.set_ylim(*Y_LIMITS)
                ax.set_yticks(range(0, 101, 20))
                ax.set_xticks(list(pos.values()), [str(v) for v in xs])
                title = f"{facet} = {panel}" if facet else ""
                if len(models) > 1 or failed:
                    title = f"{model_label(model, failed, 30)}\n{title}".strip()
                ax.set_title(title)
                if r == nrows - 1:
                    ax.set_xlabel(x)
                if c == 0:
                    ax.set_ylabel("% of all responses (95% CI)")
        for ax in axes.flat[len(models) * len(panels) :] if len(models) == 1 else []:
            ax.set_visible(False)
        handles, labels = axes[0, 0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 3) or 1, frameon=False)
    return drawn(fig, data)


__all__ = ["crossed_numbers", "crossed_table", "draw_crossed", "parse_by", "pooled_over", "pooled_sentence"]
