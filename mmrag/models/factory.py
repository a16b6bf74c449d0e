"""From a name to a ready model: ``--model`` parsing, the built-in registrations, cache wrapping.

Built-in backends register here through *lazy* loaders (``MODELS.register(name, loader)``): importing
``mmrag.models`` does not import torch, transformers or vllm; only creating such a model does.
Third-party backends register through the ``mmrag.models`` entry-point group (a callable taking a
:class:`ModelSpec` and returning a VLM) and are then named like the built-ins.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from mmrag.errors import InputError
from mmrag.models.base import MODELS, VLM, GenerationSettings, ModelSpec
from mmrag.models.cache import ResponseCache
from mmrag.models.cached import CachedVLM
from mmrag.redact import KEY_HINT, redact_text, secret_setting
from mmrag.registry import load_dotted

_SETTING_FIELDS = frozenset(GenerationSettings.model_fields)
DEFAULT_CACHE = "default"


def _lazy(dotted: str, options: str | None = None) -> Callable[[ModelSpec], Any]:
    """A factory that imports ``module:Class`` on first use and calls ``Class.from_spec(spec)``.
    ``options`` names the pydantic model of the backend's ``options`` so that
    :func:`check_model_spec` can validate them without building the model (no weights loaded)."""

    def make(spec: ModelSpec) -> Any:
        return load_dotted(dotted).from_spec(spec)

    make.__qualname__ = make.__name__ = f"lazy[{dotted}]"
    make.options_model = options  # type: ignore[attr-defined]
    return make


def check_model_spec(spec: ModelSpec, where: str = "models") -> None:
    """Validate what can be validated of a model without building it — the backend name and its
    ``options`` (``timeout: -1``) — so a config error is reported before indices are built."""
    from pydantic import ValidationError

    from mmrag.errors import pydantic_field, pydantic_message

    factory = MODELS.get(spec.backend)
    dotted = getattr(factory, "options_model", None)
    if dotted:
        try:
            load_dotted(dotted).model_validate(spec.options)
        except ValidationError as exc:
            raise InputError(pydantic_message(exc), field=f"{where}.options.{pydantic_field(exc)}") from None


def _register_builtins() -> None:
    MODELS.register(
        "openai",
        _lazy("mmrag.models.openai_compat:OpenAICompatible", options="mmrag.models.openai_compat:OpenAIOptions"),
    )
    MODELS.register("transformers", _lazy("mmrag.models.transformers_vlm:TransformersVLM"))
    MODELS.register("vllm", _lazy("mmrag.models.vllm_vlm:VLLMVLM"))
    for name, cls in (
        ("always-deflect", "AlwaysDeflect"),
        ("random-choice", "RandomChoice"),
        ("always-nota", "AlwaysNota"),
        ("first-option", "FirstOption"),
    ):
        MODELS.register(name, _lazy(f"mmrag.models.baselines:{cls}"))
    MODELS.register("context-reader", _lazy("mmrag.models.context_reader:ContextReader"))
    MODELS.register("sim-vlm", _lazy("mmrag.models.sim_vlm:SimVLM"))
    MODELS.register("sleepy", _lazy("mmrag.models.sleepy:SleepyVLM"))


_register_builtins()

#: names that are backends taking ``BACKEND:MODEL``; every other built-in is a bare-name baseline
BACKENDS = ("openai", "transformers", "vllm")
BASELINES = ("always-deflect", "random-choice", "always-nota", "first-option", "context-reader")
#: registered and usable, but left out of every list a user reads: tools for tests and benchmarks
#: (``sleepy:BASELINE@MS`` is a baseline at a GPU's pace, see :mod:`mmrag.models.sleepy`)
HIDDEN_BACKENDS = ("sleepy",)
_NEEDS_MODEL = BACKENDS + HIDDEN_BACKENDS
#: the environment variables the OpenAI SDK, lmms-eval and inspect_ai read when nothing else is given
OPENAI_BASE_URL_ENV, OPENAI_KEY_ENV = "OPENAI_BASE_URL", "OPENAI_API_KEY"
#: ``--gen-kwargs`` names (lmms-eval's spelling) of GenerationSettings fields
GEN_KWARG_ALIASES = {"max_tokens": "max_new_tokens", "until": "stop"}


def user_backends() -> list[str]:
    """The backend and baseline names to show a user (the hidden test tools left out)."""
    return [n for n in MODELS.names() if n not in HIDDEN_BACKENDS]


def openai_defaults(base_url: str | None, api_key_env: str | None) -> tuple[str | None, str | None]:
    """``OPENAI_BASE_URL`` when no base URL is given, and the variable ``OPENAI_API_KEY`` when no
    key variable is named and it is set — as the OpenAI SDK, lmms-eval and inspect_ai do.  Only the
    variable's *name* goes into a config; the key is read when the model is built."""
    import os

    if not base_url:
        base_url = os.environ.get(OPENAI_BASE_URL_ENV) or None
    if not api_key_env and os.environ.get(OPENAI_KEY_ENV):
        api_key_env = OPENAI_KEY_ENV
    return base_url, api_key_env


def _scalar(text: str) -> Any:
    """A ``--gen-kwargs`` value: true/false, none/null, an int, a float, else the string."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for cast in (int, float):
        try:
            return cast(text.strip())
        except ValueError:
            pass
    return text.strip()


def parse_gen_kwargs(text: str | None, field: str = "--gen-kwargs") -> dict[str, Any]:
    """``k=v,k=v`` (lmms-eval's ``--gen_kwargs``) to settings: fields of GenerationSettings by name
    (or lmms-eval's alias: ``max_tokens``, ``until``), every other key into ``extra``."""
    out: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for piece in (text or "").split(","):
        if not piece.strip():
            continue
        key, sep, value = piece.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InputError(f"'{piece.strip()}' is not key=value (e.g. temperature=0.2,num_beams=1)", field=field)
        if secret_setting(key, value):  # a key here would be written in the fingerprint of every record
            raise InputError(f"'{key}' looks like a credential; {KEY_HINT}", field=field)
        key = GEN_KWARG_ALIASES.get(key, key)
        target = out if key in _SETTING_FIELDS and key != "extra" else extra
        if key in target:
            raise InputError(f"'{key}' is given twice", field=field)
        v = _scalar(value)
        target[key] = [v] if key == "stop" and not isinstance(v, list) else v
    if extra:
        out["extra"] = extra
    return out


def parse_model_arg(
    arg: str, base_url: str | None = None, api_key_env: str | None = None, **settings: Any
) -> ModelSpec:
    """``--model`` to a ModelSpec: ``BACKEND:MODEL`` (split at the first colon, so model names may
    hold colons, e.g. ``openai:llava:13b`` for Ollama) or a bare baseline name.  Keyword arguments
    that are GenerationSettings fields become settings; any other keyword becomes an option."""
    arg = (arg or "").strip()
    if not arg:
        raise InputError("empty model name", field="--model")
    backend, sep, model = arg.partition(":")
    if not sep:
        backend, model = arg, ""
    elif not model:
        raise InputError(f"'{arg}' names no model after '{backend}:'", field="--model")
    if backend not in MODELS:
        known = (
            ", ".join(f"{b}:MODEL" for b in BACKENDS)
            + ", "
            + ", ".join(n for n in user_backends() if n not in BACKENDS)
        )
        raise InputError(f"unknown model backend '{backend}'; known: {known}", field="--model")
    if backend in _NEEDS_MODEL and not model:
        raise InputError(f"backend '{backend}' needs a model: --model {backend}:MODEL", field="--model")
    if backend == "openai":
        base_url, api_key_env = openai_defaults(base_url, api_key_env)
        if not base_url:
            raise InputError(
                f"--model openai:... needs --base-url (e.g. http://127.0.0.1:8000/v1) or "
                f"{OPENAI_BASE_URL_ENV} in the environment",
                field="--base-url",
            )
    gen = {k: v for k, v in settings.items() if k in _SETTING_FIELDS and v is not None}
    opts = {k: v for k, v in settings.items() if k not in _SETTING_FIELDS and v is not None}
    try:
        return ModelSpec(
            backend=backend,
            model=model,
            base_url=base_url,
            api_key_env=api_key_env,
            settings=GenerationSettings(**gen),
            options=opts,
        )
    except Exception as exc:  # pydantic ValidationError: name the setting
        from pydantic import ValidationError

        from mmrag.errors import pydantic_field, pydantic_message

        if isinstance(exc, ValidationError):
            raise InputError(pydantic_message(exc), field=pydantic_field(exc)) from None
        raise


def open_cache(path: str | Path | None = None, enabled: bool = True) -> ResponseCache | None:
    """``None`` when disabled (``--no-cache``), a cache at ``path`` when given, else the shared one."""
    if not enabled:
        return None
    return ResponseCache(Path(path)) if path else ResponseCache.default()


#: Where models are built: ``None`` = in this process; else a callable ``(spec) -> VLM | None``
#: (``None`` = build it here after all).  ``mmrag.distributed`` installs one for ``--engine ray``.
_PLACEMENT: Callable[[ModelSpec], Any] | None = None


@contextlib.contextmanager
def model_placement(place: Callable[[ModelSpec], Any] | None) -> Iterator[None]:
    """Within the block, :func:`create_model` asks ``place`` first (e.g. for Ray replicas); the
    response cache still wraps whatever it returns, on this process."""
    global _PLACEMENT
    previous, _PLACEMENT = _PLACEMENT, place
    try:
        yield
    finally:
        _PLACEMENT = previous


def check_distinct(models: list[tuple[ModelSpec, VLM]]) -> None:
    """Two entries that build one model (``-m sim-vlm,sim-vlm:text_prior=0.5``, 0.5 being the
    default) share a fingerprint and so every record key: the run would hold each cell twice
    under two labels.  The names differ, so this is told by fingerprint, once the models are built
    (and before a run directory exists)."""
    seen: dict[str, str] = {}
    for spec, vlm in models:
        fp = str(vlm.fingerprint)
        if fp in seen:
            raise InputError(
                f"models '{seen[fp]}' and '{spec.label}' are one model (fingerprint {redact_text(fp)}); "
                "name it once (its records would be counted twice)",
                field="--model",
            )
        seen[fp] = spec.label


def create_model(spec: ModelSpec, cache: ResponseCache | str | Path | None = DEFAULT_CACHE) -> VLM:
    """Build the model a spec names and put it behind the response cache.  Settings of the spec
    that differ from the defaults are appended to the fingerprint (``openai:m@host/v1[temperature=0.7]``).

    ``cache``: ``"default"`` = the shared cache under MMRAG_HOME, a path = a cache file there, a
    :class:`ResponseCache` = that cache, ``None`` = no caching (``--no-cache``)."""
    model = (_PLACEMENT(spec) if _PLACEMENT is not None else None) or MODELS.create(spec.backend, spec)
    tag = spec.settings.tag()
    if tag and not str(model.fingerprint).endswith(f"[{tag}]"):
        model.fingerprint = f"{model.fingerprint}[{tag}]"  # an answer depends on its settings
    if cache is None:
        return model
    if isinstance(cache, (str, Path)):
        cache = ResponseCache.default() if str(cache) == DEFAULT_CACHE else ResponseCache(Path(cache))
    return CachedVLM(model, cache)
