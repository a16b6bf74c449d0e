"""Executing a plan: run directory, manifest, append-only columnar results, resume; and reading runs back.

``mmrag.runs.load(RUN_DIR)`` gives one pandas row per sample x scenario x model, for Jupyter;
``mmrag.runs.dataset(RUN_DIR)`` is the lazy form (a ``pyarrow.dataset`` over the record segments)
for runs bigger than memory; ``read_records`` gives full :class:`RunRecord` objects.
"""

from typing import Any

from mmrag.runs.config import RunConfig, load_run_config
from mmrag.runs.records import RunRecord

#: public names imported on first use: ``import mmrag.runs.config`` (every command) must not pay
#: for the engine, pyarrow or pandas
_LAZY = {
    "dataset": "mmrag.runs.columnar",
    "RunResult": "mmrag.runs.engine",
    "execute": "mmrag.runs.engine",
    "load": "mmrag.runs.frame",
    "read_records": "mmrag.runs.frame",
    "RunManifest": "mmrag.runs.manifest",
    "ResultStore": "mmrag.runs.store",
    "RunStore": "mmrag.runs.store",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'mmrag.runs' has no attribute {name!r}")


__all__ = [
    "RunConfig",
    "RunManifest",
    "RunRecord",
    "RunResult",
    "ResultStore",
    "RunStore",
    "dataset",
    "execute",
    "load",
    "load_run_config",
    "read_records",
]
