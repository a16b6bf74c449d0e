"""The ``--engine / --address / --replicas`` flags shared by ``run``, ``sweep``, ``curate`` and
``index build`` (defined once so their help and defaults cannot drift apart)."""

from __future__ import annotations

import typer

#: flags that change where a run computes, never what it measures (so --config / --resume accept them)
ENGINE_FLAGS = ("--engine", "--address", "--replicas")
ENGINE = typer.Option("local", "--engine", help="local | ray (needs the 'ray' extra of mmrag; see docs/ray.md)")
ADDRESS = typer.Option(None, "--address", help="Ray cluster address HOST:PORT (default: start a local cluster)")
REPLICAS = typer.Option(None, "--replicas", help="model replicas on a CPU cluster (default: one per GPU, else 1)")


def engine_scope(engine: str = "local", address: str | None = None, replicas: int | None = None):
    from mmrag.distributed import engine_scope as scope

    return scope(engine, address, replicas)
