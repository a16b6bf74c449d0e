"""Scale-out on Ray (the ``mmrag[ray]`` extra): index builds and runs across a cluster.

Public names: :func:`engine_scope` (what ``--engine/--address/--replicas`` do for ``run``,
``sweep`` and ``curate``), :func:`build_index_ray` (``index build --engine ray``),
:class:`RayVLM` / :class:`RayPlacement` (model replicas in actors), :func:`connect`.  Importing
this package does not import Ray; only using it does (see docs/ray.md).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from mmrag.distributed.cluster import ENGINES, check_engine, connect, require_ray


@contextlib.contextmanager
def engine_scope(
    engine: str = "local", address: str | None = None, replicas: int | None = None, **placement: Any
) -> Iterator[Any]:
    """Run the block on the chosen engine.  ``local``: nothing changes.  ``ray``: connect (a local
    cluster when ``address`` is None) and build every in-process model as Ray replicas; the
    replicas are stopped when the block ends.  Yields the placement (None for local)."""
    check_engine(engine, address, replicas)
    if engine == "local":
        yield None
        return
    from mmrag.distributed.replicas import RayPlacement
    from mmrag.models.factory import model_placement

    connect(address)
    place = RayPlacement(replicas, **placement)
    try:
        with model_placement(place):
            yield place
    finally:
        place.close()


def build_index_ray(*args: Any, **kwargs: Any) -> Any:
    from mmrag.distributed.index_build import build_index_ray as _build

    return _build(*args, **kwargs)


def __getattr__(name: str) -> Any:  # RayVLM, RayPlacement without importing them eagerly
    if name in ("RayVLM", "RayPlacement"):
        from mmrag.distributed import replicas

        return getattr(replicas, name)
    raise AttributeError(name)


__all__ = [
    "ENGINES",
    "engine_scope",
    "build_index_ray",
    "connect",
    "require_ray",
    "check_engine",
    "RayVLM",
    "RayPlacement",
]
