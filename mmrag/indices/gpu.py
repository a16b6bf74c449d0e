"""FAISS device and thread handling.

faiss-cpu and faiss-gpu install the same ``faiss`` module (pick exactly one, see the install
notes); with faiss-gpu on a machine without a GPU ``index_cpu_to_all_gpus`` returns an empty
replica set, so every GPU path branches on :func:`gpu_available` first.  On a GPU, indices are
sharded across all GPUs (each holds a slice of the vectors, results are merged by FAISS) and stored
in float16.  Index types the GPU cannot hold (HNSW, for example) stay on the CPU, said in a log
line rather than failing.  On the CPU the OpenMP thread count is set explicitly (``threads`` or
``$MMRAG_FAISS_THREADS``, default: all cores) because FAISS's default can oversubscribe a machine
shared with torch.
"""

from __future__ import annotations

import logging
import os
from typing import Any

log = logging.getLogger(__name__)


def gpu_available() -> bool:
    import faiss

    return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


def set_threads(threads: int | None = None) -> int:
    import faiss

    n = threads or int(os.environ.get("MMRAG_FAISS_THREADS", 0)) or (os.cpu_count() or 1)
    faiss.omp_set_num_threads(int(n))
    return int(n)


def want_gpu(device: str | None) -> bool:
    """``"auto"``/None: GPU when available; ``"cpu"``: never; ``"gpu"``/``"cuda"``: GPU or error."""
    if device in (None, "auto"):
        return gpu_available()
    if device == "cpu":
        return False
    if not gpu_available():
        from mmrag.errors import InputError

        raise InputError("a GPU was asked for but faiss sees none (install faiss-gpu on a GPU machine)", field="device")
    return True


def to_gpu(index: Any, shard: bool = True, fp16: bool = True) -> tuple[Any, bool]:
    """Move a CPU index to all GPUs; returns (index, moved).  Unsupported types stay on the CPU."""
    import faiss

    co = faiss.GpuMultipleClonerOptions()
    co.shard = shard
    co.useFloat16 = fp16
    try:
        return faiss.index_cpu_to_all_gpus(index, co), True
    except Exception as exc:  # e.g. HNSW has no GPU implementation
        log.info("index stays on the CPU (%s)", exc)
        return index, False


def to_cpu(index: Any) -> Any:
    import faiss

    return faiss.index_gpu_to_cpu(index)
