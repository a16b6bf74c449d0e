"""Benchmarks: loaders that turn records on disk into Samples (and a knowledge base into Documents).

Importing this package registers the built-in benchmarks in :data:`BENCHMARKS`: ``demo``,
``demo-humblebench``, ``demo-knowhal`` (the generated world), ``humblebench``, ``knowhal``,
``deflection`` and ``hf`` (any ``datasets`` table by a field mapping: ``hf:PATH_OR_ID``), and the built-in families (:data:`BENCHMARK_FAMILIES`).  Third-party benchmarks register
through the ``mmrag.benchmarks`` entry-point group, their families through ``mmrag.benchmark_families``.
"""

from __future__ import annotations

from typing import Any

from mmrag.benchmarks import deflection as _deflection  # noqa: F401  (registers "deflection")
from mmrag.benchmarks import humblebench as _humblebench  # noqa: F401  (registers "humblebench")
from mmrag.benchmarks import knowhal as _knowhal  # noqa: F401  (registers "knowhal")
from mmrag.benchmarks.base import BENCHMARKS, Benchmark
from mmrag.benchmarks.demo import ensure_world, generate_world
from mmrag.benchmarks.demo import loaders as _demo_loaders  # noqa: F401  (registers the demo benchmarks)
from mmrag.benchmarks.family import BENCHMARK_FAMILIES, BenchmarkFamily, get_family, register_family
from mmrag.benchmarks.hf import PREFIX as _HF  # registers "hf" (bring your own dataset)
from mmrag.benchmarks.hf import from_hf
from mmrag.errors import InputError


def load_benchmark(name: str, source: str | None = None, **options: Any) -> Benchmark:
    """``BENCHMARKS.create(name, source, **options)``: a registered name, an entry point or a dotted
    path; ``hf:PATH_OR_ID`` is the ``hf`` loader on that dataset (:mod:`mmrag.benchmarks.hf`)."""
    if isinstance(name, str) and name.startswith(_HF) and name not in BENCHMARKS:
        if source is not None:
            raise InputError(f"'{name}' names its dataset already; drop the source {source!r}", field="source")
        return BENCHMARKS.create("hf", name[len(_HF) :], **options)
    return BENCHMARKS.create(name, source, **options)


__all__ = [
    "BENCHMARKS",
    "BENCHMARK_FAMILIES",
    "Benchmark",
    "BenchmarkFamily",
    "ensure_world",
    "from_hf",
    "generate_world",
    "get_family",
    "load_benchmark",
    "register_family",
]
