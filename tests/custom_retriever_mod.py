"""A user-written retriever, named in a run config by dotted path (``custom_retriever_mod:KeywordRetriever``).

It exists to prove that ``retrieval: {retrievers: {text: ...}}`` really swaps the retriever the
negative miner uses: its ranking (distinct shared content words, ties by document id) differs from
MiniLM's cosine ranking, so a run with it shows different negatives than a default run.  It is a
complete Retriever (``fingerprint`` + batched ``retrieve``), accepting ``documents=`` as the run
layer passes to factories that ask for it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from mmrag.retrieval.base import Hit, Query
from mmrag.schema import Document

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    {
        "the",
        "of",
        "and",
        "is",
        "in",
        "a",
        "an",
        "what",
        "which",
        "who",
        "whose",
        "was",
        "were",
        "its",
        "to",
        "for",
        "by",
        "on",
        "at",
        "with",
        "from",
        "this",
        "that",
    }
)


def content_words(text: str, min_len: int) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= min_len and w not in _STOP}


class KeywordRetriever:
    """Scores a document by how many distinct content words (``min_len``+ letters) of the query
    it contains; documents without text are not indexed, text-less queries get no hits."""

    def __init__(self, documents: Sequence[Document], min_len: int = 4) -> None:
        self.min_len = int(min_len)
        self._docs = [
            (d.id, d.modality, content_words(f"{d.title or ''} {d.text}", self.min_len))
            for d in documents
            if d.text and d.text.strip()
        ]
        digest = hashlib.sha256("\n".join(i for i, _, _ in self._docs).encode()).hexdigest()[:16]
        self.fingerprint = f"keyword-overlap:v1:min{self.min_len}:{digest}"

    def retrieve(self, queries: Sequence[Query], k: int) -> list[list[Hit]]:
        out: list[list[Hit]] = []
        for q in queries:
            words = content_words(q.text or "", self.min_len)
            if not words:
                out.append([])
                continue
            scored = [(len(words & ws), doc_id, mod) for doc_id, mod, ws in self._docs]
            scored = [s for s in scored if s[0] > 0]
            scored.sort(key=lambda s: (-s[0], s[1]))
            out.append([Hit(doc_id=d, score=float(n), modality=m) for n, d, m in scored[:k]])
        return out
