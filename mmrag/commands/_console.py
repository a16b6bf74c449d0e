"""Shared console pieces for the CLI: rich progress with rate and ETA, and the results table."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TaskProgressColumn,
                           TextColumn, TimeElapsedColumn, TimeRemainingColumn)
from rich.table import Table

from mmrag.metrics.rates import RATES
from mmrag.scenarios.kinds import scenario_label

import sys

#: a pipe or CI log is not a terminal: give tables room instead of rich's 80-column default
console = Console(width=None if sys.stdout.isatty() else 140)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 140)


class _RateColumn(TextColumn):
    def __init__(self) -> None:
        super().__init__("")

    def render(self, task):  # noqa: D401 - rich API
        speed = task.finished_speed or task.speed
        from rich.text import Text

        return Text(f"{speed:6.1f}/s" if speed else "   -  /s", style="progress.data.speed")


@contextmanager
def progress_bar() -> Iterator[Progress]:
    with Progress(SpinnerColumn(), TextColumn("[progress.description]{task.description}"), BarColumn(),
                  MofNCompleteColumn(), TaskProgressColumn(), _RateColumn(), TimeElapsedColumn(),
                  TextColumn("eta"), TimeRemainingColumn(), console=err_console, transient=False) as p:
        from mmrag.indices.progress import shared_progress

        with shared_progress(p):  # index builds and encoders draw into this display
            yield p


def results_table(summary: dict[str, Any], title: str = "Results") -> Table:
    t = Table(title=title)
    for col in ("benchmark", "scenario", "model", "n"):
        t.add_column(col, justify="right" if col == "n" else "left")
    for rate in RATES:
        t.add_column(rate.header, justify="right")
    for g in summary["groups"]:
        r = g["rates"]
        scen = scenario_label(g["scenario"])
        t.add_row(g["benchmark"], scen, g["model"], str(g["n"]), *(f"{r[x.id]:.1f}" for x in RATES))
    return t
