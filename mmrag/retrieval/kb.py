"""A benchmark's knowledge base as one object (``mmrag.knowledge_base``): the retrievers over it,
their quality, the negatives a miner on them finds, and the llama-index embedding of its text.

Why an object: a retrieval plug-in author needs the knowledge base's documents, its document
store, its default dense indices and the mining filters together, and :class:`~mmrag.benchmarks.base.
Benchmark` is a protocol that plug-in benchmarks implement, so these helpers cannot live on it.

A retriever is anything with a ``fingerprint`` string and ``retrieve(queries, k)``; queries carry
``.text`` (and ``.images``), and each hit may be a :class:`~mmrag.retrieval.base.Hit` or a plain
dict ``{"doc_id", "score", "modality"}`` (:func:`checked` converts them), so writing one needs no
mmrag import.  A llama-index ``BaseRetriever`` is accepted too (wrapped as
:class:`~mmrag.retrieval.llamaindex.LlamaIndexRetriever`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mmrag.errors import InputError
from mmrag.retrieval.base import Hit, Query, Retriever
from mmrag.schema import Document, Sample

INDEX_KINDS = ("text", "visual", "multimodal")


class CheckedRetriever:
    """A duck-typed retriever whose hits are validated (dicts become :class:`Hit`) on the way out,
    so the miner and the evaluation see one hit type whatever the plug-in returns."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.fingerprint: str = inner.fingerprint

    def retrieve(self, queries: Sequence[Query], k: int) -> list[list[Hit]]:
        lists = self.inner.retrieve(queries, k)
        if len(lists) != len(queries):
            raise InputError(
                f"retriever {self.fingerprint!r} returned {len(lists)} hit lists for {len(queries)} queries",
                field="retrieve",
            )
        return [[h if isinstance(h, Hit) else Hit.model_validate(h) for h in hits] for hits in lists]

    def __getattr__(self, name: str) -> Any:  # index, encoder, ... of the wrapped retriever
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


def checked(obj: Any, name: str = "") -> Retriever:
    """``obj`` as a :class:`Retriever`: mmrag's own retrievers as they are, a llama-index
    ``BaseRetriever`` wrapped (``name`` is then its fingerprint), anything else with a string
    ``fingerprint`` and a callable ``retrieve`` behind :class:`CheckedRetriever`.  Anything else is
    an InputError saying what is missing."""
    if type(obj).__module__.startswith("mmrag.retrieval") and isinstance(obj, Retriever):
        return obj
    if _is_llamaindex(obj):
        from mmrag.retrieval.llamaindex import LlamaIndexRetriever

        return LlamaIndexRetriever(obj, name=name)
    missing = [
        what
        for what, ok in (
            ("a string 'fingerprint'", isinstance(getattr(obj, "fingerprint", None), str)),
            ("a 'retrieve(queries, k)' method", callable(getattr(obj, "retrieve", None))),
        )
        if not ok
    ]
    if missing:
        raise InputError(
            f"{type(obj).__name__} is not a retriever: it needs {' and '.join(missing)}", field="retriever"
        )
    return CheckedRetriever(obj)


def _is_llamaindex(obj: Any) -> bool:
    return any(c.__module__.startswith("llama_index") and c.__name__ == "BaseRetriever" for c in type(obj).__mro__)


class KnowledgeBase:
    """The documents of one benchmark with the retrieval tools over them (module docstring).

    ``cache_dir``: where the default dense indices are kept (default ``MMRAG_HOME/indices``, the
    folder runs use, so a notebook and a run share one build)."""

    def __init__(self, documents: Iterable[Document], cache_dir: str | Path | None = None) -> None:
        from mmrag.retrieval.store import InMemoryDocStore

        self.documents = list(documents)
        if not self.documents:
            raise InputError("the benchmark has no knowledge base", field="documents")
        self.store = InMemoryDocStore(self.documents)
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._world: Any = None

    def __len__(self) -> int:
        return len(self.documents)

    def get(self, doc_id: str) -> Document:
        """The document with that id (KeyError when there is none)."""
        return self.store.get(doc_id)

    @property
    def modality_of(self) -> dict[str, str]:
        return {d.id: d.modality for d in self.documents}

    def _world_miner(self) -> Any:
        if self._world is None:
            from mmrag.retrieval.world import build_world_miner
            from mmrag.util import mmrag_home

            self._world = build_world_miner(self.documents, self.cache_dir or mmrag_home() / "indices")
        return self._world

    def index(self, kind: str = "text") -> Retriever:
        """The default dense retriever of one index kind (``text``: MiniLM; ``visual``;
        ``multimodal``), built on first use and cached as a run caches it."""
        retrievers = self._world_miner().retrievers
        if kind not in retrievers:
            raise InputError(f"no {kind} index over this knowledge base (kinds: {sorted(retrievers)})", field="kind")
        return retrievers[kind]

    def retriever(self, spec: Any, *, name: str = "", **options: Any) -> Retriever:
        """A retriever over this knowledge base: a registered name or spec (``"bm25"``,
        ``{"name": "bm25", "k1": 1.2}``, an entry point, a dotted path when code is trusted) built
        with its documents, or an object, checked against the protocol (:func:`checked`)."""
        if isinstance(spec, (str, dict)):
            from mmrag.retrieval.plugins import create_retriever

            return create_retriever(spec, documents=self.documents, store=self.store, **options)
        return checked(spec, name=name)

    def search(self, retriever: Any, text: str, k: int = 5) -> Any:
        """The top ``k`` hits for one text query as a DataFrame (rank, doc_id, score, modality, title)."""
        import pandas as pd

        hits = checked(retriever).retrieve([Query(text=text)], k)[0]
        rows = [
            {
                "rank": i + 1,
                "doc_id": h.doc_id,
                "score": h.score,
                "modality": h.modality,
                "title": self.get(h.doc_id).title,
            }
            for i, h in enumerate(hits)
        ]
        return pd.DataFrame(rows, columns=["rank", "doc_id", "score", "modality", "title"])

    def evaluate(
        self, retriever: Any, samples: Iterable[Sample], ks: Sequence[int] = (1, 5, 10), *, use_images: bool = False
    ) -> dict[str, Any]:
        """Recall@k and MRR of the samples' gold documents when the retriever is asked each
        question (``use_images``: with the query images too), overall (``["groups"]["all"]``) and
        per group; see :func:`mmrag.retrieval.evaluation.evaluate_retrieval`."""
        from mmrag.retrieval.evaluation import evaluate_retrieval

        return evaluate_retrieval(checked(retriever), samples, self.modality_of, ks=ks, use_images=use_images)

    def miner(self, retrievers: Mapping[str, Any] | None = None, **options: Any) -> Any:
        """A negative miner: ``None`` gives the default one (the dense text, visual and multimodal
        indices) that runs use; ``{"text": r}`` mines that kind with ``r`` instead.  Its
        ``negatives(sample, n, modality, seed=0)`` returns the documents found, the shortfall and
        the answer leaks dropped."""
        if retrievers is None and not options:
            return self._world_miner()
        from mmrag.retrieval.miner import IndexMiner

        unknown = set(retrievers or {}) - set(INDEX_KINDS)
        if unknown:
            raise InputError(f"unknown index kind(s) {sorted(unknown)} ({' | '.join(INDEX_KINDS)})", field="retrievers")
        return IndexMiner(self.store, {k: checked(r) for k, r in (retrievers or {}).items()}, **options)

    def embedding(self, **kwargs: Any) -> Any:
        """The default text encoder (MiniLM, packaged: no download) as a llama-index
        ``BaseEmbedding``, so a llama-index index embeds as mmrag's text index does."""
        from mmrag.indices.encoders import SentenceTransformerEncoder
        from mmrag.retrieval.llamaindex import as_llamaindex_embedding

        return as_llamaindex_embedding(SentenceTransformerEncoder(), **kwargs)
