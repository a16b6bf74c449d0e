"""Shared console pieces for the CLI: rich progress with rate and ETA, and the results table."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console, RenderableType
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TaskProgressColumn, TextColumn
from rich.table import Table

from mmrag.metrics.rates import RATES
from mmrag.scenarios.kinds import scenario_label

#: a pipe or CI log is not a terminal: give tables room instead of rich's 80-column default
console = Console(width=None if sys.stdout.isatty() else 140)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 140)


def run_rate(task) -> float | None:
    """Items per second measured over the whole task (completed / elapsed), not rich's estimate
    over the last seconds: the figure a user quotes is the run's, and a burst of cache hits at the
    end must not inflate it."""
    elapsed = task.finished_time if task.finished else task.elapsed
    return task.completed / elapsed if elapsed and elapsed >= 1.0 and task.completed else None


class _RateColumn(TextColumn):
    def __init__(self) -> None:
        super().__init__("")

    def render(self, task):  # noqa: D401 - rich API
        from rich.text import Text

        speed = run_rate(task)
        return Text(f"{speed:6.1f}/s" if speed else "   -  /s", style="progress.data.speed")


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class TimeColumn(TextColumn):
    """``0:00:15 elapsed · eta 0:01:02``: the two times labelled, never one under the other's name.

    The ETA is rich's speed estimate (recent completions per second) over the known remaining
    count; ``eta ?`` while the total or the speed is unknown, ``done`` once finished."""

    def __init__(self) -> None:
        super().__init__("")

    def render(self, task):  # noqa: D401 - rich API
        from rich.text import Text

        elapsed = _clock(task.finished_time if task.finished else task.elapsed)
        if task.finished:
            eta = "done"
        else:
            eta = "eta " + _clock(task.time_remaining if task.total is not None else None)
        return Text(f"{elapsed} elapsed · {eta}", style="progress.remaining")


@contextmanager
def progress_bar() -> Iterator[Progress]:
    """The command's live display on stderr: the cell bar, index and encoder bars, and the status
    lines of slow steps (:func:`mmrag.indices.progress.status`) printed above them."""
    with Progress(
        SpinnerColumn(),
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        _RateColumn(),
        TimeColumn(),
        console=err_console,
        transient=False,
    ) as p:
        from mmrag.indices.progress import shared_progress

        with shared_progress(p):  # index builds and encoders draw into this display
            yield p


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
