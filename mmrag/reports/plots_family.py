"""Figures of the no-context benchmark families: HumbleBench's stress panel, KnowHal's dimensions.

Both read the numbers of :mod:`mmrag.reports.family` (so a figure and its table can never
disagree) and draw grouped bars with the table's clustered bootstrap intervals as error bars; the
returned figure's ``.data`` holds exactly the bars drawn (one row per bar).
The HumbleBench panel draws the paper's 20 % random-guess line on the accuracy axes, named in the
legend (a free label would sit on the bars); long stress names wrap onto lines at their ``_`` / ``+``
joints instead of being rotated, so tick labels never collide or leave the figure.
"""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.figure import Figure

from mmrag.benchmarks.family import HUMBLEBENCH, KNOWHAL
from mmrag.reports.family import humblebench_panel, knowhal_table
from mmrag.reports.plotkit import STYLE, DrawnFigure, PlotSpec, color_of, drawn, failures, model_label, register_plot
from mmrag.reports.tables import CIOptions

HB_METRICS = (
    ("correct", "correct % all"),
    ("nota_share", "NOTA chosen (share)"),
    ("nota_hit_rate", "NOTA chosen when NOTA is gold"),
    ("non_nota_accuracy", "Accuracy, non-NOTA gold"),
)
#: KnowHal's dimensions as :mod:`mmrag.metrics.knowhal` names them (Entity, Attribute, Relation, Knowledge)
DIMENSION_ORDER = ("E", "A", "R", "K", "Entity", "Attribute", "Relation", "Knowledge")
_STRESS_ORDER = ("common", "noise_image", "nota_only", "shuffle_options", "cautious_prompt", "forced_grounding_prompt")


def wrap_name(name: str, width: int = 12) -> str:
    """A tick label in lines of at most ``width`` characters: a new line for each setting of a
    combination (``noise_image+forced_grounding_prompt``, ``noise_image__cautious_prompt``), and
    within a setting after ``_`` or ``-`` (a word longer than ``width`` keeps its own line)."""
    lines: list[str] = []
    settings = re.split(r"(?<=\+)|(?=__)", str(name))
    for setting in filter(None, settings):
        start = len(lines)
        for part in re.findall(r"[^_\-]+[_\-]*|[_\-]+", setting) or [setting]:
            if len(lines) > start and len(lines[-1]) + len(part) <= width:
                lines[-1] += part
            else:
                lines.append(part)
    return "\n".join(lines)


def _bars(
    ax,
    table: pd.DataFrame,
    x_col: str,
    x_values: list[str],
    group_col: str,
    groups: list[str],
    metric: str,
    colors: list[str],
    labels: list[str] | None = None,
) -> None:
    """Grouped bars of ``metric`` with ``metric_lo`` / ``metric_hi`` error bars."""
    width = 0.8 / max(1, len(groups))
    x = np.arange(len(x_values))
    for gi, grp in enumerate(groups):
        t = table[table[group_col] == grp].set_index(x_col).reindex(x_values)
        val = t[metric].to_numpy(dtype=float)
        err = np.vstack([val - t[f"{metric}_lo"].to_numpy(dtype=float), t[f"{metric}_hi"].to_numpy(dtype=float) - val])
        ax.bar(
            x - 0.4 + width * (gi + 0.5),
            np.nan_to_num(val),
            width,
            yerr=np.nan_to_num(err),
            capsize=2,
            color=colors[gi],
            label=(labels or groups)[gi],
            error_kw={"lw": 0.8},
        )
    ax.set_xticks(x, [wrap_name(v) for v in x_values])


def _hb_applies(df: pd.DataFrame) -> bool:
    hb = df[df["benchmark_kind"] == HUMBLEBENCH.id]
    return bool(len(hb)) and hb["stress"].nunique() > 1


def _long(t: pd.DataFrame, keys: list[str], metrics: list[str], name: str = "metric") -> pd.DataFrame:
    """One row per (keys, metric): the value drawn and its interval."""
    return pd.concat(
        [t[keys].assign(**{name: m, "rate": t[m], "lo": t[f"{m}_lo"], "hi": t[f"{m}_hi"]}) for m in metrics],
        ignore_index=True,
    )


def draw_humblebench_stress(df: pd.DataFrame, opts: CIOptions = CIOptions()) -> DrawnFigure:
    t = humblebench_panel(df, opts)
    failed = failures(df)
    if t["benchmark"].nunique() > 1:  # several HumbleBench-kind benchmarks: keep them apart
        t = t.assign(model=t["benchmark"] + " · " + t["model"])
    t = t.assign(model=[model_label(m, failed, 60).replace("\n", " ") for m in t["model"]])
    stresses = [s for s in _STRESS_ORDER if s in set(t["stress"])] + sorted(set(t["stress"]) - set(_STRESS_ORDER))
    models = sorted(t["model"].unique())
    with rc_context(STYLE):
        widest = max((len(line) for s in stresses for line in wrap_name(s).split("\n")), default=8)
        fig = Figure(
            figsize=(max(7.0, 2 * len(stresses) * max(0.85, 0.065 * widest + 0.1) + 1.0), 5.8), layout="constrained"
        )
        axes = fig.subplots(2, 2, sharex=True).ravel()
        for ax, (metric, title) in zip(axes, HB_METRICS):
            _bars(
                ax,
                t,
                "stress",
                stresses,
                "model",
                models,
                metric,
                [color_of(i) for i in range(len(models))],
                ["\n".join(textwrap.wrap(m, 48)) for m in models],
            )
            ax.set_title(title)
            ax.set_ylim(0, 106)  # room for the error cap of a bar at 100 %
            ax.set_yticks(range(0, 101, 20))
            if metric in ("correct", "non_nota_accuracy"):
                ax.axhline(20, color="grey", ls=":", lw=1, label="random guess (20 %)")
        axes[0].set_ylabel("% (95% CI)")
        axes[2].set_ylabel("% (95% CI)")
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncol=min(3, len(labels)), frameon=False)
    return drawn(fig, _long(t, ["model", "stress", "n"], [m for m, _ in HB_METRICS]))


def _kh_applies(df: pd.DataFrame) -> bool:
    kh = df[df["benchmark_kind"] == KNOWHAL.id]
    return bool(len(kh)) and {"positive", "negative"} <= set(kh["polarity"].dropna())


def draw_knowhal(df: pd.DataFrame, opts: CIOptions = CIOptions()) -> DrawnFigure:
    """Per model: positive vs negative accuracy per dimension and pooled, HPS above each group."""
    t = knowhal_table(df, opts)
    failed = failures(df)
    if t["benchmark"].nunique() > 1:
        t = t.assign(model=t["benchmark"] + " · " + t["model"])
    models = sorted(t["model"].unique())
    present = [d for d in t["dimension"].unique() if d not in ("macro", "pooled")]
    dims = [d for d in DIMENSION_ORDER if d in present] + sorted(set(present) - set(DIMENSION_ORDER)) + ["pooled"]
    long = pd.concat(
        [
            t.assign(polarity=p, acc=t[f"acc_{s}"], acc_lo=t[f"acc_{s}_lo"], acc_hi=t[f"acc_{s}_hi"])
            for p, s in (("positive", "pos"), ("negative", "neg"))
        ],
        ignore_index=True,
    )
    with rc_context(STYLE):
        title_w = 0.075 * max((len(line) for m in models for line in model_label(m, failed, 48).split("\n")), default=0)
        fig = Figure(figsize=(max(4.5, 1.3 * len(dims), title_w + 2.0), 3.2 * len(models) + 0.5), layout="constrained")
        axes = np.atleast_1d(fig.subplots(len(models), 1, sharex=True, squeeze=False)[:, 0])
        for ax, model in zip(axes, models):
            lm = long[long["model"] == model]
            _bars(
                ax,
                lm,
                "dimension",
                dims,
                "polarity",
                ["positive", "negative"],
                "acc",
                ["#0072B2", "#D55E00"],
                ["positive questions", "negative (false premise)"],
            )
            tm = t[t["model"] == model].set_index("dimension")
            for i, dim in enumerate(dims):
                hps = tm.loc[dim, "hps"]
                top = np.nanmax([tm.loc[dim, "acc_pos_hi"], tm.loc[dim, "acc_neg_hi"], 0.0])
                ax.text(
                    i,
                    min(top + 3, 104),
                    "HPS n/a" if pd.isna(hps) else f"HPS {hps:.0f}",
                    ha="center",
                    va="bottom",
                    fontsize=7,
                )
            ax.set_ylim(0, 115)
            ax.set_yticks(range(0, 101, 20))
            macro = tm.loc["macro"]
            ax.set_title(
                f"KnowHal · {model_label(model, failed, 48)}\nmacro: overall {macro['overall']:.1f}, HPS "
                f"{'n/a' if pd.isna(macro['hps']) else format(macro['hps'], '.1f')}"
            )
            ax.set_ylabel("accuracy % (95% CI)")
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncol=2, frameon=False)
    bars = long[long["dimension"].isin(dims)]
    data = bars[["model", "dimension", "polarity", "acc", "acc_lo", "acc_hi", "hps"]].rename(
        columns={"acc": "rate", "acc_lo": "lo", "acc_hi": "hi"}
    )
    return drawn(fig, data)


register_plot(PlotSpec("humblebench_stress", "HumbleBench stress settings", _hb_applies, draw_humblebench_stress))
register_plot(
    PlotSpec("knowhal", "KnowHal per dimension and polarity (HPS above each group)", _kh_applies, draw_knowhal)
)
