"""The VLM protocol, generation settings, the typed model spec and the backend registry.

Models know nothing of scenarios or judges: they turn :class:`Prompt` objects into
:class:`Response` objects.  A failed request is a Response with ``error`` set, never an exception
that loses the batch and never a made-up answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mmrag.redact import KEY_HINT, redact_text, refuse_secret_settings
from mmrag.registry import Registry
from mmrag.schema import Prompt, Response

#: a value of a backend-specific generation argument: a JSON scalar or a list of them
GenKwarg = bool | int | float | str | None | list[bool | int | float | str]


class GenerationSettings(BaseModel):
    """Decoding settings; out-of-range values (``temperature: -1``, ``max_new_tokens: 0``, NaN) are
    errors naming the field, never passed on to a server that may silently clamp them."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    max_new_tokens: int = Field(default=128, ge=1)
    temperature: float = Field(default=0.0, ge=0.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    seed: int | None = 0
    stop: list[str] = Field(default_factory=list)
    #: backend-specific generation arguments (``--gen-kwargs num_beams=1,...`` keys that are not
    #: fields above), passed to the backend as given: the request body of ``openai``, the
    #: ``generate`` kwargs of ``transformers``, the ``SamplingParams`` of ``vllm``
    extra: dict[str, GenKwarg] = Field(default_factory=dict)

    @field_validator("extra")
    @classmethod
    def _no_credentials(cls, v: dict[str, GenKwarg]) -> dict[str, GenKwarg]:
        """A key in the settings would be written in clear in the fingerprint of every record."""
        refuse_secret_settings(v)
        return v

    @property
    def deterministic(self) -> bool:
        """Only greedy requests are cached: a sampled answer is not a function of its prompt."""
        return self.temperature == 0.0

    def tag(self) -> str:
        """The settings that differ from the defaults, as ``name=value`` pieces (``""`` for the
        defaults).  Why: an answer depends on them, so a model's fingerprint carries them — two
        temperatures of one model are two rows of results and two sets of record keys."""
        default = _DEFAULT_DUMP
        mine = self.model_dump(mode="json")
        return ",".join(
            f"{k}={json.dumps(v, sort_keys=True, separators=(',', ':'))}"
            for k, v in sorted(mine.items())
            if v != default.get(k)
        )


_DEFAULT_DUMP = GenerationSettings().model_dump(mode="json")


class Capabilities(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_images: int | None = None
    system_prompt: bool = True
    #: MIME types of the images the backend accepts (None = whatever PIL decodes); checked against
    #: every input image before the run directory exists (:mod:`mmrag.models.inputs`)
    image_formats: tuple[str, ...] | None = None


def check_base_url(url: str, error: Callable[[str], Exception]) -> None:
    """An http(s) URL with a host and no ``user:password@``.  Why refuse userinfo: httpx turns it
    into ``Authorization: Basic``, which silently replaces the ``Bearer`` key of ``api_key_env``;
    mmrag sends one credential, the key from the environment."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise error(f"base URL {redact_text(url)!r} is not an http(s) URL with a host")
    if "@" in parts.netloc:
        raise error(
            f"base URL {redact_text(url)!r} holds user:password@ (it would be sent as Basic auth); "
            f"remove it and {KEY_HINT}"
        )


def endpoint(base_url: str, route: str) -> str:
    """``route`` appended to the base URL's path, its query kept as a query:
    ``http://h/v1?api-version=1`` + ``chat/completions`` is ``http://h/v1/chat/completions?api-version=1``
    (Azure-style endpoints need the query; string concatenation put the route inside it)."""
    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/" + route.lstrip("/"), fragment=""))


class ModelSpec(BaseModel):
    """How configs name a model: ``{backend, model, base_url, api_key_env, settings, options}``.
    On the command line: ``--model BACKEND:MODEL`` (+ ``--base-url``); a bare name is a baseline."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    backend: str
    model: str = ""
    base_url: str | None = None

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, v: str | None) -> str | None:
        """Checked when the config is read, so a typo fails before any index is built."""
        if v is not None:
            check_base_url(v, ValueError)
        return v

    api_key_env: str | None = None
    settings: GenerationSettings = Field(default_factory=GenerationSettings)
    options: dict[str, Any] = Field(default_factory=dict)
    #: most prompts of this model in flight at once in a run (``--max-concurrency``); None = the
    #: backend's own default.  How a run executes, not what it measures: not in any fingerprint.
    max_concurrency: int | None = Field(default=None, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, data: Any) -> Any:
        """A config or the Python API may name a model as ``--model`` does: ``"context-reader"``,
        ``"sim-vlm:text_prior=0.9"``, ``"openai:NAME"`` (base URL and key from ``OPENAI_BASE_URL``
        / ``OPENAI_API_KEY``)."""
        if not isinstance(data, str):
            return data
        from mmrag.errors import InputError
        from mmrag.models.factory import parse_model_arg

        try:
            return parse_model_arg(data).model_dump()
        except InputError as exc:
            raise ValueError(exc.message) from None

    @property
    def label(self) -> str:
        return f"{self.backend}:{self.model}" if self.model else self.backend


@runtime_checkable
class VLM(Protocol):
    fingerprint: str
    capabilities: Capabilities

    async def agenerate(self, prompts: Sequence[Prompt], settings: GenerationSettings) -> list[Response]:
        """Responses in the order of ``prompts``."""

    def generate(self, prompts: Sequence[Prompt], settings: GenerationSettings | None = None) -> list[Response]:
        """Synchronous convenience wrapper around :meth:`agenerate` (``settings``: default greedy)."""


#: ``MODELS.create(backend_name, spec: ModelSpec) -> VLM``; entry-point group ``mmrag.models``.
MODELS: Registry[VLM] = Registry("model backend", group="mmrag.models", requires=("agenerate",))
