"""Paper-style figures of a run, each saved as PNG and SVG.

Figures are built on :class:`matplotlib.figure.Figure` directly, never through ``pyplot``: no
global backend is switched (a Jupyter user's inline backend is left alone), nothing needs a
display, and each figure is freed when it goes out of scope.  Every plotted rate carries the same
question-clustered bootstrap interval as the tables (:mod:`mmrag.reports.tables`), drawn as a
band or an error bar.  SVGs are written without a timestamp and with a fixed hash salt so that the
same run gives byte-identical files.

Each figure registers a :class:`PlotSpec` in :data:`PLOTS` with an ``applies`` test: a plot is
made only when the data varies along its axis (two distractor counts, two modalities, two
strictness levels, two stress settings, both KnowHal polarities).

Every draw function returns a :class:`~mmrag.reports.plotkit.DrawnFigure` whose ``.data`` holds
exactly the numbers drawn (one row per point, bar or cell: panel keys, ``rate``, ``lo``, ``hi``,
``n``), computed first and then drawn from, so tests assert what a figure shows.  A model with
failed requests is marked ``(FAILED: N requests)`` wherever its name appears.

Pooling choices (documented in docs/reports.md): the distractor curve and the modality matrix use
the ``none`` strictness prompts when present (else the most frequent level), so that a strictness
sweep in the same run does not blur them; the distractor curve pools positive and negative
modalities (and says so over the figure when they vary: ``mmrag report --by`` splits them), and draws the gold-only kind (oracle) as the n = 0 point of the gold + negatives line
(realistic) unless the run has realistic prompts with n = 0 itself.  The modality matrix never
pools distractor counts: one compact grid per model and outcome whose rows are count x positive
modality (or only the count asked for), each cell one experiment.

Readability is a tested property (``tests/test_figures.py``): no two texts overlap and nothing is
drawn outside the canvas, whatever the number or length of the model names; panels wrap to at
most three a row; every point that has an interval carries an error bar; reference lines are
legend entries, never free text over the data.
"""

from __future__ import annotations

import itertools
import math
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.figure import Figure

from mmrag.reports.crossed import Y_LIMITS, pooled_over, pooled_sentence
from mmrag.reports.plotkit import (
    OUTCOME_COLORS,
    OUTCOME_LABELS,
    PLOTS,
    STRICTNESS,
    STYLE,
    DrawnFigure,
    PlotSpec,
    color_of,
    drawn,
    failures,
    model_label,
    rate_series,
    register_plot,
    save_figure,
)
from mmrag.reports.tables import CIOptions, rate_ci, strictness_rows
from mmrag.scenarios.kinds import kinds_where


def _one_strictness(df: pd.DataFrame) -> pd.DataFrame:
    if df.empty:
        return df
    level = "none" if (df["strictness"] == "none").any() else df["strictness"].mode().iloc[0]
    return df[df["strictness"] == level]


# -- correct / deflection / hallucination vs distractor count ----------------------------------

CURVE_OUTCOMES = ("correct", "deflection", "hallucination")


def _line_kinds(df: pd.DataFrame) -> list[str]:
    """Kinds drawn as lines over the distractor count: those that show negatives."""
    return kinds_where(lambda k: k.uses_negatives, df["kind"].unique())


def _curve_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of the kinds with negatives, plus gold-only rows as the n = 0 point of the gold +
    negatives line (an oracle is a realistic prompt with no distractors), unless that line has its
    own n = 0 rows."""
    d = _one_strictness(df[df["kind"].isin(kinds_where(lambda k: k.uses_contexts, df["kind"].unique()))])
    if d.empty:
        return d
    d = d.copy()
    gold_lines = kinds_where(lambda k: k.uses_gold and k.uses_negatives, d["kind"].unique())
    gold_only = kinds_where(lambda k: k.uses_gold and not k.uses_negatives, d["kind"].unique())
    target = gold_lines[0] if gold_lines else None
    has_zero = target is not None and ((d["kind"] == target) & (d["n_distractors"] == 0)).any()
    mask = d["kind"].isin(gold_only)
    d.loc[mask, "kind"] = "__drop__" if (target is None or has_zero) else target
    return d[d["kind"] != "__drop__"]


def _curve_applies(df: pd.DataFrame) -> bool:
    d = _curve_rows(df)
    return bool(len(d)) and any(g["n_distractors"].nunique() > 1 for _, g in d.groupby("kind"))


def _rate_lines(d: pd.DataFrame, axis: str, levels: dict[str, Any], opts: CIOptions) -> pd.DataFrame:
    """One ``rate_series`` along ``axis`` per combination of ``levels`` (an ordered mapping of
    ``outcome``, ``model`` and ``kind`` to their values, outermost first): the tidy numbers a figure
    draws, with columns in the levels' order, then ``axis, rate, lo, hi, n``."""
    parts = []
    for combo in itertools.product(*levels.values()):
        key = dict(zip(levels, combo))
        g = d[(d["model"] == key["model"]) & (d["kind"] == key["kind"])]
        if len(g):
            parts.append(rate_series(g, axis, key["outcome"], opts).assign(**key))
    cols = [*levels, axis, "rate", "lo", "hi", "n"]
    return pd.concat(parts, ignore_index=True)[cols] if parts else pd.DataFrame(columns=cols)


def curve_numbers(df: pd.DataFrame, opts: CIOptions = CIOptions()) -> pd.DataFrame:
    """outcome (panel), model, kind (line), n_distractors, rate, lo, hi, n."""
    d = _curve_rows(df)
    levels = {"outcome": CURVE_OUTCOMES, "model": sorted(d["model"].unique()), "kind": _line_kinds(d)}
    return _rate_lines(d, "n_distractors", levels, opts)


def _yerr(s: pd.DataFrame) -> np.ndarray:
    """Asymmetric error bars (below, above) from ``rate``, ``lo``, ``hi``; 0 where there is no interval."""
    rate, lo, hi = (s[c].to_numpy(dtype=float) for c in ("rate", "lo", "hi"))
    return np.nan_to_num(np.vstack([rate - lo, hi - rate]))


def dodge(i: int, n: int, step: float) -> float:
    """x offset of series ``i`` of ``n`` drawn at the same x, so their error bars stay apart."""
    return (i - (n - 1) / 2) * step


def series_label(kind: str, model: str, failed: dict[str, int], width: int = 44) -> str:
    """``kind · model`` wrapped to ``width`` characters, with the model's failure mark."""
    text = "\n".join(textwrap.wrap(f"{kind} · {model}", width)) or f"{kind} · {model}"
    n = failed.get(str(model), 0)
    return f"{text}\n(FAILED: {n} request{'s' if n != 1 else ''})" if n else text


def draw_distractor_curve(df: pd.DataFrame, opts: CIOptions = CIOptions()) -> DrawnFigure:
    """One panel per outcome; a line per model and kind with an error bar (the 95 % CI) on every
    point, a kind with a single distractor count included; series are dodged a little along x."""
    data = curve_numbers(df, opts)
    failed = failures(df)
    models = sorted(data["model"].unique())
    kinds = list(dict.fromkeys(data["kind"]))
    # the n = 0 point is the oracle's unless the run has realistic prompts with no distractors
    gold_lines = kinds_where(lambda k: k.uses_gold and k.uses_negatives, df["kind"].unique())
    oracle_zero = not any(((df["kind"] == k) & (df["n_distractors"] == 0)).any() for k in gold_lines)
    xs = sorted(data["n_distractors"].unique())
    gap = min((b - a for a, b in zip(xs, xs[1:])), default=1)
    series = [(m, k) for m in models for k in kinds]
    step = min(0.06 * max(1.0, float(xs[-1] - xs[0])) if xs else 0.1, 0.5 * gap / max(1, len(series)))
    labels = {(m, k): series_label(k, m, failed) for m, k in series}
    widest = max((len(line) for t in labels.values() for line in t.split("\n")), default=0)
    ncol = max(1, min(len(series), 3 if widest <= 40 else 2))
    legend_h = 0.17 * math.ceil(len(series) / ncol) * max((t.count("\n") + 1 for t in labels.values()), default=1)
    with rc_context(STYLE):
        fig = Figure(figsize=(10, 3.2 + legend_h), layout="constrained")
        axes = fig.subplots(1, len(CURVE_OUTCOMES), sharex=True)
        for ax, outcome in zip(axes, CURVE_OUTCOMES):
            for si, (model, kind) in enumerate(series):
                mi, ki = models.index(model), kinds.index(kind)
                s = data[(data["outcome"] == outcome) & (data["model"] == model) & (data["kind"] == kind)]
                if s.empty:
                    continue
                x = s["n_distractors"].astype(float) + dodge(si, len(series), step)
                ax.errorbar(
                    x,
                    s["rate"].astype(float),
                    yerr=_yerr(s),
                    ls=("-", "--", ":", "-.")[ki % 4],
                    marker="osD^"[ki % 4],
                    ms=4,
                    capsize=2,
                    elinewidth=0.8,
                    color=color_of(mi),
                    label=labels[(model, kind)],
                )
            ax.set_title(OUTCOME_LABELS[outcome])
            ax.set_xlabel("distractors (0 = oracle)" if oracle_zero else "distractors")
            ax.set_ylim(*Y_LIMITS)  # a point at 0 or 100 % and its error cap stay whole
            ax.set_yticks(range(0, 101, 20))
            ax.set_xticks(xs)
        axes[0].set_ylabel("% of all responses (95% CI)")
        handles, texts = axes[0].get_legend_handles_labels()
        fig.legend(handles, texts, loc="outside lower center", ncol=ncol, frameon=False)
        pooled = pooled_over(_curve_rows(df), ["model", "kind", "n_distractors", "strictness"])
        if pooled:  # say what each point averages over, and how to split it
            split = next(iter(pooled))
            fig.suptitle(
                "\n".join(
                    textwrap.wrap(
                        f"Each point pools {pooled_sentence(pooled)}; "
                        f"`mmrag report --by n_distractors,{split}` splits them.",
                        140,
                    )
                ),
                fontsize=8,
            )
    out = drawn(fig, data)
    out.data.attrs["pooled"] = pooled
    return out


# -- positive x negative modality matrix, one panel row per distractor count --------------------

MATRIX_OUTCOMES = ("correct", "deflection", "hallucination")
MATRIX_CMAPS = {"correct": "Greens", "deflection": "Blues", "hallucination": "Oranges"}
_MODALITY_ORDER = ("text", "image", "multimodal", "any")


def _matrix_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of the kinds that show gold and negatives (a positive x negative modality cell)."""
    return _one_strictness(
        df[df["kind"].isin(kinds_where(lambda k: k.uses_gold and k.uses_negatives, df["kind"].unique()))]
    )


def _matrix_applies(df: pd.DataFrame) -> bool:
    d = _matrix_rows(df)
    return bool(len(d)) and any(
        g["negative_modality"].nunique() > 1 or g["positive_modality"].nunique() > 1
        for _, g in d.groupby("n_distractors")
    )


def _ordered(values) -> list[str]:
    present = {v for v in values if isinstance(v, str)}
    return [m for m in _MODALITY_ORDER if m in present] + sorted(present - set(_MODALITY_ORDER))


def matrix_numbers(df: pd.DataFrame, opts: CIOptions = CIOptions(), n_distractors: int | None = None) -> pd.DataFrame:
    """n_distractors (panel row), model, outcome, positive_modality, negative_modality, rate, lo, hi, n:
    one experiment per cell — distractor counts are never pooled."""
    d = _matrix_rows(df)
    if n_distractors is not None:
        d = d[d["n_distractors"] == n_distractors]
    rows = []
    keys = ["n_distractors", "model", "positive_modality", "negative_modality"]
    for (n, model, pos, neg), g in d.groupby(keys, sort=True):
        for outcome in MATRIX_OUTCOMES:
            r, lo, hi = rate_ci(g[outcome].to_numpy(), g["question_id"].to_numpy(), opts)
            rows.append(
                {
                    "n_distractors": int(n),
                    "model": model,
                    "outcome": outcome,
                    "positive_modality": pos,
                    "negative_modality": neg,
                    "rate": r,
                    "lo": lo,
                    "hi": hi,
                    "n": len(g),
                }
            )
    return pd.DataFrame(
        rows,
        columns=[
            "n_distractors",
            "model",
            "outcome",
            "positive_modality",
            "negative_modality",
            "rate",
            "lo",
            "hi",
            "n",
        ],
    )


def matrix_row_label(n: Any, pos: str, counts: list) -> str:
    """A heatmap row: the positive modality, prefixed by the distractor count when there are several."""
    return f"n={n} · {pos}" if len(counts) > 1 else str(pos)


def draw_modality_matrix(
    df: pd.DataFrame, opts: CIOptions = CIOptions(), n_distractors: int | None = None
) -> DrawnFigure:
    """One compact grid per model and outcome (correct, deflection, hallucination): rows are the
    distractor count x positive modality, columns the negative modality, each cell one experiment
    with its rate, interval and size.  Three panels a row (one row per model), each outcome with
    its own colour scale (a colorbar under its column): a sweep over five counts and four
    modalities is one page, not a stack of heatmap pairs."""
    data = matrix_numbers(df, opts, n_distractors)
    failed = failures(df)
    pos, neg = _ordered(data["positive_modality"]), _ordered(data["negative_modality"])
    counts = sorted(data["n_distractors"].unique())
    models = sorted(data["model"].unique()) or [None]
    ys: list[tuple[Any, Any]] = [(n, p) for n in counts for p in pos] or [(None, None)]
    titles = {(m, o): f"{model_label(m, failed)}\n{OUTCOME_LABELS[o]}" for m in models for o in MATRIX_OUTCOMES}
    longest = max((len(line) for t in titles.values() for line in t.split("\n")), default=10)
    title_lines = max((t.count("\n") + 1 for t in titles.values()), default=2)
    ylabel_w = 0.06 * max((len(matrix_row_label(n, p, counts)) for n, p in ys), default=4)
    panel_w = max(0.72 * len(neg) + 0.3, 0.072 * longest + 0.2)
    panel_h = 0.36 * len(ys) + 0.45 + 0.17 * title_lines
    with rc_context(STYLE):
        fig = Figure(
            figsize=(0.9 + ylabel_w + panel_w * len(MATRIX_OUTCOMES), 1.1 + panel_h * len(models)),
            layout="constrained",
        )
        axes = fig.subplots(len(models), len(MATRIX_OUTCOMES), squeeze=False)
        images = {}
        for ri, model in enumerate(models):
            for ci, outcome in enumerate(MATRIX_OUTCOMES):
                ax = axes[ri, ci]
                cells = data[(data["model"] == model) & (data["outcome"] == outcome)]
                mat = np.full((len(ys), len(neg)), np.nan)
                for _, c in cells.iterrows():
                    mat[ys.index((c["n_distractors"], c["positive_modality"])), neg.index(c["negative_modality"])] = c[
                        "rate"
                    ]
                images[outcome] = ax.imshow(mat, vmin=0, vmax=100, aspect="auto", cmap=MATRIX_CMAPS[outcome])
                for i, (n, p) in enumerate(ys):
                    for j, q in enumerate(neg):
                        c = cells[
                            (cells["n_distractors"] == n)
                            & (cells["positive_modality"] == p)
                            & (cells["negative_modality"] == q)
                        ]
                        txt = "n/a" if c.empty else matrix_cell_text(c.iloc[0])
                        dark = not np.isnan(mat[i, j]) and mat[i, j] > 60
                        ax.text(j, i, txt, ha="center", va="center", fontsize=6.5, color="white" if dark else "black")
                ax.set_xticks(range(len(neg)), neg)
                ax.set_yticks(range(len(ys)), [matrix_row_label(n, p, counts) for n, p in ys] if ci == 0 else [])
                for k in range(1, len(counts)):  # a rule between distractor counts
                    ax.axhline(k * len(pos) - 0.5, color="white", lw=1.5)
                ax.grid(False)
                if model is not None:
                    ax.set_title(titles[(model, outcome)])
                if ri == len(models) - 1:
                    ax.set_xlabel("negative modality")
                if ci == 0:
                    ax.set_ylabel("distractors · positive modality" if len(counts) > 1 else "positive modality")
        for ci, outcome in enumerate(MATRIX_OUTCOMES):
            if outcome in images:
                fig.colorbar(
                    images[outcome],
                    ax=axes[-1, ci],
                    location="bottom",
                    shrink=0.8,
                    aspect=25,
                    pad=0.02,
                    label=OUTCOME_LABELS[outcome],
                )
    return drawn(fig, data)


def matrix_cell_text(c: Any) -> str:
    """``rate [lo–hi]`` and the cell's size, as the heatmap prints it."""
    return f"{c['rate']:.0f} [{c['lo']:.0f}–{c['hi']:.0f}]\nn={c['n']}"


# -- strictness trade-off ----------------------------------------------------------------------

STRICT_OUTCOMES = (("correct", "o"), ("deflection", "s"), ("hallucination", "^"))


def _strict_kinds(df: pd.DataFrame) -> list[str]:
    d = strictness_rows(df)
    return kinds_where(lambda k: True, d["kind"].unique())


def strictness_numbers(df: pd.DataFrame, opts: CIOptions = CIOptions()) -> pd.DataFrame:
    """model (panel row), kind (panel column), outcome (line), strictness, rate, lo, hi, n."""
    d = strictness_rows(df)
    levels = {
        "model": sorted(d["model"].unique()),
        "kind": _strict_kinds(df),
        "outcome": [outcome for outcome, _ in STRICT_OUTCOMES],
    }
    return _rate_lines(d, "strictness", levels, opts)


def draw_strictness(df: pd.DataFrame, opts: CIOptions = CIOptions()) -> DrawnFigure:
    """Rows: models; columns: scenario kinds; one line per outcome across the strictness levels."""
    data = strictness_numbers(df, opts)
    failed = failures(df)
    kinds = _strict_kinds(df)
    models = sorted(data["model"].unique())
    with rc_context(STYLE):
        fig = Figure(figsize=(3.2 * len(kinds) + 0.8, 2.6 * len(models) + 0.6), layout="constrained")
        axes = fig.subplots(len(models), len(kinds), sharey=True, squeeze=False)
        for mi, model in enumerate(models):
            for ki, kind in enumerate(kinds):
                ax = axes[mi, ki]
                levels = [s for s in STRICTNESS if s in set(data.loc[data["kind"] == kind, "strictness"])]
                x = np.arange(len(levels))
                for oi, (outcome, marker) in enumerate(STRICT_OUTCOMES):
                    s = data[(data["model"] == model) & (data["kind"] == kind) & (data["outcome"] == outcome)]
                    s = s.set_index("strictness").reindex(levels)
                    ax.errorbar(
                        x + dodge(oi, len(STRICT_OUTCOMES), 0.06),
                        s["rate"].astype(float),
                        yerr=_yerr(s),
                        marker=marker,
                        ms=4,
                        capsize=2,
                        elinewidth=0.8,
                        color=OUTCOME_COLORS[outcome],
                        label=OUTCOME_LABELS[outcome],
                    )
                ax.set_xticks(x, levels)
                ax.set_ylim(*Y_LIMITS)
                ax.set_yticks(range(0, 101, 20))
                ax.set_title(kind if mi == 0 else "")
                if mi == len(models) - 1:
                    ax.set_xlabel("prompt strictness")
            axes[mi, 0].set_ylabel(f"{model_label(model, failed, 20)}\n% of all responses")
        handles, labels = axes[0, 0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncol=3, frameon=False)
    return drawn(fig, data)


register_plot(
    PlotSpec(
        "distractor_curve",
        "correct, deflection and hallucination (% of all responses) vs distractor count",
        _curve_applies,
        draw_distractor_curve,
    )
)
register_plot(
    PlotSpec(
        "modality_matrix",
        "Positive x negative modality (realistic scenario): correct, deflection, hallucination per distractor count",
        _matrix_applies,
        draw_modality_matrix,
    )
)
register_plot(PlotSpec("strictness", "Strictness trade-off", lambda df: bool(_strict_kinds(df)), draw_strictness))

# the benchmark-family figures register themselves on import (after these, to keep report order)
from mmrag.reports import plots_family  # noqa: E402,F401


def make_plots(
    df: pd.DataFrame, out_dir: str | Path, opts: CIOptions = CIOptions(), names: list[str] | None = None
) -> dict[str, list[Path]]:
    """Draw and save every applicable figure (or those ``names``); ``{name: [png, svg, csv]}`` — the
    CSV holds the numbers the figure draws (``DrawnFigure.data``)."""
    from mmrag.reports.render import write_csv

    out: dict[str, list[Path]] = {}
    for name in names if names is not None else list(PLOTS):
        spec = PLOTS[name]
        if not spec.applies(df):
            continue
        fig = spec.draw(df, opts)
        out[name] = [*save_figure(fig, out_dir, name), write_csv(fig.data, Path(out_dir) / f"{name}.csv")]
    return out
