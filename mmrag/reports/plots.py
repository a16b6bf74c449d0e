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

Pooling choices (documented in docs/reports.md): the distractor curve and the modality matrix use
the ``none`` strictness prompts when present (else the most frequent level), so that a strictness
sweep in the same run does not blur them; the distractor curve pools positive and negative
modalities, and draws the oracle scenario as the realistic line's n = 0 point (gold evidence, no
distractors) unless the run has realistic prompts with n = 0 itself.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.figure import Figure

from mmrag.reports.plotkit import (OUTCOME_COLORS, OUTCOME_LABELS, PLOTS, STRICTNESS, STYLE, PlotSpec, color_of,
                                   rate_series, register_plot, save_figure)
from mmrag.reports.tables import CIOptions, rate_ci, strictness_rows

def _one_strictness(df: pd.DataFrame) -> pd.DataFrame:
    if df.empty:
        return df
    level = "none" if (df["strictness"] == "none").any() else df["strictness"].mode().iloc[0]
    return df[df["strictness"] == level]


# -- accuracy / deflection / hallucination vs distractor count ---------------------------------

def _curve_rows(df: pd.DataFrame) -> pd.DataFrame:
    d = _one_strictness(df[(df["benchmark_kind"] == "deflection") & df["kind"].isin(["oracle", "realistic", "adversarial"])])
    if d.empty:
        return d
    d = d.copy()
    has_real0 = ((d["kind"] == "realistic") & (d["n_distractors"] == 0)).any()
    # oracle = realistic with no distractors: the n = 0 point of the realistic line
    d.loc[d["kind"] == "oracle", "kind"] = "__drop__" if has_real0 else "realistic"
    return d[d["kind"] != "__drop__"]


def _curve_applies(df: pd.DataFrame) -> bool:
    d = _curve_rows(df)
    return bool(len(d)) and any(g["n_distractors"].nunique() > 1 for _, g in d.groupby("kind"))


def draw_distractor_curve(df: pd.DataFrame, opts: CIOptions = CIOptions()) -> Figure:
    d = _curve_rows(df)
    outcomes = ("correct", "deflection", "hallucination")
    with rc_context(STYLE):
        fig = Figure(figsize=(10, 3.2), layout="constrained")
        axes = fig.subplots(1, 3, sharex=True)
        models = sorted(d["model"].unique())
        for ax, outcome in zip(axes, outcomes):
            for mi, model in enumerate(models):
                for kind, ls, marker in (("realistic", "-", "o"), ("adversarial", "--", "s")):
                    g = d[(d["model"] == model) & (d["kind"] == kind)]
                    if g["n_distractors"].nunique() < 1:
                        continue
                    s = rate_series(g, "n_distractors", outcome, opts)
                    ax.plot(s["n_distractors"], s["rate"], ls=ls, marker=marker, ms=4, color=color_of(mi),
                            label=f"{model} · {kind}")
                    ax.fill_between(s["n_distractors"].astype(float), s["lo"], s["hi"], color=color_of(mi), alpha=0.15, lw=0)
            ax.set_title(OUTCOME_LABELS[outcome])
            ax.set_xlabel("distractors (0 = oracle)")
            ax.set_ylim(0, 100)
            ax.set_xticks(sorted(d["n_distractors"].unique()))
        axes[0].set_ylabel("% of samples (95% CI)")
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncol=min(4, len(labels)), frameon=False)
    return fig


# -- positive x negative modality matrix -------------------------------------------------------

def _matrix_rows(df: pd.DataFrame) -> pd.DataFrame:
    return _one_strictness(df[(df["benchmark_kind"] == "deflection") & (df["kind"] == "realistic")])


def _matrix_applies(df: pd.DataFrame) -> bool:
    d = _matrix_rows(df)
    return bool(len(d)) and (d["negative_modality"].nunique() > 1 or d["positive_modality"].nunique() > 1)


def draw_modality_matrix(df: pd.DataFrame, opts: CIOptions = CIOptions()) -> Figure:
    d = _matrix_rows(df)
    order = ["text", "image", "multimodal", "any"]
    pos = [m for m in order if m in set(d["positive_modality"])] or sorted(d["positive_modality"].dropna().unique())
    neg = [m for m in order if m in set(d["negative_modality"])] or sorted(d["negative_modality"].dropna().unique())
    models = sorted(d["model"].unique())
    outcomes = ("correct", "hallucination")
    with rc_context(STYLE):
        fig = Figure(figsize=(1.6 + 2.2 * len(neg) * len(models) / 1.5, 1.2 + 1.5 * len(pos) * len(outcomes)),
                     layout="constrained")
        axes = np.atleast_2d(fig.subplots(len(outcomes), len(models), squeeze=False))
        for oi, outcome in enumerate(outcomes):
            cmap = "Greens" if outcome == "correct" else "Oranges"
            for mi, model in enumerate(models):
                ax = axes[oi, mi]
                mat = np.full((len(pos), len(neg)), np.nan)
                notes = [["" for _ in neg] for _ in pos]
                for (p, n), g in d[d["model"] == model].groupby(["positive_modality", "negative_modality"]):
                    if p in pos and n in neg:
                        r, lo, hi = rate_ci(g[outcome].to_numpy(), g["question_id"].to_numpy(), opts)
                        mat[pos.index(p), neg.index(n)] = r
                        notes[pos.index(p)][neg.index(n)] = f"{r:.0f}\n[{lo:.0f}–{hi:.0f}]\nn={len(g)}"
                im = ax.imshow(mat, vmin=0, vmax=100, cmap=cmap, aspect="auto")
                for i in range(len(pos)):
                    for j in range(len(neg)):
                        txt = notes[i][j] or "n/a"
                        dark = not np.isnan(mat[i, j]) and mat[i, j] > 60
                        ax.text(j, i, txt, ha="center", va="center", fontsize=8, color="white" if dark else "black")
                ax.set_xticks(range(len(neg)), neg)
                ax.set_yticks(range(len(pos)), pos)
                ax.grid(False)
                ax.set_xlabel("negative modality")
                if mi == 0:
                    ax.set_ylabel("positive modality")
                ax.set_title(f"{OUTCOME_LABELS[outcome]} · {model}")
            fig.colorbar(im, ax=list(axes[oi, :]), shrink=0.8, label="%")
    return fig


# -- strictness trade-off ----------------------------------------------------------------------

def _strict_kinds(df: pd.DataFrame) -> list[str]:
    d = strictness_rows(df)
    return [k for k in ("parametric", "oracle", "realistic", "adversarial") if (d["kind"] == k).any()]


def draw_strictness(df: pd.DataFrame, opts: CIOptions = CIOptions()) -> Figure:
    """Rows: models; columns: scenario kinds; one line per outcome across the strictness levels."""
    d = strictness_rows(df)
    kinds = _strict_kinds(df)
    models = sorted(d["model"].unique())
    with rc_context(STYLE):
        fig = Figure(figsize=(3.0 * len(kinds) + 0.6, 2.5 * len(models) + 0.6), layout="constrained")
        axes = fig.subplots(len(models), len(kinds), sharey=True, squeeze=False)
        for mi, model in enumerate(models):
            for ki, kind in enumerate(kinds):
                ax = axes[mi, ki]
                g = d[(d["kind"] == kind) & (d["model"] == model)]
                levels = [s for s in STRICTNESS if s in set(d.loc[d["kind"] == kind, "strictness"])]
                x = np.arange(len(levels))
                for outcome, marker in (("correct", "o"), ("deflection", "s"), ("hallucination", "^")):
                    s = rate_series(g, "strictness", outcome, opts).set_index("strictness").reindex(levels)
                    ax.plot(x, s["rate"], marker=marker, ms=4, color=OUTCOME_COLORS[outcome], label=OUTCOME_LABELS[outcome])
                    ax.fill_between(x, s["lo"].astype(float), s["hi"].astype(float), alpha=0.15, lw=0,
                                    color=OUTCOME_COLORS[outcome])
                ax.set_xticks(x, levels)
                ax.set_ylim(0, 100)
                ax.set_title(f"{kind} · {model}")
                if mi == len(models) - 1:
                    ax.set_xlabel("prompt strictness")
            axes[mi, 0].set_ylabel("% of samples (95% CI)")
        handles, labels = axes[0, 0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncol=3, frameon=False)
    return fig


register_plot(PlotSpec("distractor_curve", "Accuracy, deflection and hallucination vs distractor count",
                       _curve_applies, draw_distractor_curve))
register_plot(PlotSpec("modality_matrix", "Positive x negative modality (realistic scenario)",
                       _matrix_applies, draw_modality_matrix))
register_plot(PlotSpec("strictness", "Strictness trade-off", lambda df: bool(_strict_kinds(df)), draw_strictness))

# the benchmark-family figures register themselves on import (after these, to keep report order)
from mmrag.reports import plots_family  # noqa: E402,F401


def make_plots(df: pd.DataFrame, out_dir: str | Path, opts: CIOptions = CIOptions(),
               names: list[str] | None = None) -> dict[str, list[Path]]:
    """Draw and save every applicable figure (or those ``names``); ``{name: [png, svg]}``."""
    out: dict[str, list[Path]] = {}
    for name in names if names is not None else list(PLOTS):
        spec = PLOTS[name]
        if not spec.applies(df):
            continue
        fig = spec.draw(df, opts)
        out[name] = save_figure(fig, out_dir, name)
    return out
