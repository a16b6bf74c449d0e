"""The Benchmark protocol and its registry.

A benchmark turns records on disk into :class:`~mmrag.schema.Sample` objects and, when it has one,
exposes its knowledge base as :class:`~mmrag.schema.Document` objects.  ``kind`` names the family
of metrics it is scored with (``deflection`` | ``humblebench`` | ``knowhal``) so that the run layer
can pick the judge and metrics without dispatching on the benchmark's name.
"""

from __future__ import annotations

from typing import Iterable, Literal, Protocol, runtime_checkable

from mmrag.registry import Registry
from mmrag.schema import Document, Sample

BenchmarkKind = Literal["deflection", "humblebench", "knowhal"]


@runtime_checkable
class Benchmark(Protocol):
    name: str
    kind: BenchmarkKind

    def samples(self) -> Iterable[Sample]:
        """All samples, in a stable order."""

    def documents(self) -> Iterable[Document]:
        """The knowledge base (empty for no-context benchmarks)."""

    def fingerprint(self) -> str:
        """A content hash of the data this benchmark reads (recorded in run manifests)."""


#: ``BENCHMARKS.create(name, source=None, **options) -> Benchmark``; third-party benchmarks register
#: through the entry-point group ``mmrag.benchmarks``.
BENCHMARKS: Registry[Benchmark] = Registry("benchmark", group="mmrag.benchmarks")
