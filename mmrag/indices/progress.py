"""One progress-bar helper for long encoder and index jobs (rich), silent for short ones.

Why a helper: encoders, index builds and the miner all stream batches of unknown or known size;
they share one look and one rule for when a bar is worth drawing (more than ``min_items`` items,
or an explicit ``progress=True``), so tests and small jobs stay quiet.

:func:`status` is the one-line counterpart for a slow step that has no count (generating the demo
world, loading a plug-in retriever or a judge): it prints above the live display of a command
(:func:`shared_progress`) and says nothing when no command display is live (the Python API).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn


class _NullBar:
    def advance(self, n: int = 1) -> None:  # noqa: D401 - trivial
        pass


class _Bar:
    def __init__(self, progress: Progress, task: TaskID) -> None:
        self._p, self._t = progress, task

    def advance(self, n: int = 1) -> None:
        self._p.advance(self._t, n)


_SHARED: Progress | None = None


@contextlib.contextmanager
def shared_progress(progress: Progress) -> Iterator[Progress]:
    """Make long encoder/index jobs add their bars to ``progress`` (an already live display, e.g.
    the CLI's) instead of opening a second live display, which rich refuses."""
    global _SHARED
    previous, _SHARED = _SHARED, progress
    try:
        yield progress
    finally:
        _SHARED = previous


def status(text: str) -> None:
    """Say what a slow step is doing, on the live command display (stderr); silent without one."""
    if _SHARED is not None:  # a Text, not markup: a path or name with "[...]" prints as written
        from rich.text import Text

        _SHARED.print(Text.assemble(("· ", "dim"), text), highlight=False)


@contextlib.contextmanager
def progress_bar(
    description: str, total: int | None, enabled: bool | None = None, min_items: int = 2048
) -> Iterator[_Bar | _NullBar]:
    """Yield an object with ``advance(n)``.  ``enabled=None`` draws a bar only for big jobs."""
    show = enabled if enabled is not None else (total is None or total >= min_items)
    if not show:
        yield _NullBar()
        return
    if _SHARED is not None:
        yield _Bar(_SHARED, _SHARED.add_task(description, total=total))
        return
    with Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), transient=True
    ) as p:
        yield _Bar(p, p.add_task(description, total=total))
