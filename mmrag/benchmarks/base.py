"""The Benchmark protocol and its registry.

A benchmark turns records on disk into :class:`~mmrag.schema.Sample` objects and, when it has one,
exposes its knowledge base as :class:`~mmrag.schema.Document` objects.  ``kind`` is the id of the
registered :class:`~mmrag.benchmarks.family.BenchmarkFamily` it belongs to (built-ins:
``deflection``, ``humblebench``, ``knowhal``; plug-ins add more), so that the run layer picks the
scenario kinds, judge and metrics from the family without dispatching on the benchmark's name.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from mmrag.registry import Registry
from mmrag.schema import Document, Sample


@runtime_checkable
class Benchmark(Protocol):
    name: str
    #: the id of the benchmark's registered BenchmarkFamily
    kind: str

    def samples(self) -> Iterable[Sample]:
        """All samples, in a stable order."""

    def documents(self) -> Iterable[Document]:
        """The knowledge base (empty for no-context benchmarks)."""

    def fingerprint(self) -> str:
        """A content hash of the data this benchmark reads (recorded in run manifests)."""


#: ``BENCHMARKS.create(name, source=None, **options) -> Benchmark``; third-party benchmarks register
#: through the entry-point group ``mmrag.benchmarks``.
BENCHMARKS: Registry[Benchmark] = Registry("benchmark", group="mmrag.benchmarks")
