"""Encoders and FAISS indices on disk with a manifest (text, visual and multimodal kinds).

Public names: encoders (:class:`SentenceTransformerEncoder`, :class:`OpenClipEncoder`,
:class:`ColorLayoutImageEncoder`, :class:`FusionEncoder`, ``ENCODERS``, :func:`create_encoder`,
:func:`encode_queries`), building (:func:`build_index`, :func:`build_index_from_embeddings`) and
loading (:func:`load_index`, :class:`Index`, :class:`IndexManifest`, :func:`kb_content_hash`).
torch and faiss are imported only when an encoder or index is actually used.
"""

from mmrag.indices.base import Encoder
from mmrag.indices.build import build_index, build_index_from_embeddings, document_fits, document_text
from mmrag.indices.encoders import OpenClipEncoder, SentenceTransformerEncoder, resolve_device
from mmrag.indices.faiss_index import Index, describe, load_index, read_manifest
from mmrag.indices.features import ColorLayoutImageEncoder, FusionEncoder
from mmrag.indices.gpu import gpu_available, set_threads
from mmrag.indices.manifest import INDEX_KINDS, IndexManifest, kb_content_hash
from mmrag.indices.registry import ENCODERS, create_encoder, encode_queries

__all__ = [
    "Encoder",
    "SentenceTransformerEncoder",
    "OpenClipEncoder",
    "ColorLayoutImageEncoder",
    "FusionEncoder",
    "ENCODERS",
    "create_encoder",
    "encode_queries",
    "resolve_device",
    "build_index",
    "build_index_from_embeddings",
    "document_fits",
    "document_text",
    "Index",
    "IndexManifest",
    "load_index",
    "read_manifest",
    "describe",
    "kb_content_hash",
    "INDEX_KINDS",
    "gpu_available",
    "set_threads",
]
