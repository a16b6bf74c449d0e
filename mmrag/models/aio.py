"""Running a backend's ``agenerate`` from synchronous code, including from inside Jupyter.

``asyncio.run`` refuses to start while a loop is already running (a notebook cell, an async web
app).  :func:`run_sync` then runs the coroutine on a fresh loop in a worker thread, so
``model.generate(...)`` behaves the same everywhere.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(make: Callable[[], Awaitable[T]]) -> T:
    """Run ``make()`` to completion; ``make`` is a factory so the coroutine is created on the loop
    that runs it."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(make))
    box: dict[str, Any] = {}

    def worker() -> None:
        try:
            box["value"] = asyncio.run(_await(make))
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    t = threading.Thread(target=worker, name="mmrag-run-sync")
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


async def _await(make: Callable[[], Awaitable[T]]) -> T:
    return await make()


def generate_then_close(model: Any, prompts: Any, settings: Any) -> list:
    """The synchronous ``generate`` of an async backend: one ``agenerate`` call, then ``aclose``
    on the same loop, so connections and pending cache writes never outlive the loop that made
    them (the next ``generate`` may run on a different one)."""

    async def once() -> list:
        try:
            return await model.agenerate(prompts, settings)
        finally:
            await model.aclose()

    return run_sync(once)
