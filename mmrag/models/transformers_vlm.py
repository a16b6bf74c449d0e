"""Local VLMs in-process with transformers: ``AutoModelForImageTextToText`` + ``AutoProcessor``.

The path a real checkpoint takes, and the only one: weights come from a local directory or the
Hugging Face hub cache (``local_files_only=True`` — mmrag never downloads), the prompt goes through
the processor's own chat template, batches are left-padded (so every row's last token is its own
last prompt token and greedy decoding of a batch equals one-by-one decoding), generation is greedy
unless ``temperature > 0``.

Choices, all options of the spec (``options:`` in a config):

* ``dtype``: ``auto`` = bfloat16 on a GPU that supports it, else float16 on GPU, float32 on CPU;
* ``device_map``: ``auto`` = transformers' placement across GPUs when CUDA is present (needs the
  ``accelerate`` package), nothing on CPU; any explicit value is passed through;
* ``batch_size`` (8); prompts are sorted by length inside a call to waste less padding, and answers
  are returned in input order; a CUDA out-of-memory error halves the batch and retries, and a single
  prompt that still does not fit becomes an ``other`` error;
* a prompt longer than the model's context (``max_input_tokens``, default the text config's
  ``max_position_embeddings``) becomes a ``context_overflow`` error, never a truncated prompt;
* ``system_prompt: false`` for chat templates without a system role (its text is prepended to the
  first user turn).

The fingerprint names the checkpoint (hub id, or the directory's name) and its revision: the hub
commit for cached hub models, else a content hash of the directory (every file when under 256 MiB,
config + weight-file sizes above that).
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mmrag.errors import InputError, pydantic_field, pydantic_message
from mmrag.models.base import Capabilities, GenerationSettings, ModelSpec
from mmrag.models.render import template_messages
from mmrag.schema import Prompt, Response, Usage

_FULL_HASH_LIMIT = 256 << 20


class TransformersOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = "auto"
    device_map: str | dict[str, Any] | None = "auto"
    device: str | None = None
    batch_size: int = Field(default=8, ge=1)
    revision: str | None = None
    trust_remote_code: bool = False
    attn_implementation: str | None = None
    max_images: int | None = None
    system_prompt: bool = True
    max_input_tokens: int | None = Field(default=None, ge=1)
    sort_by_length: bool = True
    processor_kwargs: dict[str, Any] = Field(default_factory=dict)


def resolve_checkpoint(model: str, revision: str | None) -> tuple[str, str, str]:
    """``(load_from, display_name, revision_id)`` for a local directory or a hub-cache entry."""
    p = Path(model).expanduser()
    if p.is_dir():
        return str(p), p.name, _dir_hash(p)
    try:
        from huggingface_hub import snapshot_download

        snap = snapshot_download(model, revision=revision, local_files_only=True)
    except Exception:
        raise InputError(
            f"'{model}' is neither a local model directory nor in the Hugging Face hub cache "
            "(mmrag never downloads weights: download it first or give a path)",
            field="model",
        ) from None
    return snap, model, Path(snap).name


def _dir_hash(d: Path) -> str:
    files = sorted(f for f in d.rglob("*") if f.is_file() and not f.name.startswith("."))
    total = sum(f.stat().st_size for f in files)
    h = hashlib.sha256()
    for f in files:
        rel = f.relative_to(d).as_posix()
        h.update(rel.encode() + b"\0" + str(f.stat().st_size).encode() + b"\0")
        if total <= _FULL_HASH_LIMIT or f.suffix in (".json", ".jinja", ".txt", ".model"):
            h.update(f.read_bytes())
    return "local-" + h.hexdigest()[:16]


class TransformersVLM:
    backend = "transformers"

    def __init__(self, model: str, options: TransformersOptions | dict[str, Any] | None = None) -> None:
        try:
            self.options = (
                options if isinstance(options, TransformersOptions) else TransformersOptions(**(options or {}))
            )
        except ValidationError as exc:
            raise InputError(pydantic_message(exc), field=f"options.{pydantic_field(exc)}") from None
        if not model:
            raise InputError("the transformers backend needs a model path or hub id", field="model")
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        o = self.options
        src, name, rev = resolve_checkpoint(model, o.revision)
        self.fingerprint = f"transformers:{name}#{rev}"
        cuda = torch.cuda.is_available()
        self.dtype = _dtype(o.dtype, cuda)
        self.processor = AutoProcessor.from_pretrained(
            src, local_files_only=True, trust_remote_code=o.trust_remote_code, **o.processor_kwargs
        )
        self.tokenizer = getattr(self.processor, "tokenizer", self.processor)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        kwargs: dict[str, Any] = {
            "dtype": self.dtype,
            "local_files_only": True,
            "trust_remote_code": o.trust_remote_code,
        }
        if o.attn_implementation:
            kwargs["attn_implementation"] = o.attn_implementation
        device_map = o.device_map if (o.device_map != "auto" or cuda) else None
        if device_map is not None:
            kwargs["device_map"] = device_map
        try:
            self.model = AutoModelForImageTextToText.from_pretrained(src, **kwargs)
        except (ImportError, ValueError) as exc:
            if "accelerate" in str(exc).lower():
                raise InputError(
                    "device_map needs the 'accelerate' package (pip install accelerate) or options.device_map: null",
                    field="options.device_map",
                ) from None
            raise
        if device_map is None:
            self.model.to(o.device or ("cuda" if cuda else "cpu"))
        self.model.eval()
        self.max_input_tokens = o.max_input_tokens or _max_positions(self.model.config)
        self.capabilities = Capabilities(max_images=o.max_images, system_prompt=o.system_prompt)
        self._lock = threading.Lock()
        self.calls = 0  # prompts that reached model.generate

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> TransformersVLM:
        return cls(spec.model, spec.options)

    def __repr__(self) -> str:
        return f"TransformersVLM({self.fingerprint!r})"

    # -- the protocol ----------------------------------------------------------------------------
    def generate(self, prompts: Sequence[Prompt], settings: GenerationSettings | None = None) -> list[Response]:
        settings = settings if settings is not None else GenerationSettings()
        with self._lock:
            return self._generate_all(list(prompts), settings)

    async def agenerate(self, prompts: Sequence[Prompt], settings: GenerationSettings) -> list[Response]:
        return await asyncio.to_thread(self.generate, prompts, settings)

    # -- internals -------------------------------------------------------------------------------
    def render(self, prompt: Prompt) -> tuple[str, list[Any]]:
        """The chat-templated text of one prompt and its PIL images (in order)."""
        o = self.options
        msgs, refs = template_messages(prompt, system_prompt=o.system_prompt)
        if o.max_images is not None and len(refs) > o.max_images:
            raise InputError(
                f"prompt has {len(refs)} images; this model accepts {o.max_images}", field=f"prompt {prompt.id}"
            )
        text = self.processor.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
        images = []
        for r in refs:
            try:
                images.append(r.load())
            except OSError as exc:  # missing or unreadable file: bad input, not a model error
                raise InputError(f"cannot load image: {exc}", path=r.path) from None
        return text, images

    def _generate_all(self, prompts: list[Prompt], settings: GenerationSettings) -> list[Response]:
        rendered = [self.render(p) for p in prompts]
        order = list(range(len(prompts)))
        if self.options.sort_by_length:
            order.sort(key=lambda i: (len(rendered[i][0]), len(rendered[i][1])))
        out: list[Response | None] = [None] * len(prompts)
        bs = self.options.batch_size
        for s in range(0, len(order), bs):
            idx = order[s : s + bs]
            for i, r in zip(idx, self._batch([prompts[i] for i in idx], [rendered[i] for i in idx], settings)):
                out[i] = r
        return [r for r in out if r is not None]

    def _encode(self, rendered: list[tuple[str, list[Any]]]):
        texts = [t for t, _ in rendered]
        images = [im for _, ims in rendered for im in ims]
        inputs = self.processor(text=texts, images=images or None, padding=True, return_tensors="pt")
        return inputs.to(self.model.device)

    def _batch(
        self, prompts: list[Prompt], rendered: list[tuple[str, list[Any]]], settings: GenerationSettings
    ) -> list[Response]:
        import torch

        t0 = time.perf_counter()
        inputs = self._encode(rendered)
        lengths = inputs["attention_mask"].sum(dim=1).tolist()
        too_long = [n > self.max_input_tokens for n in lengths]
        if any(too_long):  # answer the rest, report the long ones
            keep = [i for i, bad in enumerate(too_long) if not bad]
            rest = self._batch([prompts[i] for i in keep], [rendered[i] for i in keep], settings) if keep else []
            it = iter(rest)
            return [
                Response(
                    prompt_id=p.id,
                    model=self.fingerprint,
                    error="context_overflow",
                    error_detail=f"{n} input tokens > {self.max_input_tokens}",
                )
                if bad
                else next(it)
                for p, n, bad in zip(prompts, lengths, too_long)
            ]
        try:
            with torch.inference_mode():
                out = self.model.generate(**inputs, **self._gen_kwargs(settings))
        except torch.OutOfMemoryError:
            if self.model.device.type == "cuda":
                torch.cuda.empty_cache()
            if len(prompts) == 1:
                return [
                    Response(
                        prompt_id=prompts[0].id,
                        model=self.fingerprint,
                        error="other",
                        error_detail="out of memory for a single prompt",
                    )
                ]
            h = len(prompts) // 2
            return self._batch(prompts[:h], rendered[:h], settings) + self._batch(prompts[h:], rendered[h:], settings)
        self.calls += len(prompts)
        new = out[:, inputs["input_ids"].shape[1] :]
        texts = self.tokenizer.batch_decode(new, skip_special_tokens=True)
        dt = (time.perf_counter() - t0) / len(prompts)
        eos = _eos_ids(self.model)
        res = []
        for p, n, row, text in zip(prompts, lengths, new.tolist(), texts):
            text = _cut_stop(text, settings.stop)
            res.append(
                Response(
                    prompt_id=p.id,
                    text=text.strip(),
                    model=self.fingerprint,
                    latency_s=dt,
                    usage=Usage(prompt_tokens=int(n), completion_tokens=_n_generated(row, eos)),
                )
            )
        return res

    def _gen_kwargs(self, settings: GenerationSettings) -> dict[str, Any]:
        import torch

        kw: dict[str, Any] = {"max_new_tokens": settings.max_new_tokens, "pad_token_id": self.tokenizer.pad_token_id}
        if settings.temperature > 0:
            kw.update(do_sample=True, temperature=settings.temperature, top_p=settings.top_p)
            if settings.seed is not None:
                torch.manual_seed(settings.seed)
        else:
            kw.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if settings.stop:
            kw.update(stop_strings=list(settings.stop), tokenizer=self.tokenizer)
        kw.update(settings.extra)  # --gen-kwargs (num_beams, repetition_penalty, ...) as given
        return kw


def _dtype(name: str, cuda: bool):
    import torch

    if name == "auto":
        if not cuda:
            return torch.float32
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return getattr(torch, name)


def _max_positions(config: Any) -> int:
    for cfg in (getattr(config, "text_config", None), config):
        n = getattr(cfg, "max_position_embeddings", None) if cfg is not None else None
        if isinstance(n, int) and n > 0:
            return n
    return 1 << 30


def _eos_ids(model: Any) -> set[int]:
    e = getattr(model.generation_config, "eos_token_id", None)
    if e is None:
        return set()
    return set(e) if isinstance(e, (list, tuple)) else {int(e)}


def _n_generated(row: list[int], eos: set[int]) -> int:
    for k, t in enumerate(row):
        if t in eos:
            return k + 1
    return len(row)


def _cut_stop(text: str, stops: list[str]) -> str:
    for s in stops:
        if s and s in text:
            text = text[: text.index(s)]
    return text
