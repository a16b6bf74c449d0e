"""Shared pieces of the report figures: the plot registry, style, palette, saving, rate series.

Kept apart from the figures so that :mod:`mmrag.reports.plots` and
:mod:`mmrag.reports.plots_family` both build on it without importing each other.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pandas as pd
from matplotlib import rc_context
from matplotlib.figure import Figure

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

from mmrag.metrics.rates import RATES, header
from mmrag.reports.tables import CIOptions, rate_ci
from mmrag.util import atomic_write_bytes

#: Okabe-Ito: distinguishable with the common colour-vision deficiencies and in greyscale print.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")
OUTCOME_COLORS = {"correct": "#009E73", "deflection": "#0072B2", "hallucination": "#D55E00", "unparseable": "#999999"}
#: panel titles: the rate's one name and its denominator (mmrag.metrics.rates)
OUTCOME_LABELS = {r.id: header(r.id) for r in RATES}
STRICTNESS = ("none", "soft", "moderate", "severe")
STYLE: dict[RcKeyType, Any] = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "svg.hashsalt": "mmrag",
    "svg.fonttype": "none",
}


class DrawnFigure(Figure):
    """A figure that carries the numbers it draws (``.data``, a tidy DataFrame: one row per drawn
    value with its interval), so a test or a reader checks what is plotted, not that something is."""

    data: pd.DataFrame


def drawn(fig: Figure, data: pd.DataFrame) -> DrawnFigure:
    fig.__class__ = DrawnFigure
    out = cast(DrawnFigure, fig)
    out.data = data.reset_index(drop=True)
    return out


@dataclass(frozen=True)
class PlotSpec:
    name: str
    title: str
    applies: Callable[[pd.DataFrame], bool]
    draw: Callable[[pd.DataFrame, CIOptions], DrawnFigure]


PLOTS: dict[str, PlotSpec] = {}


def register_plot(spec: PlotSpec) -> PlotSpec:
    PLOTS[spec.name] = spec
    return spec


def failures(df: pd.DataFrame) -> dict[str, int]:
    """Failed requests per model (``error`` set): a model with failures is marked in every figure,
    because its rates count those rows as unparseable and are not comparable at face value."""
    if "error" not in df.columns or df.empty:
        return {}
    failed = df[df["error"].notna() & (df["error"].astype(str) != "")]
    return {str(m): int(n) for m, n in failed.groupby("model").size().items()}


def model_label(model: str, failed: dict[str, int], width: int = 28) -> str:
    """The model name, wrapped to ``width`` characters, with ``(FAILED: N requests)`` when it had failures."""
    name = "\n".join(textwrap.wrap(str(model), width)) or str(model)
    n = failed.get(str(model), 0)
    return f"{name}\n(FAILED: {n} request{'s' if n != 1 else ''})" if n else name


def color_of(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def save_figure(fig: Figure, out_dir: str | Path, stem: str, dpi: int = 150) -> list[Path]:
    """``stem.png`` and ``stem.svg``, each written atomically."""
    out_dir = Path(out_dir)
    paths = []
    for fmt, meta in (("png", {"Software": None}), ("svg", {"Date": None, "Creator": None})):
        buf = io.BytesIO()
        with rc_context(STYLE):
            fig.savefig(buf, format=fmt, dpi=dpi, metadata=meta)  # constrained layout already fits the legend
        path = out_dir / f"{stem}.{fmt}"
        atomic_write_bytes(path, buf.getvalue())
        paths.append(path)
    return paths


def rate_series(df: pd.DataFrame, by: str, outcome: str, opts: CIOptions) -> pd.DataFrame:
    """``by``, ``rate``, ``lo``, ``hi`` (percent) per value of ``by``, sorted by it."""
    rows = []
    for key, g in df.groupby(by, sort=True):
        r, lo, hi = rate_ci(g[outcome].to_numpy(), g["question_id"].to_numpy(), opts)
        rows.append({by: key, "rate": r, "lo": lo, "hi": hi, "n": len(g)})
    return pd.DataFrame(rows, columns=[by, "rate", "lo", "hi", "n"])
