"""A third-party retriever: ranks documents by the number of query words they share.

It imports only mmrag's public types and implements the Retriever protocol (``fingerprint`` and
``retrieve(queries, k)``); mmrag finds it through the ``mmrag.retrievers`` entry point or the
dotted path ``mmrag_extra_retriever:KeywordOverlapRetriever``.
"""

from __future__ import annotations

import re

from mmrag.retrieval import Hit


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


class KeywordOverlapRetriever:
    def __init__(self, documents, min_overlap: int = 1) -> None:
        self._docs = [(d.id, d.modality, _words(d.title + " " + d.text)) for d in documents]
        self.min_overlap = min_overlap
        self.fingerprint = f"keyword-overlap:{len(self._docs)}:{min_overlap}"

    def retrieve(self, queries, k):
        out = []
        for q in queries:
            words = _words(q.text or "")
            scored = [(len(words & w), i, m) for i, m, w in self._docs]
            scored = [s for s in scored if s[0] >= self.min_overlap]
            scored.sort(key=lambda s: (-s[0], s[1]))
            out.append([Hit(doc_id=i, score=float(s), modality=m) for s, i, m in scored[:k]])
        return out
