"""The OpenAI-compatible chat-completions backend (vLLM, SGLang, llama.cpp, Ollama, hosted APIs).

One HTTP request per prompt over ``httpx.AsyncClient``; images travel as base64 data URLs.  What
happens to a request:

1. it waits for a slot of the :class:`~mmrag.models.concurrency.AIMDLimiter` (never more than
   ``max_concurrency`` in flight, fewer when the server signals overload: 429, 503, timeouts,
   connection errors; a ``Retry-After`` also holds back new requests until it has passed);
2. 429, 5xx, 408, timeouts and dropped or refused connections are retried by ``tenacity`` with
   exponential backoff and jitter ("equal jitter": half the exponential step fixed, half random),
   except that a ``Retry-After`` (or ``retry-after-ms``) header, when present, sets the wait; the
   slot is released during the wait;
3. after its retries a failed request becomes a Response whose ``error`` is ``timeout``,
   ``rate_limit``, ``server_error`` (the server answered 5xx) or ``connection`` (refused,
   unreachable, dropped: nothing was measured); an unparseable body is ``bad_response`` and a 400
   about the context length is ``context_overflow`` (neither is retried: the same request fails the
   same way); any other 4xx is ``other`` with the status in ``error_detail``;
4. bounds: each attempt has ``timeout`` seconds in all (a server that trickles a byte a second
   cannot hold it), the request ``deadline`` seconds including retries (``deadline``), and a reply
   body over ``max_reply_bytes`` is cut off (``reply_too_large``);
5. text from the server is made valid: a lone surrogate escape (``"\\ud800"``, valid JSON that no
   tokenizer, cache or Parquet file accepts) becomes U+FFFD;
6. ``finish_reason`` is kept on the Response (``length`` and ``content_filter`` are recorded, not
   scored, not cached); a malformed ``usage`` block counts zero tokens and never fails the request.

Connections: one set of pooled clients per event loop, kept across calls (a streaming run calls
``agenerate`` once per prompt); :meth:`aclose` closes them (``generate`` does so itself).

The base URL defaults to ``OPENAI_BASE_URL`` and the key variable to ``OPENAI_API_KEY`` (when set),
as in the OpenAI SDK.  The API key is read from the environment variable named by ``api_key_env`` when the model is
built, sent as ``Authorization: Bearer``, and never stored in the fingerprint, a repr or a log.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx
import tenacity
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mmrag.errors import InputError, pydantic_field, pydantic_message
from mmrag.models.aio import generate_then_close
from mmrag.models.base import Capabilities, GenerationSettings, ModelSpec, check_base_url, endpoint
from mmrag.models.concurrency import AIMDLimiter, Signal
from mmrag.models.render import DATA_URL_TYPES, openai_messages
from mmrag.models.retry import FatalError, RetryableError, RetryPolicy, parse_retry_after
from mmrag.redact import redact_text, refuse_secret_settings, strip_userinfo
from mmrag.schema import ErrorClass, Prompt, Response, Usage
from mmrag.util import valid_text

_OVERFLOW_MARKERS = (
    "context length",
    "context_length",
    "maximum context",
    "context window",
    "too many tokens",
    "prompt is too long",
    "input is too long",
    "max_model_len",
    "maximum model length",
    "exceeds the model",
    "token limit",
)


class OpenAIOptions(BaseModel):
    """``options`` of an ``openai`` ModelSpec.  Prices are USD per million tokens."""

    model_config = ConfigDict(extra="forbid")
    headers: dict[str, str] = Field(default_factory=dict)
    timeout: float = Field(default=120.0, gt=0)
    max_concurrency: int = Field(default=32, ge=1)
    adaptive: bool = True
    initial_concurrency: int | None = Field(default=None, ge=1)
    aimd_decrease: float = Field(default=0.7, gt=0, lt=1)
    #: None: latency never cuts the window (reply lengths vary; that is not overload)
    latency_factor: float | None = Field(default=None, gt=1)
    deadline: float = Field(default=600.0, gt=0)
    max_reply_bytes: int = Field(default=8 << 20, ge=1024)
    max_retries: int = Field(default=5, ge=0)
    backoff_initial: float = Field(default=0.5, ge=0)
    backoff_max: float = Field(default=30.0, ge=0)
    max_retry_after: float = Field(default=120.0, ge=0)
    input_price_per_mtok: float = Field(default=0.0, ge=0)
    output_price_per_mtok: float = Field(default=0.0, ge=0)
    revision: str | None = None
    server_id: str | None = None
    image_detail: str | None = None
    max_tokens_field: str = "max_tokens"
    send_seed: bool = True
    extra_body: dict[str, Any] = Field(default_factory=dict)
    max_images: int | None = None
    pool_shard_size: int = Field(default=8, ge=1)

    @field_validator("extra_body")
    @classmethod
    def _no_credentials(cls, v: dict[str, Any]) -> dict[str, Any]:
        """The body's extras are written in the manifest: a key belongs in ``api_key_env``."""
        refuse_secret_settings(v)
        return v


class _ShardedClients:
    """``ceil(cap / shard)`` httpx clients of ``shard`` connections each; a request takes the least
    loaded one.  Why: httpcore's pool re-scans every connection for every queued request
    (encode/httpx#3215, encode/httpcore#1035), so one pool of 64 connections costs several ms of
    CPU per request; small pools keep that bookkeeping constant.  The limiter keeps the total in
    flight <= cap, so the least-loaded shard always has a free connection (no pool waits)."""

    def __init__(self, cap: int, shard: int, headers: dict[str, str], timeout: float, verify: Any) -> None:
        n = max(1, -(-cap // shard))
        size = -(-cap // n)
        self.clients = [
            httpx.AsyncClient(
                headers=headers,
                timeout=httpx.Timeout(timeout),
                verify=verify,
                limits=httpx.Limits(max_connections=size, max_keepalive_connections=size),
            )
            for _ in range(n)
        ]
        self.load = [0] * n

    def take(self) -> int:
        i = min(range(len(self.load)), key=self.load.__getitem__)
        self.load[i] += 1
        return i

    def give_back(self, i: int) -> None:
        self.load[i] -= 1

    async def __aenter__(self) -> _ShardedClients:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await asyncio.gather(*(c.aclose() for c in self.clients))


class UsageMeter:
    """Running totals of one backend instance: HTTP attempts, retries, errors, tokens and cost."""

    def __init__(self) -> None:
        self.requests = 0
        self.retries = 0
        self.errors: Counter[str] = Counter()
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cost_usd = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "retries": self.retries,
            "errors": dict(self.errors),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": round(self.cost_usd, 8),
        }


class OpenAICompatible:
    """A VLM behind ``POST {base_url}/chat/completions``.  See the module docstring for the rules."""

    backend = "openai"

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key_env: str | None = None,
        options: OpenAIOptions | dict[str, Any] | None = None,
    ) -> None:
        if not model:
            raise InputError("an openai model needs a model name (--model openai:NAME)", field="model")
        check_base_url(base_url or "", lambda msg: InputError(msg, field="base_url"))
        try:
            self.options = options if isinstance(options, OpenAIOptions) else OpenAIOptions(**(options or {}))
        except ValidationError as exc:
            raise InputError(pydantic_message(exc), field=f"options.{pydantic_field(exc)}") from None
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.url = endpoint(self.base_url, "chat/completions")
        headers = {"Content-Type": "application/json", **self.options.headers}
        if api_key_env:
            key = os.environ.get(api_key_env)
            if not key:
                raise InputError(f"environment variable {api_key_env} (the API key) is not set", field="api_key_env")
            headers["Authorization"] = f"Bearer {key}"
        self._headers = headers
        o = self.options
        self.limiter = AIMDLimiter(
            o.max_concurrency,
            initial=o.initial_concurrency,
            decrease=o.aimd_decrease,
            latency_factor=o.latency_factor,
            adaptive=o.adaptive,
        )
        self.meter = UsageMeter()
        self._ssl: Any = None
        # host and path (two endpoints behind one host are two models); not the query, which may
        # hold a key (?api_key=...)
        server = o.server_id or (strip_userinfo(self.base_url) + urlsplit(self.base_url).path.rstrip("/"))
        self.fingerprint = f"openai:{model}" + (f"#{o.revision}" if o.revision else "") + f"@{server}"
        if o.extra_body:  # sent with every request, so it changes the replies: part of the identity and cache key
            digest = hashlib.sha256(json.dumps(o.extra_body, sort_keys=True, default=str).encode()).hexdigest()
            self.fingerprint += f"[extra_body={digest[:12]}]"
        self.capabilities = Capabilities(max_images=o.max_images, system_prompt=True, image_formats=DATA_URL_TYPES)
        self._policy = RetryPolicy(o.max_retries, o.backoff_initial, o.backoff_max, o.max_retry_after)
        self._clients: dict[Any, _ShardedClients] = {}

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> OpenAICompatible:
        from mmrag.models.factory import openai_defaults

        base_url, key_env = openai_defaults(spec.base_url, spec.api_key_env)  # OPENAI_BASE_URL / OPENAI_API_KEY
        if not base_url:
            raise InputError(
                "the openai backend needs a base URL (--base-url http://HOST:PORT/v1, or "
                "OPENAI_BASE_URL in the environment)",
                field="base_url",
            )
        options = dict(spec.options)
        if spec.max_concurrency is not None:  # --max-concurrency: the run's window is the client's cap
            options["max_concurrency"] = spec.max_concurrency
        return cls(spec.model, base_url, key_env, options)

    def __repr__(self) -> str:  # no headers: they hold the key
        return f"OpenAICompatible(model={self.model!r}, base_url={self.base_url!r})"

    #: a remote server runs its own concurrency: a run hands this backend one prompt per call and
    #: keeps ``max_concurrency`` calls in flight (a finished reply frees its slot at once)
    prompts_per_call = 1

    @property
    def max_concurrency(self) -> int:
        return self.options.max_concurrency

    # -- the protocol ----------------------------------------------------------------------------
    def generate(self, prompts: Sequence[Prompt], settings: GenerationSettings | None = None) -> list[Response]:
        settings = settings if settings is not None else GenerationSettings()
        return generate_then_close(self, prompts, settings)

    async def agenerate(self, prompts: Sequence[Prompt], settings: GenerationSettings) -> list[Response]:
        if not prompts:
            return []
        bodies = [self.payload(p, settings) for p in prompts]
        clients = self._clients_here()
        return list(await asyncio.gather(*(self._one(clients, p, b, settings) for p, b in zip(prompts, bodies))))

    def _clients_here(self) -> _ShardedClients:
        """The pooled clients of the running loop (created on first use; a closed loop's are dropped)."""
        loop = asyncio.get_running_loop()
        for other in [lp for lp in self._clients if lp.is_closed()]:
            del self._clients[other]
        clients = self._clients.get(loop)
        if clients is None:
            clients = _ShardedClients(
                self.options.max_concurrency,
                self.options.pool_shard_size,
                self._headers,
                self.options.timeout,
                self._tls(),
            )
            self._clients[loop] = clients
        return clients

    async def aclose(self) -> None:
        """Close this loop's connections (a run calls it at the end; ``generate`` after each call)."""
        clients = self._clients.pop(asyncio.get_running_loop(), None)
        if clients is not None:
            await clients.__aexit__(None, None, None)

    def _tls(self) -> Any:
        """One TLS context per model, built on first use (loading the CA bundle costs ~50 ms, too
        much to pay per client and per call); plain-HTTP servers need none."""
        if not self.base_url.startswith("https://"):
            return False
        if self._ssl is None:
            import ssl

            try:
                import certifi

                self._ssl = ssl.create_default_context(cafile=certifi.where())
            except ImportError:
                self._ssl = ssl.create_default_context()
        return self._ssl

    def payload(self, prompt: Prompt, settings: GenerationSettings) -> bytes:
        """The JSON body for one prompt (public so tests and tools can inspect what is sent)."""
        o = self.options
        if o.max_images is not None and len(prompt.images()) > o.max_images:
            raise InputError(
                f"prompt has {len(prompt.images())} images; this model accepts {o.max_images}",
                field=f"prompt {prompt.id}",
            )
        body: dict[str, Any] = {
            "model": self.model,
            "messages": openai_messages(prompt, image_detail=o.image_detail),
            o.max_tokens_field: settings.max_new_tokens,
            "temperature": settings.temperature,
            "top_p": settings.top_p,
        }
        if settings.stop:
            body["stop"] = list(settings.stop)
        if o.send_seed and settings.seed is not None:
            body["seed"] = settings.seed
        body.update(o.extra_body)
        body.update(settings.extra)  # --gen-kwargs that are not settings: sent as given
        return json.dumps(body, ensure_ascii=False).encode("utf-8")

    # -- one request -----------------------------------------------------------------------------
    async def _one(
        self, clients: _ShardedClients, prompt: Prompt, body: bytes, settings: GenerationSettings
    ) -> Response:
        t0 = time.monotonic()
        try:
            data = await asyncio.wait_for(self._request(clients, body), self.options.deadline)
        except asyncio.TimeoutError:
            exc = FatalError("deadline", f"no reply within the request deadline of {self.options.deadline}s")
            return self._failed(prompt, t0, exc.error, exc.detail)
        except (RetryableError, FatalError) as exc:
            return self._failed(prompt, t0, exc.error, exc.detail)
        try:
            choice = data["choices"][0]
            text = choice["message"]["content"]
            finish = choice.get("finish_reason")
            if text is None and finish == "content_filter":
                text = ""
            if not isinstance(text, str):
                raise TypeError("message content is not a string")
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            return self._failed(prompt, t0, "bad_response", f"unexpected response shape: {exc}")
        text = valid_text(text)  # a lone surrogate escape is valid JSON but no tokenizer, cache or file takes it
        finish = valid_text(finish)
        for s in settings.stop:  # servers apply stop strings, but not all of them
            if s and s in text:
                text = text[: text.index(s)]
        return Response(
            prompt_id=prompt.id,
            text=text,
            model=self.fingerprint,
            usage=self._usage(data),
            latency_s=time.monotonic() - t0,
            finish_reason=finish if isinstance(finish, str) else None,
        )

    def _failed(self, prompt: Prompt, t0: float, error: ErrorClass, detail: str) -> Response:
        self.meter.errors[error] += 1
        return Response(
            prompt_id=prompt.id,
            model=self.fingerprint,
            latency_s=time.monotonic() - t0,
            error=error,
            error_detail=valid_text(redact_text(detail, headers=self._headers)[:500]),
        )

    async def _request(self, clients: _ShardedClients, body: bytes) -> dict[str, Any]:
        try:
            return await self._attempt(clients, body)
        except RetryableError as first:  # the rare path: hand the failure to tenacity as attempt 1
            return await self._retry(first, clients, body)

    async def _retry(self, first: RetryableError, clients: _ShardedClients, body: bytes) -> dict[str, Any]:
        """Retries under tenacity.  The first attempt is made outside it (tenacity's per-call set-up
        costs about as much CPU as the rest of the client), so tenacity's attempt 1 re-raises that
        failure: waits and attempt counting are then exactly tenacity's."""
        pending: list[RetryableError] = [first]

        async def attempt() -> dict[str, Any]:
            if pending:
                raise pending.pop()
            return await self._attempt(clients, body)

        pol = self._policy
        return await tenacity.AsyncRetrying(
            stop=pol.stop, wait=pol.wait, retry=pol.retry, reraise=True, before_sleep=self._on_retry
        )(attempt)

    def _on_retry(self, state: tenacity.RetryCallState) -> None:
        self.meter.retries += 1

    def _usage(self, data: dict[str, Any]) -> Usage:
        """Token counts from ``usage``; anything malformed there counts as zero (never an error)."""
        u = data.get("usage")
        u = u if isinstance(u, dict) else {}
        p, c = _count(u.get("prompt_tokens")), _count(u.get("completion_tokens"))
        cost = (p * self.options.input_price_per_mtok + c * self.options.output_price_per_mtok) / 1e6
        self.meter.prompt_tokens += p
        self.meter.completion_tokens += c
        self.meter.cost_usd += cost
        return Usage(prompt_tokens=p, completion_tokens=c, cost_usd=cost)

    async def _attempt(self, clients: _ShardedClients, body: bytes) -> dict[str, Any]:
        ticket = await self.limiter.acquire()
        signal: Signal = "neutral"
        latency: float | None = None
        started = time.monotonic()
        shard = clients.take()
        try:
            self.meter.requests += 1
            try:
                status, headers, raw = await asyncio.wait_for(
                    self._post(clients.clients[shard], body), self.options.timeout
                )
            except (httpx.TimeoutException, asyncio.TimeoutError) as exc:
                signal = "overload"
                raise RetryableError("timeout", f"{type(exc).__name__} after {self.options.timeout}s") from None
            except httpx.DecodingError as exc:
                raise FatalError("bad_response", f"undecodable body: {exc}") from None
            except (
                httpx.ConnectError,
                httpx.RemoteProtocolError,
                httpx.ReadError,
                httpx.WriteError,
                httpx.NetworkError,
            ) as exc:  # refused, unreachable, dropped: nothing was measured
                signal = "overload"
                raise RetryableError("connection", self._unreachable(exc)) from None
            except httpx.RequestError as exc:
                raise RetryableError("connection", self._unreachable(exc)) from None
            if status == 200:
                signal, latency = "ok", time.monotonic() - started
                try:
                    data = json.loads(raw)
                except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
                    raise FatalError(
                        "bad_response", f"body is not JSON ({type(exc).__name__}: {str(exc)[:120]}): {raw[:200]!r}"
                    ) from None
                if not isinstance(data, dict):
                    raise FatalError("bad_response", f"body is not a JSON object: {raw[:200]!r}")
                return data
            err = self._classify(status, headers, raw.decode("utf-8", "replace"))
            if status in (429, 503) or (status >= 500 and getattr(err, "retry_after", None) is not None):
                signal = "overload"
                ra = getattr(err, "retry_after", None)
                if ra:
                    self.limiter.hold(min(ra, self.options.max_retry_after))
            raise err
        finally:
            clients.give_back(shard)
            self.limiter.release(ticket, signal, latency)

    def _unreachable(self, exc: Exception) -> str:
        """A connection failure's detail, naming the server first (a run's one-line failure shows
        the start of the last error: "which server" must survive the cut); userinfo stays out."""
        return f"server {strip_userinfo(self.base_url)}{urlsplit(self.base_url).path}: {type(exc).__name__}: {exc}"

    async def _post(self, client: httpx.AsyncClient, body: bytes) -> tuple[int, httpx.Headers, bytes]:
        """POST and read the body, refusing more than ``max_reply_bytes``."""
        async with client.stream("POST", self.url, content=body) as r:
            cap = self.options.max_reply_bytes
            declared = r.headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > cap:
                raise FatalError("reply_too_large", f"reply of {declared} bytes exceeds max_reply_bytes={cap}")
            chunks, size = [], 0
            async for chunk in r.aiter_bytes():
                size += len(chunk)
                if size > cap:
                    raise FatalError("reply_too_large", f"reply exceeds max_reply_bytes={cap}")
                chunks.append(chunk)
            return r.status_code, r.headers, b"".join(chunks)

    @staticmethod
    def _classify(code: int, headers: httpx.Headers, body: str) -> Exception:
        text = body[:500]
        low = text.lower()
        if code == 429:
            if "insufficient_quota" in low:
                return FatalError("rate_limit", f"HTTP 429 (quota exhausted): {text}")
            return RetryableError("rate_limit", f"HTTP 429: {text}", parse_retry_after(headers))
        if code == 408:
            return RetryableError("timeout", f"HTTP 408: {text}")
        if code >= 500:
            return RetryableError("server_error", f"HTTP {code}: {text}", parse_retry_after(headers))
        if code in (400, 413, 422) and any(m in low for m in _OVERFLOW_MARKERS):
            return FatalError("context_overflow", f"HTTP {code}: {text}")
        return FatalError("other", f"HTTP {code}: {text}")


def _count(v: Any) -> int:
    """A token count as sent, or 0 when it is missing, negative or not a number."""
    if isinstance(v, bool):
        return 0
    if isinstance(v, (int, float)) and v == v and 0 <= v < 1e12:
        return int(v)
    if isinstance(v, str) and v.strip().isdigit():
        return int(v.strip())
    return 0
