"""Retrieval contracts: queries, hits, retrievers, document stores and negative miners."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from mmrag.registry import Registry
from mmrag.schema import Document, ImageRef, Modality, Sample


class Query(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str | None = None
    images: list[ImageRef] = Field(default_factory=list)


class Hit(BaseModel):
    model_config = ConfigDict(extra="forbid")
    doc_id: str
    score: float
    modality: Modality | None = None


@runtime_checkable
class Retriever(Protocol):
    fingerprint: str

    def retrieve(self, queries: Sequence[Query], k: int) -> list[list[Hit]]:
        """Batched retrieval: one ranked hit list per query."""


@runtime_checkable
class DocStore(Protocol):
    def get(self, doc_id: str) -> Document: ...

    def __contains__(self, doc_id: str) -> bool: ...

    def __iter__(self) -> Iterator[Document]: ...


class MiningResult(BaseModel):
    """Negatives found for one sample; ``shortfall`` = asked - found, recorded rather than hidden."""

    model_config = ConfigDict(extra="forbid")
    documents: list[Document]
    requested: int
    shortfall: int = 0
    dropped_leaks: int = 0
    #: similarity of each negative to its mining query, aligned with ``documents`` (optional)
    scores: list[float] = Field(default_factory=list)
    #: index kind each negative came from ("text" | "visual" | "multimodal"; for modality "any")
    sources: list[str] = Field(default_factory=list)


@runtime_checkable
class NegativeMiner(Protocol):
    store: DocStore

    def negatives(self, sample: Sample, n: int, modality: Modality | str, seed: int = 0) -> MiningResult:
        """Hard negatives: gold docs and every doc of the gold entity excluded, answer leaks dropped."""


RETRIEVERS: Registry[Retriever] = Registry("retriever", group="mmrag.retrievers", requires=("retrieve",))
