"""Model replicas in Ray actors, behind the ordinary ``VLM`` protocol.

Why a VLM wrapper and not a Ray run engine: the driver stays the one writer of the run directory
(its lock, fsync cadence, resume and crash safety are the local engine's, unchanged), and the run
engine does not need to know where a model computes.  :class:`RayVLM` is what ``create_model``
returns for an in-process model while :func:`ray_placement` is active: the same fingerprint and
capabilities as the local model, and ``agenerate`` splits each prompt list into contiguous chunks
sent to the least-busy replica, then puts the answers back in prompt order.  The response cache
stays on the driver (``CachedVLM`` wraps the RayVLM), so cached prompts never leave the driver.

What runs where: a model spec with a ``base_url`` talks to a server (the OpenAI-compatible client)
and stays on the driver with its adaptive concurrency; every other backend computes in-process
(``transformers``, ``vllm``, baselines, ``sleepy``, third-party backends) and lives in actors —
one per GPU of the cluster, or ``replicas`` actors of ``replica_cpus`` CPUs on a CPU cluster.

Failure: actors restart (``max_restarts``) and re-run the calls they had in flight
(``max_task_retries``); each call's answer reaches the driver once, so a killed replica loses and
duplicates nothing.  Prompts and responses cross the wire as pydantic JSON, never as objects.
"""

from __future__ import annotations

import asyncio
import math
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

from mmrag.errors import InputError
from mmrag.models.aio import run_sync
from mmrag.models.base import MODELS, Capabilities, GenerationSettings, ModelSpec
from mmrag.schema import Prompt, Response


class ModelReplica:
    """The actor body: one model, built from its spec on whichever node Ray places it."""

    def __init__(self, spec: dict[str, Any], trust_code: bool = False) -> None:
        from mmrag.registry import allow_code

        self.error: dict[str, Any] | None = None
        self.model: Any = None
        try:
            with allow_code(trust_code):  # the driver's --allow-code, no more
                self.model = MODELS.create(spec["backend"], ModelSpec.model_validate(spec))
        except InputError as exc:  # reported by info(), re-raised on the driver with file/field
            self.error = {"message": exc.message, "path": exc.path, "line": exc.line, "field": exc.field}
        except Exception as exc:  # noqa: BLE001 - any load failure is reported the same way
            self.error = {"message": f"{type(exc).__name__}: {str(exc)[:400]}"}

    def info(self) -> dict[str, Any]:
        if self.error is not None:
            return {"error": self.error}
        return {
            "fingerprint": self.model.fingerprint,
            "capabilities": self.model.capabilities.model_dump(mode="json"),
            "key_extra": callable(getattr(self.model, "cache_key_extra", None)),
            "pid": os.getpid(),
        }

    def generate(self, prompts: list[dict[str, Any]], settings: dict[str, Any]) -> list[dict[str, Any]]:
        ps = [Prompt.model_validate(p) for p in prompts]
        out = self.model.generate(ps, GenerationSettings.model_validate(settings))
        return [r.model_dump(mode="json") for r in out]


class RayVLM:
    """``replicas`` actors of one model spec, used like the local model."""

    def __init__(
        self,
        spec: ModelSpec,
        replicas: int = 1,
        *,
        num_gpus: float = 0,
        num_cpus: float = 0,
        max_batch: int = 64,
        max_restarts: int = 4,
    ) -> None:
        import ray

        self.spec, self.max_batch = spec, max(1, int(max_batch))
        # SPREAD: replicas go to different nodes where they can, as one would place one per GPU
        actor = ray.remote(ModelReplica).options(
            num_cpus=num_cpus,
            num_gpus=num_gpus,
            max_restarts=max_restarts,
            max_task_retries=-1,
            scheduling_strategy="SPREAD",
        )
        from mmrag.registry import code_allowed

        payload = spec.model_dump(mode="json")
        self.actors = [actor.remote(payload, code_allowed()) for _ in range(max(1, int(replicas)))]
        infos = ray.get([a.info.remote() for a in self.actors])
        err = next((i["error"] for i in infos if "error" in i), None)
        if err is not None:
            self.close()
            raise InputError(
                err["message"], path=err.get("path"), line=err.get("line"), field=err.get("field") or "--model"
            )
        self.fingerprint: str = infos[0]["fingerprint"]
        self.capabilities = Capabilities.model_validate(infos[0]["capabilities"])
        self.pids = [i["pid"] for i in infos]
        if infos[0]["key_extra"]:
            # A backend that widens its cache key (the baselines) reads the prompt only; a driver
            # copy computes the same key the local run would, so both share cache entries.
            local: Any = MODELS.create(spec.backend, spec)  # a backend with key_extra has cache_key_extra
            self.cache_key_extra: Callable[[Prompt], Any] = local.cache_key_extra
        # the window a streaming engine keeps in flight for this model: two calls' worth per replica,
        # so each replica has its next batch queued while the driver judges and stores the last
        self.max_concurrency = 2 * len(self.actors) * self.max_batch
        self._inflight = [0] * len(self.actors)
        self._lock = threading.Lock()
        self.calls = 0  # chunks sent to replicas

    def __repr__(self) -> str:
        return f"RayVLM({self.fingerprint!r}, replicas={len(self.actors)})"

    def _acquire(self) -> int:
        with self._lock:
            i = min(range(len(self.actors)), key=self._inflight.__getitem__)
            self._inflight[i] += 1
            self.calls += 1
            return i

    def _release(self, i: int) -> None:
        with self._lock:
            self._inflight[i] -= 1

    async def _call(self, chunk: Sequence[Prompt], settings: dict[str, Any]) -> list[Response]:
        i = self._acquire()
        try:
            out = await self.actors[i].generate.remote([p.model_dump(mode="json") for p in chunk], settings)
        finally:
            self._release(i)
        return [Response.model_validate(r) for r in out]

    async def agenerate(self, prompts: Sequence[Prompt], settings: GenerationSettings) -> list[Response]:
        """Answers in prompt order; a list larger than the replicas is split so every replica
        gets a share (at most ``max_batch`` prompts per call)."""
        prompts = list(prompts)
        if not prompts:
            return []
        size = min(self.max_batch, math.ceil(len(prompts) / len(self.actors)))
        chunks = [prompts[i : i + size] for i in range(0, len(prompts), size)]
        payload = settings.model_dump(mode="json")
        parts = await asyncio.gather(*(self._call(c, payload) for c in chunks))
        return [r for part in parts for r in part]

    def generate(self, prompts: Sequence[Prompt], settings: GenerationSettings) -> list[Response]:
        return run_sync(lambda: self.agenerate(prompts, settings))

    def close(self) -> None:
        import ray

        for a in self.actors:
            ray.kill(a, no_restart=True)
        self.actors = []


def runs_in_actor(spec: ModelSpec) -> bool:
    """A spec that names a server (``base_url``) is a client: it stays on the driver."""
    return not spec.base_url


class RayPlacement:
    """The ``create_model`` hook: in-process models become :class:`RayVLM` replica sets (one per
    distinct spec, shared by every caller in this process); clients stay local (``None``).

    Sizing: on a GPU cluster each replica holds one whole GPU (``replicas`` defaults to all of
    them), so every local model of a run needs its own GPUs — asking for more than the cluster has
    is an error here rather than actors that wait forever.  On a CPU cluster a replica reserves
    ``replica_cpus`` (default 0: latency-bound replicas share cores, and several models of one run
    never wait on each other for a reservation)."""

    def __init__(self, replicas: int | None = None, replica_cpus: float = 0, max_batch: int = 64) -> None:
        from mmrag.distributed.cluster import cluster_gpus

        self.gpus = cluster_gpus()
        self.num_gpus = 1 if self.gpus else 0
        self.replicas = replicas or (self.gpus or 1)
        self.replica_cpus, self.max_batch = replica_cpus, max_batch
        self.models: dict[str, RayVLM] = {}

    def __call__(self, spec: ModelSpec) -> RayVLM | None:
        if not runs_in_actor(spec):
            return None
        key = spec.model_dump_json()
        if key not in self.models:
            held = sum(len(m.actors) for m in self.models.values()) * self.num_gpus
            if self.num_gpus and held + self.replicas > self.gpus:
                raise InputError(
                    f"model {spec.label} needs {self.replicas} more GPU(s) but the cluster has "
                    f"{self.gpus - held} free (one GPU per replica, {held} held by other models); "
                    "use --replicas or fewer local models per run",
                    field="--replicas",
                )
            self.models[key] = RayVLM(
                spec, self.replicas, num_gpus=self.num_gpus, num_cpus=self.replica_cpus, max_batch=self.max_batch
            )
        return self.models[key]

    def close(self) -> None:
        for m in self.models.values():
            m.close()
        self.models.clear()
