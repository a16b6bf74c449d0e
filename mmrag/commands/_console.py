"""Shared console pieces for the CLI: the results table and flag helpers (the live progress display is :mod:`mmrag.display`, which the library draws too)."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console, RenderableType
from rich.table import Table

from mmrag.display import TimeColumn, err_console, progress_bar, run_rate  # noqa: F401 - the commands' names
from mmrag.metrics.rates import RATES
from mmrag.scenarios.kinds import scenario_label

#: a pipe or CI log is not a terminal: give tables room instead of rich's 80-column default
console = Console(width=None if sys.stdout.isatty() else 140)


def results_table(summary: dict[str, Any], title: str = "Results") -> RenderableType:
    """Rates per benchmark, scenario and model.  Long model names get short unique labels
    (:func:`mmrag.reports.render.short_labels`), spelled out in a legend under the table, and the
    model column is never squeezed below its longest label."""
    from mmrag.reports.render import short_labels, with_legend

    labels = short_labels(g["model"] for g in summary["groups"])
    t = Table(title=title)
    for col in ("benchmark", "scenario", "model", "n"):
        # the other columns wrap (at spaces first) where rich would cut them to "orac…"
        is_model = col == "model"
        t.add_column(
            col,
            justify="right" if col == "n" else "left",
            overflow="fold",
            no_wrap=is_model,
            min_width=max(map(len, labels.values()), default=5) if is_model else None,
        )
    for rate in RATES:
        t.add_column(rate.header, justify="right", overflow="fold", min_width=5)
    # coverage: the share of replies the judge put in one of the three classes (docs/judging.md)
    t.add_column("coverage %", justify="right", overflow="fold", min_width=5)
    for g in summary["groups"]:
        r = g["rates"]
        scen = scenario_label(g["scenario"])
        unparseable = r.get("unparseable")
        t.add_row(
            g["benchmark"],
            scen,
            labels[str(g["model"])],
            str(g["n"]),
            *("—" if r[x.id] is None else f"{r[x.id]:.1f}" for x in RATES),
            "—" if unparseable is None else f"{100.0 - unparseable:.1f}",
        )
    return with_legend(t, labels)


def choices(values) -> str:
    """``a | b | c``: the allowed values, for help texts of comma-separated list options."""
    return " | ".join(str(v) for v in values)


def explicit_flags(ctx) -> list[str]:
    """The options the user typed (or set through the environment), as ``--flag`` names."""
    out = []
    for param in ctx.command.params:
        source = ctx.get_parameter_source(param.name)
        if source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT") and param.opts:
            out.append(max(param.opts, key=len))
    return out


def refuse_extra_flags(ctx, primary: str, allowed: tuple[str, ...] = ()) -> None:
    """``--resume DIR`` / ``--config FILE`` take everything from the directory or file: any other
    flag would be silently dropped, so it is refused, naming the flags, instead."""
    from mmrag.errors import InputError

    extra = [f for f in explicit_flags(ctx) if f != primary and f not in allowed]
    if extra:
        raise InputError(
            f"{primary} takes its settings from {'the run directory' if primary == '--resume' else 'the file'};"
            f" these flags would be ignored: {', '.join(extra)} (drop them, or put them in the config)",
            field=primary,
        )
