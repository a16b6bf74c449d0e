"""In-memory document store: id -> Document, plus the entity lookup the miner needs."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from mmrag.errors import InputError
from mmrag.schema import Document


class InMemoryDocStore:
    """Implements :class:`mmrag.retrieval.base.DocStore`.  Duplicate ids are bad input."""

    def __init__(self, documents: Iterable[Document]) -> None:
        self._docs: dict[str, Document] = {}
        self._by_entity: dict[str, list[str]] = {}
        for d in documents:
            if d.id in self._docs:
                raise InputError(f"duplicate document id '{d.id}'", field="id")
            self._docs[d.id] = d
            if d.entity_id is not None:
                self._by_entity.setdefault(d.entity_id, []).append(d.id)

    def get(self, doc_id: str) -> Document:
        try:
            return self._docs[doc_id]
        except KeyError:
            raise KeyError(f"unknown document id '{doc_id}'") from None

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._docs

    def __iter__(self) -> Iterator[Document]:
        return iter(self._docs.values())

    def __len__(self) -> int:
        return len(self._docs)

    def by_entity(self, entity_id: str) -> list[Document]:
        return [self._docs[i] for i in self._by_entity.get(entity_id, [])]
