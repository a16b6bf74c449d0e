"""Executing a plan: run directory, manifest, append-only columnar results, resume; and reading runs back.

``mmrag.runs.load(RUN_DIR)`` gives one pandas row per sample x scenario x model, for Jupyter;
``mmrag.runs.dataset(RUN_DIR)`` is the lazy form (a ``pyarrow.dataset`` over the record segments)
for runs bigger than memory; ``read_records`` gives full :class:`RunRecord` objects.
"""

from mmrag.runs.columnar import dataset
from mmrag.runs.config import RunConfig, load_run_config
from mmrag.runs.engine import RunResult, execute
from mmrag.runs.frame import load, read_records
from mmrag.runs.manifest import RunManifest
from mmrag.runs.records import RunRecord
from mmrag.runs.store import ResultStore, RunStore

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
