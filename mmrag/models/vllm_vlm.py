"""vLLM's offline engine (``vllm.LLM``) behind the VLM protocol — an optional extra (``mmrag[vllm]``).

Same prompts, same settings, same errors as the other backends: prompts are rendered in the
chat-completions form (:func:`~mmrag.models.render.openai_messages`, images as data URLs) and passed
to ``LLM.chat``, which applies the model's own chat template and image processing; settings map to
``SamplingParams`` (greedy when ``temperature == 0``).  vLLM schedules the whole list itself
(continuous batching), so there is no batch size to tune here.  A prompt longer than
``max_model_len`` makes vLLM reject the whole call; the backend then retries prompt by prompt and
reports only the offenders as ``context_overflow``.

The import is guarded: without vllm installed, naming this backend is an InputError that says how
to install it, and nothing else in mmrag needs it.  (Not exercised by the CPU test suite.)
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mmrag.errors import InputError, pydantic_field, pydantic_message
from mmrag.models.base import Capabilities, GenerationSettings, ModelSpec
from mmrag.models.render import openai_messages
from mmrag.models.transformers_vlm import resolve_checkpoint
from mmrag.schema import ErrorClass, Prompt, Response, Usage

_OVERFLOW = ("maximum model length", "max_model_len", "longer than the maximum", "too long")


class VLLMOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    revision: str | None = None
    dtype: str = "auto"
    tensor_parallel_size: int = Field(default=1, ge=1)
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)
    max_model_len: int | None = None
    max_images: int = Field(default=8, ge=0)
    trust_remote_code: bool = False
    enforce_eager: bool = False
    engine_kwargs: dict[str, Any] = Field(default_factory=dict)


def _require_vllm():
    try:
        import vllm
    except ImportError:
        raise InputError(
            "the vllm backend needs the 'vllm' package: pip install 'mmrag[vllm]' (Linux + CUDA)", field="backend"
        ) from None
    return vllm


class VLLMVLM:
    backend = "vllm"

    def __init__(self, model: str, options: VLLMOptions | dict[str, Any] | None = None) -> None:
        try:
            self.options = options if isinstance(options, VLLMOptions) else VLLMOptions(**(options or {}))
        except ValidationError as exc:
            raise InputError(pydantic_message(exc), field=f"options.{pydantic_field(exc)}") from None
        vllm = _require_vllm()
        o = self.options
        src, name, rev = resolve_checkpoint(model, o.revision)
        self.fingerprint = f"vllm:{name}#{rev}"
        kwargs: dict[str, Any] = dict(
            model=src,
            dtype=o.dtype,
            tensor_parallel_size=o.tensor_parallel_size,
            gpu_memory_utilization=o.gpu_memory_utilization,
            trust_remote_code=o.trust_remote_code,
            enforce_eager=o.enforce_eager,
            limit_mm_per_prompt={"image": o.max_images},
        )
        if o.max_model_len:
            kwargs["max_model_len"] = o.max_model_len
        kwargs.update(o.engine_kwargs)
        self._vllm = vllm
        self.llm = vllm.LLM(**kwargs)
        self.capabilities = Capabilities(max_images=o.max_images, system_prompt=True)
        self._lock = threading.Lock()
        self.calls = 0

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> VLLMVLM:
        return cls(spec.model, spec.options)

    def __repr__(self) -> str:
        return f"VLLMVLM({self.fingerprint!r})"

    def sampling_params(self, settings: GenerationSettings):
        greedy = settings.temperature == 0
        return self._vllm.SamplingParams(
            n=1,
            temperature=0.0 if greedy else settings.temperature,
            top_p=1.0 if greedy else settings.top_p,
            max_tokens=settings.max_new_tokens,
            stop=list(settings.stop) or None,
            seed=settings.seed,
            **settings.extra,
        )  # --gen-kwargs as given

    def generate(self, prompts: Sequence[Prompt], settings: GenerationSettings | None = None) -> list[Response]:
        settings = settings if settings is not None else GenerationSettings()
        prompts = list(prompts)
        if not prompts:
            return []
        convs = [openai_messages(p) for p in prompts]
        params = self.sampling_params(settings)
        with self._lock:
            t0 = time.perf_counter()
            try:
                outs = self.llm.chat(convs, sampling_params=params, use_tqdm=False)
            except ValueError as exc:
                if len(prompts) == 1:
                    return [self._failed(prompts[0], exc)]
                return [self.generate([p], settings)[0] for p in prompts]
            self.calls += len(prompts)
            dt = (time.perf_counter() - t0) / len(prompts)
        return [self._response(p, o, dt) for p, o in zip(prompts, outs)]

    async def agenerate(self, prompts: Sequence[Prompt], settings: GenerationSettings) -> list[Response]:
        return await asyncio.to_thread(self.generate, prompts, settings)

    def _response(self, prompt: Prompt, out: Any, dt: float) -> Response:
        comp = out.outputs[0]
        return Response(
            prompt_id=prompt.id,
            text=comp.text.strip(),
            model=self.fingerprint,
            latency_s=dt,
            usage=Usage(prompt_tokens=len(out.prompt_token_ids or []), completion_tokens=len(comp.token_ids or [])),
        )

    def _failed(self, prompt: Prompt, exc: Exception) -> Response:
        msg = str(exc)
        err: ErrorClass = "context_overflow" if any(m in msg.lower() for m in _OVERFLOW) else "other"
        return Response(prompt_id=prompt.id, model=self.fingerprint, error=err, error_detail=msg[:500])
