"""``CachedVLM``: any VLM behind the response cache.

Policy (the cache itself only stores): a request is looked up and stored only when
``settings.deterministic`` (greedy) — a sampled answer is not a function of its prompt; a Response
with an ``error``, or an incomplete one (``finish_reason`` length / content_filter), is never
stored, so a re-run retries what failed; identical prompts within one batch are sent once.

Writes are group-committed: a streaming run calls ``agenerate`` with one prompt at a time, and an
fsynced SQLite commit per reply would cost more than the reply.  New entries are written (in a
worker thread) once ``commit_every`` are pending or ``commit_seconds`` have passed, and by
:meth:`aclose` / at the end of :meth:`generate`.  A kill loses at most those pending entries of the
cache — the run store, not the cache, is what must not lose an answer.  Responses served without a model call carry ``cached=True`` and the
``prompt_id`` of the prompt they answer (two prompts may share content but not ids).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from mmrag.models.aio import generate_then_close
from mmrag.models.base import GenerationSettings
from mmrag.models.cache import ResponseCache, cache_key
from mmrag.schema import Prompt, Response


class CachedVLM:
    def __init__(
        self, inner: Any, cache: ResponseCache, *, commit_every: int = 64, commit_seconds: float = 0.5
    ) -> None:
        self.inner = inner
        self.cache = cache
        self.fingerprint: str = inner.fingerprint
        self.capabilities = inner.capabilities
        self.model_calls = 0  # prompts actually sent to ``inner`` through this wrapper
        self.commit_every, self.commit_seconds = commit_every, commit_seconds
        self._pending: list[tuple[str, str, Response]] = []
        self._since = 0.0

    def __getattr__(self, name: str) -> Any:  # meter, limiter, ... of the wrapped backend
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"CachedVLM({self.inner!r}, {self.cache!r})"

    def key(self, prompt: Prompt, settings: GenerationSettings) -> str:
        extra_fn = getattr(self.inner, "cache_key_extra", None)
        return cache_key(self.fingerprint, prompt, settings, extra_fn(prompt) if callable(extra_fn) else None)

    def generate(self, prompts: Sequence[Prompt], settings: GenerationSettings | None = None) -> list[Response]:
        settings = settings if settings is not None else GenerationSettings()
        return generate_then_close(self, prompts, settings)

    async def aclose(self) -> None:
        """Commit pending cache entries and let the wrapped backend release what it holds."""
        self.commit()
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()

    def commit(self) -> None:
        items, self._pending = self._pending, []
        if items:
            self.cache.put_many(items)

    async def _store(self, items: list[tuple[str, str, Response]]) -> None:
        if not items:
            return
        if not self._pending:
            self._since = time.monotonic()
        self._pending.extend(items)
        if len(self._pending) >= self.commit_every or time.monotonic() - self._since >= self.commit_seconds:
            batch, self._pending = self._pending, []
            await asyncio.to_thread(self.cache.put_many, batch)

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
            await self._store(
                [(k, self.fingerprint, r) for k, r in fresh.items() if r.error is None and not r.incomplete]
            )
        out: list[Response] = []
        for i, (p, k) in enumerate(zip(prompts, keys)):
            if k in found:
                out.append(found[k].model_copy(update={"prompt_id": p.id}))
            elif first[k] == i:
                out.append(fresh[k])
            else:  # a duplicate within this batch: answered by its first copy, no call made
                out.append(fresh[k].model_copy(update={"prompt_id": p.id, "cached": fresh[k].error is None}))
        return out
