"""Everything about a run config that can be checked in milliseconds, checked before anything slow.

Why: a typo in a model's ``base_url`` or ``timeout``, or a retriever named by a dotted path without
``--allow-code``, or a damaged response cache, would otherwise surface only after the knowledge-base indices were built (tens of
seconds to hours).  :func:`check_config` resolves every plug-in name (without instantiating
anything, so no weights load and no code named in a config runs) and validates every model's
options; the engine calls it first.
"""

from __future__ import annotations

from typing import Any

from mmrag.models.factory import check_model_spec


def _retriever_names(spec: Any) -> list[str]:
    if isinstance(spec, str):
        return [spec]
    if not isinstance(spec, dict):
        return []
    names = [spec["name"]] if isinstance(spec.get("name"), str) else []
    for sub in spec.get("retrievers") or []:  # hybrid: nested specs
        names += _retriever_names(sub)
    return names


def check_config(config: Any) -> None:
    """Raise InputError (naming the field) for the first model or retriever the config cannot build."""
    from mmrag.retrieval.base import RETRIEVERS

    for i, spec in enumerate(config.models):
        check_model_spec(spec, f"models.{i}")
    if getattr(config.judge, "model", None) is not None:
        check_model_spec(config.judge.model, "judge.model")
    for _kind, spec in config.retrieval.retrievers.items():
        for name in _retriever_names(spec):
            RETRIEVERS.get(name)  # unknown names and refused dotted paths fail here
    if config.cache.enabled:  # a damaged response cache: named now, not after the indices
        from mmrag.models.cache import ResponseCache

        cache = ResponseCache(config.cache.path) if config.cache.path else ResponseCache.default()
        cache.close()
