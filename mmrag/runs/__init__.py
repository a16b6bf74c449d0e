"""Executing a plan: run directory, manifest, append-only columnar results, resume; and reading runs back.

``mmrag.runs.load(RUN_DIR)`` gives one pandas row per sample x scenario x model, for Jupyter;
``mmrag.runs.dataset(RUN_DIR)`` is the lazy form (a ``pyarrow.dataset`` over the record segments)
for runs bigger than memory; ``read_records`` gives full :class:`RunRecord` objects.

The names below are imported on first use: a command that only reads a manifest (``mmrag run
--resume`` of a finished run) does not pay for pandas, pyarrow and the engine.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "dataset": "mmrag.runs.columnar",
    "RunConfig": "mmrag.runs.config",
    "load_run_config": "mmrag.runs.config",
    "RunResult": "mmrag.runs.engine",
    "execute": "mmrag.runs.engine",
    "load": "mmrag.runs.frame",
    "read_records": "mmrag.runs.frame",
    "RunManifest": "mmrag.runs.manifest",
    "RunRecord": "mmrag.runs.records",
    "ResultStore": "mmrag.runs.store",
    "RunStore": "mmrag.runs.store",
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    try:  # a submodule reached as an attribute (``mmrag.runs.engine``), as when all were imported here
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


__all__ = sorted(_EXPORTS)
