"""Retrieval over mmrag indices: dense, BM25, hybrid (RRF), a SQLite cache, hard-negative mining,
the plug-in registry and llama-index adapters.

Public names: :class:`Query`, :class:`Hit`, :class:`Retriever`, :class:`DocStore`,
:class:`MiningResult`, :class:`NegativeMiner`, ``RETRIEVERS`` / :func:`register_retriever` /
:func:`create_retriever`, :class:`DenseRetriever`, :class:`BM25Retriever`,
:class:`HybridRetriever`, :class:`CachedRetriever`, :class:`InMemoryDocStore`,
:class:`IndexMiner`, :func:`build_world_miner`, :func:`evaluate_retrieval`; and, when
llama-index is installed, :class:`LlamaIndexRetriever` / :func:`as_llamaindex_retriever` /
:func:`as_llamaindex_embedding`
(imported on first use, so mmrag works without the llamaindex extra).
"""

from typing import Any

from mmrag.retrieval.base import RETRIEVERS, DocStore, Hit, MiningResult, NegativeMiner, Query, Retriever
from mmrag.retrieval.cache import CachedRetriever
from mmrag.retrieval.dense import DenseRetriever
from mmrag.retrieval.evaluation import evaluate_retrieval
from mmrag.retrieval.hybrid import HybridRetriever
from mmrag.retrieval.lexical import BM25Retriever
from mmrag.retrieval.miner import IndexMiner
from mmrag.retrieval.plugins import create_retriever, register_retriever
from mmrag.retrieval.store import InMemoryDocStore
from mmrag.retrieval.world import build_world_miner

_LAZY = {"LlamaIndexRetriever", "as_llamaindex_retriever", "as_llamaindex_embedding"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from mmrag.retrieval import llamaindex

        return getattr(llamaindex, name)
    raise AttributeError(name)


__all__ = [
    "Query",
    "Hit",
    "Retriever",
    "DocStore",
    "MiningResult",
    "NegativeMiner",
    "RETRIEVERS",
    "register_retriever",
    "create_retriever",
    "DenseRetriever",
    "BM25Retriever",
    "HybridRetriever",
    "CachedRetriever",
    "InMemoryDocStore",
    "IndexMiner",
    "build_world_miner",
    "evaluate_retrieval",
    "LlamaIndexRetriever",
    "as_llamaindex_retriever",
    "as_llamaindex_embedding",
]
