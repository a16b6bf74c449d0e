"""What the loopback chat server does with a request: scripted actions, its own limits, the replies.

The HTTP/1.1 handling and state behind ``tests/loopback_server.py`` (which runs this core on a thread
or as a separate process); kept apart so the request semantics read in one place.
Behaviour of a chat request, in order:

1. the next scripted :class:`Action` if any (FIFO; ``script()`` in-process or ``POST /_script``);
2. otherwise, if ``max_concurrency`` is set and that many requests are already being served, a 429
   (with ``Retry-After`` when ``retry_after_429`` is set) — a server-side limit the client cannot see;
3. otherwise an answer after ``latency`` seconds (or, with ``latency_sigma`` > 0, a lognormal delay
   with median ``latency`` and that sigma, seeded: reply lengths vary like a VLM server's):
   ``responder(body)`` if given, the last user text if ``echo``, else the fixed ``answer``; a prompt
   over ``max_prompt_tokens`` gets a context-length 400.

Everything received is recorded (method, path, headers, parsed body, arrival time, status sent),
with counters for requests, statuses, and the largest number of chat requests open at once; each
record also has the time its reply was sent (``done``).
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

OVERFLOW_MESSAGE = (
    "This model's maximum context length is {limit} tokens. However, your messages resulted "
    "in {n} tokens. Please reduce the length of the messages."
)


@dataclass
class Action:
    """One scripted reply.  kinds: answer, status, malformed, bad_shape, hang, overflow, close."""

    kind: str = "answer"
    text: str = "ok"
    code: int = 200  # HTTP status of a "status" action (not named `status`: that is the constructor below)
    retry_after: float | str | None = None
    delay: float = 0.0
    body: str | bytes | None = None  # a "status" action's raw body, sent as is (any bytes)
    finish_reason: str = "stop"
    usage: Any = "auto"  # "auto": counted tokens; anything else is sent as the ``usage`` value

    @classmethod
    def answer(cls, text: str, delay: float = 0.0, finish_reason: str = "stop", usage: Any = "auto") -> Action:
        return cls("answer", text=text, delay=delay, finish_reason=finish_reason, usage=usage)

    @classmethod
    def status(cls, code: int, retry_after: float | str | None = None, body: str | None = None) -> Action:
        return cls("status", code=code, retry_after=retry_after, body=body)

    @classmethod
    def hang(cls, seconds: float) -> Action:
        return cls("hang", delay=seconds)

    malformed = classmethod(lambda cls: cls("malformed"))  # 200 with a truncated JSON body
    bad_shape = classmethod(lambda cls: cls("bad_shape"))  # 200, valid JSON, no choices
    overflow = classmethod(lambda cls: cls("overflow", code=400))  # a context-length 400
    close = classmethod(lambda cls: cls("close"))  # drop the connection, no reply


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    t: float
    status: int = 0
    done: float = 0.0


@dataclass
class ServerConfig:
    latency: float = 0.0
    latency_sigma: float = 0.0
    seed: int = 0
    max_concurrency: int | None = None
    retry_after_429: float | None = None
    answer: str = "ok"
    echo: bool = False
    max_prompt_tokens: int | None = None
    record_bodies: bool = True
    responder: Callable[[dict[str, Any]], str] | None = field(default=None, repr=False)


def count_tokens(body: dict[str, Any]) -> int:
    """A deterministic stand-in for tokenisation: words of text parts + 85 per image."""
    n = 0
    for m in body.get("messages", []):
        c = m.get("content")
        if isinstance(c, str):
            n += len(c.split())
        elif isinstance(c, list):
            for p in c:
                n += 85 if p.get("type") == "image_url" else len(str(p.get("text", "")).split())
    return n


def last_user_text(body: dict[str, Any]) -> str:
    for m in reversed(body.get("messages", [])):
        if m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, str):
                return c
            return "".join(p.get("text", "") for p in c if p.get("type") == "text")
    return ""


class ServerCore:
    """State and request handling; runs on one asyncio loop."""

    def __init__(self, cfg: ServerConfig) -> None:
        self.cfg = cfg
        self.lock = threading.Lock()
        self.rng = random.Random(cfg.seed)
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.queue: deque[Action] = deque()
            self.records: list[Received] = []
            self.statuses: Counter[int] = Counter()
            self.requests = 0
            self.open = 0
            self.max_open = 0
            self.accepted = 0

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {
                "requests": self.requests,
                "max_open": self.max_open,
                "open": self.open,
                "statuses": {str(k): v for k, v in self.statuses.items()},
                "queued": len(self.queue),
            }

    # -- HTTP plumbing ---------------------------------------------------------------------------
    async def handle_conn(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for ln in lines[1:]:
                    if ":" in ln:
                        k, _, v = ln.partition(":")
                        headers[k.strip().lower()] = v.strip()
                raw = await reader.readexactly(int(headers.get("content-length", "0") or 0))
                keep = await self.dispatch(method, path, headers, raw, writer)
                if not keep or headers.get("connection", "").lower() == "close":
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            try:
                writer.close()
            except Exception:
                pass

    @staticmethod
    async def send(
        writer: asyncio.StreamWriter,
        status: int,
        body: bytes,
        extra: dict[str, str] | None = None,
        ctype: str = "application/json",
    ) -> None:
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests"}.get(status, "Status")
        hdr = [f"HTTP/1.1 {status} {reason}", f"Content-Type: {ctype}", f"Content-Length: {len(body)}"]
        hdr += [f"{k}: {v}" for k, v in (extra or {}).items()]
        writer.write(("\r\n".join(hdr) + "\r\n\r\n").encode("latin-1") + body)
        await writer.drain()

    async def dispatch(
        self, method: str, path: str, headers: dict[str, str], raw: bytes, writer: asyncio.StreamWriter
    ) -> bool:
        if path.endswith("/_stats"):
            await self.send(writer, 200, json.dumps(self.stats()).encode())
            return True
        if path.endswith("/_records"):
            with self.lock:
                recs = [asdict(r) for r in self.records]
            await self.send(writer, 200, json.dumps(recs).encode())
            return True
        if path.endswith("/_reset"):
            self.reset()
            await self.send(writer, 200, b"{}")
            return True
        if path.endswith("/_script"):
            acts = [Action(**a) for a in json.loads(raw or b"[]")]
            with self.lock:
                self.queue.extend(acts)
            await self.send(writer, 200, b"{}")
            return True
        if method != "POST" or not path.partition("?")[0].endswith("/chat/completions"):  # a query stays a query
            await self.send(writer, 404, b'{"error":{"message":"not found"}}')
            return True
        return await self.chat(headers, raw, writer, path)

    # -- chat completions ------------------------------------------------------------------------
    async def chat(self, headers: dict[str, str], raw: bytes, writer: asyncio.StreamWriter, path: str) -> bool:
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        rec = Received("POST", path, headers, body if self.cfg.record_bodies else None, time.monotonic())
        with self.lock:
            self.requests += 1
            self.open += 1
            self.max_open = max(self.max_open, self.open)
            self.records.append(rec)
            action = self.queue.popleft() if self.queue else None
            over = action is None and self.cfg.max_concurrency is not None and self.accepted >= self.cfg.max_concurrency
            if action is None and not over:
                self.accepted += 1
        try:
            if body is None or not isinstance(body, dict):
                return await self.reply(rec, writer, 400, {"error": {"message": "request body is not JSON"}})
            if action is not None:
                return await self.scripted(action, body, rec, writer)
            if over:
                extra = {"Retry-After": _fmt(self.cfg.retry_after_429)} if self.cfg.retry_after_429 is not None else {}
                return await self.reply(rec, writer, 429, {"error": {"message": "rate limited"}}, extra)
            try:
                if self.cfg.latency:
                    sigma = self.cfg.latency_sigma
                    await asyncio.sleep(self.cfg.latency * (math.exp(self.rng.gauss(0.0, sigma)) if sigma else 1.0))
                n = count_tokens(body)
                if self.cfg.max_prompt_tokens is not None and n > self.cfg.max_prompt_tokens:
                    return await self.reply(rec, writer, 400, _overflow(self.cfg.max_prompt_tokens, n))
                if self.cfg.responder is not None:
                    text = self.cfg.responder(body)
                else:
                    text = last_user_text(body) if self.cfg.echo else self.cfg.answer
                return await self.reply(rec, writer, 200, _completion(body, text))
            finally:
                with self.lock:
                    self.accepted -= 1
        finally:
            with self.lock:
                self.open -= 1

    async def scripted(self, a: Action, body: dict[str, Any], rec: Received, writer: asyncio.StreamWriter) -> bool:
        if a.delay:
            await asyncio.sleep(a.delay)
        if a.kind == "answer":
            return await self.reply(rec, writer, 200, _completion(body, a.text, a.finish_reason, a.usage))
        if a.kind == "status":
            extra = {"Retry-After": _fmt(a.retry_after)} if a.retry_after is not None else {}
            payload = (
                (a.body if isinstance(a.body, bytes) else a.body.encode("utf-8", "surrogatepass"))
                if a.body is not None
                else json.dumps({"error": {"message": f"scripted status {a.code}"}}).encode()
            )
            return await self.reply(rec, writer, a.code, payload, extra)
        if a.kind == "malformed":
            return await self.reply(rec, writer, 200, b'{"id": "x", "choices": [ {"message": ')
        if a.kind == "bad_shape":
            return await self.reply(rec, writer, 200, {"id": "x", "object": "chat.completion", "choices": []})
        if a.kind == "overflow":
            return await self.reply(rec, writer, 400, _overflow(4096, 5000))
        if a.kind == "hang":
            return await self.reply(rec, writer, 200, _completion(body, a.text))
        if a.kind == "close":
            rec.status = -1
            with self.lock:
                self.statuses[-1] += 1
            return False
        raise ValueError(f"unknown action kind {a.kind!r}")

    async def reply(
        self,
        rec: Received,
        writer: asyncio.StreamWriter,
        status: int,
        payload: Any,
        extra: dict[str, str] | None = None,
    ) -> bool:
        rec.status = status
        rec.done = time.monotonic()
        with self.lock:
            self.statuses[status] += 1
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        try:
            await self.send(writer, status, data, extra)
        except ConnectionError:
            return False
        return True


def _fmt(v: float | str) -> str:
    return v if isinstance(v, str) else (str(int(v)) if float(v).is_integer() else str(v))


def _overflow(limit: int, n: int) -> dict[str, Any]:
    return {
        "error": {
            "message": OVERFLOW_MESSAGE.format(limit=limit, n=n),
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }


def _completion(body: dict[str, Any], text: str, finish_reason: str = "stop", usage: Any = "auto") -> dict[str, Any]:
    p, c = count_tokens(body), len(text.split())
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", ""),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c} if usage == "auto" else usage,
    }
