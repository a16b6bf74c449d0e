"""``CachedVLM``: any VLM behind the response cache.

Policy (the cache itself only stores): a request is looked up and stored only when
``settings.deterministic`` (greedy) — a sampled answer is not a function of its prompt; a Response
with an ``error`` is never stored, so a re-run retries what failed; identical prompts within one
batch are sent once.  Responses served without a model call carry ``cached=True`` and the
``prompt_id`` of the prompt they answer (two prompts may share content but not ids).
"""

from __future__ import annotations

from typing import Any, Sequence

from mmrag.models.aio import run_sync
from mmrag.models.base import GenerationSettings
from mmrag.models.cache import ResponseCache, cache_key
from mmrag.schema import Prompt, Response


class CachedVLM:
    def __init__(self, inner: Any, cache: ResponseCache) -> None:
        self.inner = inner
        self.cache = cache
        self.fingerprint: str = inner.fingerprint
        self.capabilities = inner.capabilities
        self.model_calls = 0   # prompts actually sent to ``inner`` through this wrapper

    def __getattr__(self, name: str) -> Any:   # meter, limiter, ... of the wrapped backend
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"CachedVLM({self.inner!r}, {self.cache!r})"

    def key(self, prompt: Prompt, settings: GenerationSettings) -> str:
        extra_fn = getattr(self.inner, "cache_key_extra", None)
        return cache_key(self.fingerprint, prompt, settings, extra_fn(prompt) if callable(extra_fn) else None)

    def generate(self, prompts: Sequence[Prompt], settings: GenerationSettings) -> list[Response]:
        return run_sync(lambda: self.agenerate(prompts, settings))

    async def agenerate(self, prompts: Sequence[Prompt], settings: GenerationSettings) -> list[Response]:
        if not settings.deterministic:
            self.model_calls += len(prompts)
            return list(await self.inner.agenerate(prompts, settings))
        keys = [self.key(p, settings) for p in prompts]
        found = self.cache.get_many(keys)
        first: dict[str, int] = {}
        for i, k in enumerate(keys):
            if k not in found:
                first.setdefault(k, i)
        fresh: dict[str, Response] = {}
        if first:
            todo = list(first.items())
            self.model_calls += len(todo)
            answers = await self.inner.agenerate([prompts[i] for _, i in todo], settings)
            fresh = {k: r for (k, _), r in zip(todo, answers)}
            self.cache.put_many([(k, self.fingerprint, r) for k, r in fresh.items() if r.error is None])
        out: list[Response] = []
        for i, (p, k) in enumerate(zip(prompts, keys)):
            if k in found:
                out.append(found[k].model_copy(update={"prompt_id": p.id}))
            elif first[k] == i:
                out.append(fresh[k])
            else:   # a duplicate within this batch: answered by its first copy, no call made
                out.append(fresh[k].model_copy(update={"prompt_id": p.id, "cached": fresh[k].error is None}))
        return out
