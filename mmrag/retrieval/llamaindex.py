"""Adapters both ways between mmrag retrievers and llama-index retrievers (optional extra).

* :class:`LlamaIndexRetriever` wraps any llama-index ``BaseRetriever`` as an mmrag ``Retriever``:
  a node's document id is its ``metadata[id_key]`` if present, else its ``ref_doc_id``, else its
  node id; an ``ImageNode`` counts as modality "image" unless its metadata says otherwise.
  llama-index has no batched retrieve, so queries run one after the other; ``similarity_top_k``
  is set to ``k`` when the wrapped retriever has that attribute.  The fingerprint is the class
  name plus ``name`` — give a ``name`` that changes when the wrapped index changes, or the
  retrieval cache cannot tell two llama-index indices apart.
* :func:`as_llamaindex_retriever` exposes an mmrag retriever (any index, BM25, hybrid, plug-in)
  to llama-index as a ``BaseRetriever`` returning ``NodeWithScore`` (``TextNode`` for text
  documents, ``ImageNode`` for documents with an image), usable in a ``RetrieverQueryEngine``.
* :func:`as_llamaindex_embedding` exposes an mmrag text encoder (``encode_text``; e.g. the packaged
  MiniLM, ``SentenceTransformerEncoder()``) as a llama-index ``BaseEmbedding``, so a llama-index
  ``VectorStoreIndex`` embeds with the same local model as mmrag's own indices and never calls an
  embedding service.

Both work offline: nothing here calls an LLM or an embedding service (set ``Settings.llm = None``
and a local ``embed_model`` for the rest of a llama-index pipeline).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import ImageNode, NodeWithScore, QueryBundle, TextNode
from pydantic import PrivateAttr

from mmrag.retrieval.base import DocStore, Hit, Query, Retriever
from mmrag.schema import Document, ImageRef, as_modality


class LlamaIndexRetriever:
    def __init__(self, li_retriever: BaseRetriever, *, name: str = "", id_key: str = "doc_id") -> None:
        self.li_retriever = li_retriever
        self.id_key = id_key
        cls = type(li_retriever)
        self.fingerprint = f"llamaindex:{cls.__module__}.{cls.__qualname__}:{name}"
        self.name = name or cls.__name__

    def _hit(self, nws: NodeWithScore) -> Hit:
        node = nws.node
        meta = node.metadata or {}
        doc_id = meta.get(self.id_key) or node.ref_doc_id or node.node_id
        modality = as_modality(meta.get("modality") or ("image" if isinstance(node, ImageNode) else "text"))
        return Hit(doc_id=str(doc_id), score=float(nws.score if nws.score is not None else 0.0), modality=modality)

    def retrieve(self, queries: Sequence[Query], k: int) -> list[list[Hit]]:
        if hasattr(self.li_retriever, "similarity_top_k"):
            self.li_retriever.similarity_top_k = k
        out = []
        for q in queries:
            bundle = QueryBundle(query_str=q.text or "", image_path=q.images[0].path if q.images else None)
            out.append([self._hit(n) for n in self.li_retriever.retrieve(bundle)][:k])
        return out


def document_node(doc: Document) -> TextNode:
    meta = {
        "doc_id": doc.id,
        "modality": doc.modality,
        "title": doc.title,
        "entity_id": doc.entity_id,
        "source": doc.source,
    }
    if doc.image is not None:
        return ImageNode(id_=doc.id, text=doc.text, image_path=doc.image.path, metadata=meta)
    return TextNode(id_=doc.id, text=doc.text, metadata=meta)


class MmragLlamaIndexRetriever(BaseRetriever):
    """A llama-index ``BaseRetriever`` answering from an mmrag retriever and document store."""

    def __init__(self, retriever: Retriever, store: DocStore, k: int = 10, **kwargs: Any) -> None:
        self._mm, self._store, self._k = retriever, store, int(k)
        super().__init__(**kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        image_path = getattr(query_bundle, "image_path", None)
        images = [ImageRef(path=image_path)] if image_path else []
        query = Query(text=query_bundle.query_str or None, images=images)
        hits = self._mm.retrieve([query], self._k)[0]
        return [NodeWithScore(node=document_node(self._store.get(h.doc_id)), score=h.score) for h in hits]


def as_llamaindex_retriever(retriever: Retriever, store: DocStore, k: int = 10, **kwargs: Any) -> BaseRetriever:
    return MmragLlamaIndexRetriever(retriever, store, k=k, **kwargs)


class MmragEmbedding(BaseEmbedding):
    """A llama-index embedding model answering from an mmrag encoder's ``encode_text``.

    Queries and documents are embedded the same way (MiniLM-style symmetric encoders), as
    L2-normalised float vectors; llama-index batches documents by ``embed_batch_size``."""

    _encoder: Any = PrivateAttr()

    def __init__(self, encoder: Any, **kwargs: Any) -> None:
        kwargs.setdefault("model_name", str(getattr(encoder, "fingerprint", type(encoder).__name__)))
        super().__init__(**kwargs)
        self._encoder = encoder

    @classmethod
    def class_name(cls) -> str:
        return "MmragEmbedding"

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self._encoder.encode_text(list(texts))]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


def as_llamaindex_embedding(encoder: Any, **kwargs: Any) -> BaseEmbedding:
    return MmragEmbedding(encoder, **kwargs)
