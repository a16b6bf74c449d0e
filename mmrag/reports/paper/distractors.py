"""VLM-DeflectionBench Figure 3: accuracy, deflection and hallucination as hard negatives are added.

Each point is what it is: the realistic scenario at 1, 2, 4 and 8 negatives is one line per
model, and the oracle (gold only) is its own point at x = 0, labelled "oracle", never a realistic
prompt with no negatives.  Both run at the strictness of Table 4 (preset
``distractor-curve-paper``), so the n = 2 point and the oracle are Table 4's cells.  The paper's
text gives no number of Figure 3, but its Table 4 gives the oracle and the realistic (2 negatives)
values of its models: those are drawn as markers labelled "published (Table 4)", without
intervals (the paper gives none).
"""

from __future__ import annotations

import pandas as pd
from matplotlib import rc_context
from matplotlib.figure import Figure

from mmrag.reports.paper import Context
from mmrag.reports.paper.cells import TRIPLE
from mmrag.reports.paper.published import ORIGIN, OURS, PUBLISHED, table_rows
from mmrag.reports.plotkit import OUTCOME_LABELS, STYLE, color_of, drawn
from mmrag.reports.tables import rate_ci

PRESET = "distractor-curve-paper"
#: x of the oracle point, and the published realistic point (Table 4 fixes 2 negatives)
ORACLE_X, TABLE_4_NEGATIVES = 0, 2
PUBLISHED_MARKERS = ("X", "P", "*", "D", "v", "^")


def curve_data(ctx: Context, data_file: str) -> pd.DataFrame:
    """origin, model, point (realistic / oracle), n_distractors, outcome, rate, lo, hi, n."""
    d = ctx.rows((PRESET,))
    rows = []
    for (model, kind, nd), g in d.groupby(["model", "kind", "n_distractors"], sort=True):
        x = ORACLE_X if kind == "oracle" else int(nd)
        for _short, outcome in TRIPLE:
            rate, lo, hi = rate_ci(g[outcome].to_numpy(dtype=float), g["question_id"].to_numpy(), ctx.opts)
            rows.append(
                {ORIGIN: OURS, "model": model, "point": kind, "n_distractors": x, "outcome": outcome}
                | {"rate": rate, "lo": lo, "hi": hi, "n": len(g)}
            )
    for pub in table_rows(data_file, "table_4")[1]:
        for kind, x in (("oracle", ORACLE_X), ("realistic", TABLE_4_NEGATIVES)):
            for short, outcome in TRIPLE:
                v = pub.get(f"{kind}_{short}")
                if isinstance(v, (int, float)):
                    rows.append(
                        {ORIGIN: PUBLISHED, "model": pub["model"], "point": kind, "n_distractors": x}
                        | {"outcome": outcome, "rate": float(v), "lo": float("nan"), "hi": float("nan"), "n": None}
                    )
    cols = [ORIGIN, "model", "point", "n_distractors", "outcome", "rate", "lo", "hi", "n"]
    return pd.DataFrame(rows, columns=cols)


def _err(s: pd.DataFrame):
    return [(s["rate"] - s["lo"]).clip(lower=0).fillna(0), (s["hi"] - s["rate"]).clip(lower=0).fillna(0)]


def draw(ctx: Context, data_file: str):
    """Three panels (correct, deflection, hallucination); see the module docstring."""
    data = curve_data(ctx, data_file)
    ours = data[data[ORIGIN] == OURS]
    theirs = data[data[ORIGIN] == PUBLISHED]
    models = sorted(ours["model"].unique())
    paper_models = list(dict.fromkeys(theirs["model"]))
    xs = sorted(set(ours["n_distractors"]) | {ORACLE_X})
    n_entries = 2 * len(models) + len(paper_models)
    rows_of_legend = -(-n_entries // 3)
    with rc_context(STYLE):
        fig = Figure(figsize=(10, 3.4 + 0.22 * rows_of_legend), layout="constrained")
        axes = fig.subplots(1, len(TRIPLE), sharex=True)
        for ax, (_short, outcome) in zip(axes, TRIPLE):
            for i, m in enumerate(models):
                mine = ours[(ours["model"] == m) & (ours["outcome"] == outcome)]
                real = mine[mine["point"] == "realistic"].sort_values("n_distractors")
                orc = mine[mine["point"] == "oracle"]
                ax.errorbar(
                    real["n_distractors"], real["rate"], yerr=_err(real), marker="o", ms=4, capsize=2,
                    elinewidth=0.8, color=color_of(i), label=f"realistic · {m}",
                )  # fmt: skip
                ax.errorbar(
                    orc["n_distractors"], orc["rate"], yerr=_err(orc), marker="s", ms=5, capsize=2, ls="none",
                    elinewidth=0.8, color=color_of(i), label=f"oracle · {m}",
                )  # fmt: skip
            for j, m in enumerate(paper_models):
                s = theirs[(theirs["model"] == m) & (theirs["outcome"] == outcome)]
                ax.plot(
                    s["n_distractors"] + 0.15, s["rate"], ls="none", marker=PUBLISHED_MARKERS[j % 6], ms=5,
                    color="#555555", mfc="none", label=f"published (Table 4) · {m}",
                )  # fmt: skip
            ax.set_title(OUTCOME_LABELS[outcome])
            ax.set_ylim(0, 100)
            ax.set_xticks(xs, ["oracle" if x == ORACLE_X else str(x) for x in xs])
            ax.set_xlabel("hard negatives (1, 2, 4, 8: mmrag's choice)")
        axes[0].set_ylabel("% of all responses (95% CI)")
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncol=3, frameon=False)
    return drawn(fig, data)
