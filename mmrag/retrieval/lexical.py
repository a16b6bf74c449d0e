"""BM25 over document text, with the maintained ``bm25s`` library (the lexical option).

Image-only documents are not indexed and image-only queries get no hits: BM25 sees words only.
Hits with a zero score (no shared term) are dropped rather than returned in arbitrary order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

import numpy as np

from mmrag.errors import InputError
from mmrag.indices.build import document_text
from mmrag.retrieval.base import Hit, Query
from mmrag.schema import Document


class BM25Retriever:
    def __init__(
        self,
        documents: Iterable[Document],
        *,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        stopwords: str | None = "en",
        include_title: bool = True,
    ) -> None:
        import bm25s
        from bm25s.tokenization import Tokenizer

        docs = [d for d in documents if d.text.strip()]
        if not docs:
            raise InputError("BM25 needs at least one document with text", field="documents")
        self._ids = np.array([d.id for d in docs], dtype=object)
        self._mods = np.array([d.modality for d in docs], dtype=object)
        texts = [document_text(d, include_title) for d in docs]
        self._tok = Tokenizer(stopwords=stopwords)
        ids = self._tok.tokenize(texts, update_vocab=True, return_as="ids", show_progress=False)
        self._bm25 = bm25s.BM25(k1=k1, b=b, method=method)
        self._bm25.index(ids, show_progress=False)
        h = hashlib.sha256()
        for d, t in zip(self._ids, texts):
            h.update(d.encode() + b"\0" + t.encode() + b"\1")
        self.fingerprint = f"bm25:{method}:k1={k1:g}:b={b:g}:sw={stopwords}:{h.hexdigest()[:16]}"
        self.name = "bm25"

    def __len__(self) -> int:
        return len(self._ids)

    def retrieve(self, queries: Sequence[Query], k: int) -> list[list[Hit]]:
        out: list[list[Hit]] = [[] for _ in queries]
        rows = [i for i, q in enumerate(queries) if q.text and q.text.strip()]
        if not rows or k <= 0:
            return out
        q_ids = self._tok.tokenize(
            [queries[i].text for i in rows], update_vocab=False, return_as="ids", show_progress=False
        )
        kk = min(k, len(self._ids))
        docs, scores = self._bm25.retrieve(q_ids, k=kk, show_progress=False)
        for i, drow, srow in zip(rows, docs.tolist(), scores.tolist()):
            out[i] = [
                Hit(doc_id=self._ids[d], score=float(s), modality=self._mods[d]) for d, s in zip(drow, srow) if s > 0
            ]
        return out
