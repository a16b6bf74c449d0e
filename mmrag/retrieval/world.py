"""``build_world_miner``: the text, visual and multimodal indices of a knowledge base, cached.

Used by ``mmrag demo`` and by anyone who wants negatives over a small KB without managing index
folders.  The indices live under ``cache_dir/indices-<key>/{text,visual,multimodal}`` where the key
hashes the KB content hash, the encoders' fingerprints, the fusion rule and the factory; a second
call with the same inputs loads them (size-verified) instead of rebuilding.  While building, each
text and image is embedded once: the multimodal index reuses the text and visual embeddings
through a small per-call memo.  The miner's query vectors are kept beside the indices
(``queries.sqlite``, :mod:`mmrag.retrieval.vectors`), so a second run mines without embedding.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mmrag.errors import InputError
from mmrag.indices.build import build_index, document_fits
from mmrag.indices.faiss_index import load_index
from mmrag.indices.features import ColorLayoutImageEncoder, FusionEncoder
from mmrag.indices.manifest import kb_content_hash
from mmrag.indices.progress import status
from mmrag.retrieval.dense import DenseRetriever
from mmrag.retrieval.miner import IndexMiner
from mmrag.retrieval.store import InMemoryDocStore
from mmrag.schema import Document, ImageRef, stable_id


class _Memo:
    """Same fingerprint, dim and modalities as the wrapped encoder; remembers rows it embedded."""

    def __init__(self, encoder: Any) -> None:
        self.inner = encoder
        self.fingerprint, self.dim = encoder.fingerprint, encoder.dim
        self.modalities = tuple(getattr(encoder, "modalities", ("text", "image")))
        self._text: dict[str, np.ndarray] = {}
        self._image: dict[str, np.ndarray] = {}

    def spec(self) -> dict[str, Any] | None:
        return self.inner.spec() if hasattr(self.inner, "spec") else None

    def _cached(self, keys: list[str], store: dict[str, np.ndarray], fn, items: Sequence) -> np.ndarray:
        todo = [i for i, k in enumerate(keys) if k not in store]
        if todo:
            vecs = fn([items[i] for i in todo])
            for i, v in zip(todo, vecs):
                store[keys[i]] = v
        return np.stack([store[k] for k in keys]) if keys else np.zeros((0, self.dim), np.float32)

    def encode_text(self, texts: Sequence[str]) -> np.ndarray:
        return self._cached(list(texts), self._text, self.inner.encode_text, list(texts))

    def encode_image(self, images: Sequence[ImageRef]) -> np.ndarray:
        keys = [im.sha256 or im.path for im in images]
        return self._cached(keys, self._image, self.inner.encode_image, list(images))


def build_world_miner(
    documents: Iterable[Document],
    cache_dir: str | Path,
    text_encoder: Any | None = None,
    image_encoder: Any | None = None,
    *,
    fusion: str = "concat",
    factory: str = "Flat",
    progress: bool | None = None,
    store: Any = None,
    **miner_kwargs: Any,
) -> IndexMiner:
    """Build (or reuse) the three indices over ``documents`` and return an :class:`IndexMiner`.

    Defaults: MiniLM text encoder, :class:`ColorLayoutImageEncoder` image encoder, multimodal
    fusion "concat".  A kind with no documents (e.g. a text-only KB has no visual index) is
    skipped; mining that modality then raises a clear error.
    """
    docs = list(documents)
    if not docs:
        raise InputError("empty knowledge base: no documents to mine negatives from", field="documents")
    if text_encoder is None:
        from mmrag.indices.encoders import SentenceTransformerEncoder

        text_encoder = SentenceTransformerEncoder()
    image_encoder = image_encoder or ColorLayoutImageEncoder()
    te, ie = _Memo(text_encoder), _Memo(image_encoder)
    fused = FusionEncoder(te, ie, rule=fusion)  # type: ignore[arg-type]
    kb_hash = kb_content_hash(docs)
    root = Path(cache_dir) / ("indices-" + stable_id(kb_hash, te.fingerprint, ie.fingerprint, fusion, factory))
    store = store if store is not None else InMemoryDocStore(docs)  # the caller's store of these docs
    retrievers = {}
    for kind, enc in (("text", te), ("visual", ie), ("multimodal", fused)):
        if not any(document_fits(d, kind) for d in docs):
            continue
        out = root / kind
        try:
            index = load_index(out, enc, kb_hash=kb_hash, verify="size")
        except InputError:
            status(f"building the {kind} index over {len(docs):,} documents (kept for the next run)")
            build_index(docs, enc, kind, factory=factory, out=out, progress=progress)
            index = load_index(out, enc, kb_hash=kb_hash, verify="size")
        retrievers[kind] = DenseRetriever(index, enc)
    miner_kwargs.setdefault("vector_cache", root / "queries.sqlite")
    return IndexMiner(store, retrievers, **miner_kwargs)
