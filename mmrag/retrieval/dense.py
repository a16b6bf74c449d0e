"""Dense retrieval over an mmrag FAISS index.

The query path is kept thin on purpose (perf/retrieval_bench.py holds it to <= 10 % over raw FAISS
search): queries are embedded in one batch per modality, searched in one FAISS call per shard,
and the int64 rows are mapped to document ids through a numpy array — no per-hit dictionary or
database look-up.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mmrag.errors import InputError
from mmrag.indices.faiss_index import Index, load_index, read_manifest
from mmrag.indices.registry import create_encoder, encode_queries
from mmrag.retrieval.base import Hit, Query


class DenseRetriever:
    """``DenseRetriever(index, encoder)``; ``index`` may be an :class:`Index` or an index folder,
    ``encoder`` an encoder, an encoder spec, or None (then the encoder recorded in the manifest is
    rebuilt).  ``load_kwargs`` go to :func:`load_index` when a folder is given."""

    def __init__(
        self, index: Index | str | Path, encoder: Any | None = None, *, name: str | None = None, **load_kwargs: Any
    ) -> None:
        if encoder is not None and not hasattr(encoder, "fingerprint"):
            encoder = create_encoder(encoder)
        if not isinstance(index, Index):
            if encoder is None:
                spec = read_manifest(index).encoder_spec
                if spec is None:
                    raise InputError("the index manifest records no encoder spec; pass an encoder", path=index)
                encoder = create_encoder(spec)
            index = load_index(index, encoder, **load_kwargs)
        elif encoder is not None:
            if encoder.fingerprint != index.manifest.encoder_fingerprint or encoder.dim != index.dim:
                raise InputError(
                    f"encoder {encoder.fingerprint} does not match the index's {index.manifest.encoder_fingerprint}",
                    path=index.path,
                    field="encoder",
                )
        self.index = index
        self.encoder = encoder
        self.name = name or f"dense-{index.kind}"
        self.fingerprint = f"dense:{index.kind}:{index.fingerprint}"

    def encode(self, queries: Sequence[Query]) -> np.ndarray:
        if self.encoder is None:
            raise InputError("this DenseRetriever has no encoder; use retrieve_vectors", field="encoder")
        return encode_queries(self.encoder, [q.text for q in queries], [q.images for q in queries])

    def retrieve(self, queries: Sequence[Query], k: int) -> list[list[Hit]]:
        if not queries:
            return []
        return self.retrieve_vectors(self.encode(queries), k)

    def search_ids(self, vectors: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        """(doc id, score) per hit, best first, one list per query row: what the negative miner
        reads, without a validated :class:`Hit` per hit (it filters thousands of hits per sample)."""
        scores, rows = self.index.search(vectors, k)
        ids = self.index.doc_ids[np.where(rows < 0, 0, rows)].tolist()
        return [
            [(d, s) for d, s, r in zip(i_row, s_row, r_row) if r >= 0]
            for i_row, s_row, r_row in zip(ids, scores.tolist(), rows.tolist())
        ]

    def retrieve_vectors(self, vectors: np.ndarray, k: int) -> list[list[Hit]]:
        """Search with ready query vectors (one row per query)."""
        scores, rows = self.index.search(vectors, k)
        missing = rows < 0
        safe = np.where(missing, 0, rows)
        ids, mods = self.index.doc_ids[safe].tolist(), self.index.modalities[safe].tolist()
        validate = _HIT_VALIDATOR.validate_python  # one vectorised id lookup, then plain validation
        out = []
        for i_row, m_row, s_row, miss in zip(ids, mods, scores.tolist(), missing.tolist()):
            out.append(
                [
                    validate({"doc_id": d, "score": s, "modality": m})
                    for d, m, s, x in zip(i_row, m_row, s_row, miss)
                    if not x
                ]
            )
        return out


_HIT_VALIDATOR = Hit.__pydantic_validator__
