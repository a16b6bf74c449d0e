"""Reciprocal-rank fusion (Cormack et al., 2009) of several retrievers.

score(d) = sum_i w_i / (k_rrf + rank_i(d)), ranks starting at 1, over each retriever's top
``depth`` hits.  RRF ignores raw scores, so a dense cosine and a BM25 score mix without any
calibration.  Ties are broken by document id so the fused order is deterministic.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from mmrag.errors import InputError
from mmrag.retrieval.base import Hit, Query, Retriever
from mmrag.schema import Modality


class HybridRetriever:
    def __init__(
        self,
        retrievers: Sequence[Retriever],
        k_rrf: int = 60,
        weights: Sequence[float] | None = None,
        depth: int | None = None,
    ) -> None:
        if not retrievers:
            raise InputError("a hybrid retriever needs at least one retriever", field="retrievers")
        if weights is not None and len(weights) != len(retrievers):
            raise InputError("one weight per retriever", field="weights")
        self.retrievers = list(retrievers)
        self.k_rrf = int(k_rrf)
        self.weights = [float(w) for w in (weights or [1.0] * len(retrievers))]
        self.depth = depth
        inner = "|".join(r.fingerprint for r in self.retrievers)
        self.fingerprint = (
            "rrf:" + hashlib.sha256(f"{inner}|{self.k_rrf}|{self.weights}|{depth}".encode()).hexdigest()[:16]
        )
        self.name = "hybrid"

    def retrieve(self, queries: Sequence[Query], k: int) -> list[list[Hit]]:
        depth = self.depth or max(k, 20)
        lists = [r.retrieve(queries, depth) for r in self.retrievers]
        out = []
        for qi in range(len(queries)):
            fused: dict[str, float] = {}
            modality: dict[str, Modality | None] = {}
            for w, hits in zip(self.weights, lists):
                for rank, h in enumerate(hits[qi], start=1):
                    fused[h.doc_id] = fused.get(h.doc_id, 0.0) + w / (self.k_rrf + rank)
                    modality.setdefault(h.doc_id, h.modality)
            ranked = sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
            out.append([Hit(doc_id=d, score=s, modality=modality[d]) for d, s in ranked])
        return out
