"""Built-in retriever factories and the plug-in entry: ``RETRIEVERS`` (see mmrag.retrieval.base).

A retriever is found by name in this order: the built-ins below; the entry-point group
``mmrag.retrievers`` (a third-party package declares
``[project.entry-points."mmrag.retrievers"] mine = "my_pkg.module:MyRetriever"``); a dotted path
``my_pkg.module:MyRetriever`` written straight into a config.  A factory receives the keyword
arguments of the config, plus ``documents`` / ``store`` when the caller has a knowledge base.
"""

from __future__ import annotations

import inspect
from typing import Any

from mmrag.errors import InputError
from mmrag.retrieval.base import RETRIEVERS, Retriever
from mmrag.retrieval.cache import CachedRetriever
from mmrag.retrieval.dense import DenseRetriever
from mmrag.retrieval.hybrid import HybridRetriever
from mmrag.retrieval.lexical import BM25Retriever

register_retriever = RETRIEVERS.register
NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)

RETRIEVERS.register("dense", DenseRetriever)
RETRIEVERS.register("bm25", BM25Retriever)


@RETRIEVERS.register("hybrid")
def _hybrid(
    retrievers: list[Any], k_rrf: int = 60, weights: list[float] | None = None, depth: int | None = None, **shared: Any
) -> HybridRetriever:
    """``retrievers`` may hold built retrievers or specs (``{"name": "bm25"}``) built with ``shared``."""
    built = [r if hasattr(r, "retrieve") else create_retriever(r, **shared) for r in retrievers]
    return HybridRetriever(built, k_rrf=k_rrf, weights=weights, depth=depth)


def create_retriever(spec: str | dict[str, Any], *, cache: str | None = None, **shared: Any) -> Retriever:
    """Build a retriever from ``"bm25"`` / ``"pkg.mod:Cls"`` or ``{"name": ..., **kwargs}``.

    ``shared`` (for example ``documents=``) is passed to factories that accept it; ``cache`` (a
    SQLite path) wraps the result in a :class:`CachedRetriever`.
    """
    if isinstance(spec, str):
        name, kwargs = spec, {}
    else:
        if "name" not in spec:
            raise InputError("a retriever spec needs 'name'", field="retriever.name")
        name, kwargs = spec["name"], {k: v for k, v in spec.items() if k != "name"}
    factory = RETRIEVERS.get(name)
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        sig = None
    if sig is not None:
        params = sig.parameters
        takes_all = any(p.kind is p.VAR_KEYWORD for p in params.values())
        extra = {k: v for k, v in shared.items() if takes_all or k in params}
        try:  # a missing or unknown option is the config's error, said in one line, not a TypeError
            sig.bind(**extra, **kwargs)
        except TypeError as exc:
            raise InputError(
                f"retriever '{name}' cannot be built from these options ({exc}); its options: "
                f"{', '.join(n for n, p in params.items() if n not in ('documents', 'store') and p.kind in NAMED) or 'none'}",
                field=f"retriever.{name}",
            ) from None
    else:
        extra = dict(shared)
    retriever = factory(**extra, **kwargs)
    if not hasattr(retriever, "retrieve") or not hasattr(retriever, "fingerprint"):
        raise InputError(
            f"retriever '{name}' does not implement the Retriever protocol "
            "(needs .fingerprint and .retrieve(queries, k))",
            field="retriever",
        )
    return CachedRetriever(retriever, cache) if cache else retriever
