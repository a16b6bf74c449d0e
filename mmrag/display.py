"""The live progress display a run draws on stderr: the cell bar with rate and ETA, and the index
and encoder bars and status lines of slow steps above it.

It lives outside :mod:`mmrag.commands` because the library draws it too (``mmrag.run(...,
progress=True)``), and the library never imports the CLI package.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TaskProgressColumn, TextColumn

#: a pipe or CI log is not a terminal: give the display room instead of rich's 80-column default
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
