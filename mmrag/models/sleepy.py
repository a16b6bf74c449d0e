"""``sleepy:BASELINE[@MS]``: a baseline's answers at a GPU model's pace.

Why: scaling a run over model replicas is about latency — a GPU model's process waits on its
device, the driver waits on the process.  This backend answers exactly like the named baseline
(``sleepy:context-reader`` reads like ``context-reader``) but blocks its process ``MS``
milliseconds per prompt first (default 20), with ``time.sleep`` rather than an ``await``: like a
device it serialises the calls of one process, so throughput can only grow with replicas.  It is
what the Ray tests and ``perf/ray_bench.py`` run; the delay is not part of the fingerprint because
it never changes an answer.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from mmrag.errors import InputError
from mmrag.models.aio import run_sync
from mmrag.models.base import MODELS, ModelSpec
from mmrag.schema import Prompt, Response

DEFAULT_DELAY_MS = 20.0


class SleepyVLM:
    backend = "sleepy"

    def __init__(self, inner: Any, delay_ms: float = DEFAULT_DELAY_MS) -> None:
        if delay_ms < 0:
            raise InputError(f"the delay must be >= 0 ms, not {delay_ms}", field="--model")
        self.inner, self.delay_s = inner, float(delay_ms) / 1000.0
        self.fingerprint = f"sleepy:{inner.fingerprint}"
        self.capabilities = inner.capabilities
        self.calls = 0
        if callable(getattr(inner, "cache_key_extra", None)):
            self.cache_key_extra = inner.cache_key_extra

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> SleepyVLM:
        name, _, ms = spec.model.partition("@")
        if name == "sleepy" or name not in MODELS:
            raise InputError(f"sleepy:NAME needs a registered in-process model, not '{name}'", field="--model")
        try:
            delay = float(ms.removesuffix("ms")) if ms else float(spec.options.get("delay_ms", DEFAULT_DELAY_MS))
        except ValueError:
            raise InputError(
                f"sleepy:{spec.model}: the delay after '@' must be milliseconds, e.g. @20", field="--model"
            ) from None
        inner_opts = {k: v for k, v in spec.options.items() if k != "delay_ms"}
        inner = MODELS.create(name, ModelSpec(backend=name, settings=spec.settings, options=inner_opts))
        return cls(inner, delay)

    def __repr__(self) -> str:
        return f"SleepyVLM({self.inner!r}, {self.delay_s * 1000:g} ms)"

    async def agenerate(self, prompts: Sequence[Prompt], settings: Any) -> list[Response]:
        time.sleep(self.delay_s * len(prompts))  # blocks the process, as a busy device would
        self.calls += len(prompts)
        out = await self.inner.agenerate(prompts, settings)
        return [r.model_copy(update={"model": self.fingerprint}) for r in out]

    def generate(self, prompts: Sequence[Prompt], settings: Any) -> list[Response]:
        return run_sync(lambda: self.agenerate(prompts, settings))
