"""A real HTTP/1.1 server on 127.0.0.1 that speaks ``POST /v1/chat/completions``, scriptable per request.

Used by the model-backend tests, the run-level fault tests and ``perf/openai_client_bench.py``; a
raw ``asyncio`` server (no framework), so on two cores it is never the bottleneck of a client bench.
This file runs the server (on a thread, as a separate process, or from the command line); what it
answers to each request, and what it records, is ``tests/loopback_core.py``.  A benchmark computes
the mean number of requests in flight over any window from the server's own clock
(:func:`mean_in_flight`).
In a thread: ``with LoopbackServer(latency=0.01) as srv: srv.script(Action.status(429, retry_after=1))``
then point a client at ``srv.url`` and assert on ``srv.records`` / ``srv.stats()``.  As a separate
process (``ServerProcess`` starts this file, reads the port it prints; ``.kill()`` for crash tests)::

    python tests/loopback_server.py --port 0 --latency 0.2 --max-concurrency 64
    # prints "LISTENING <port>"; GET /_stats, POST /_script (JSON list of actions), POST /_reset
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import threading
from dataclasses import asdict
from typing import Any

from loopback_core import Action, Received, ServerConfig, ServerCore


def mean_in_flight(records: list[dict[str, Any]] | list[Received], until: float | None = None) -> float:
    """Time-averaged number of chat requests open at the server, from the first arrival to ``until``
    (default: the last arrival, i.e. while requests remained to be sent)."""
    spans = [(r["t"], r["done"]) if isinstance(r, dict) else (r.t, r.done) for r in records]
    spans = [(a, b) for a, b in spans if b > 0]
    if not spans:
        return 0.0
    start = min(a for a, _ in spans)
    end = until if until is not None else max(a for a, _ in spans)
    if end <= start:
        return 0.0
    area = sum(max(0.0, min(b, end) - max(a, start)) for a, b in spans)
    return area / (end - start)


class LoopbackServer:
    """The server on a background thread with its own event loop (for in-process tests)."""

    def __init__(self, port: int = 0, **cfg: Any) -> None:
        self.core = ServerCore(ServerConfig(**cfg))
        self.port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None

    @property
    def config(self) -> ServerConfig:
        return self.core.cfg

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LoopbackServer:
        self._thread = threading.Thread(target=self._run, name="loopback-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("loopback server did not start")
        return self

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._loop.run_until_complete(self._serve())
        self._loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self.core.handle_conn, "127.0.0.1", self.port, backlog=1024)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def script(self, *actions: Action) -> None:
        with self.core.lock:
            self.core.queue.extend(actions)

    def stats(self) -> dict[str, Any]:
        return self.core.stats()

    @property
    def records(self) -> list[Received]:
        with self.core.lock:
            return list(self.core.records)

    def reset(self) -> None:
        self.core.reset()


class ServerProcess:
    """This file run as a separate process; ``stats``/``script``/``reset`` go over HTTP."""

    def __init__(
        self,
        *,
        latency: float = 0.0,
        max_concurrency: int | None = None,
        retry_after_429: float | None = None,
        answer: str = "ok",
        echo: bool = False,
        max_prompt_tokens: int | None = None,
        record_bodies: bool = False,
        port: int = 0,
        latency_sigma: float = 0.0,
    ) -> None:
        args = [
            sys.executable,
            __file__,
            "--port",
            str(port),
            "--latency",
            str(latency),
            "--answer",
            answer,
            "--latency-sigma",
            str(latency_sigma),
        ]
        for flag, v in (
            ("--max-concurrency", max_concurrency),
            ("--retry-after", retry_after_429),
            ("--max-prompt-tokens", max_prompt_tokens),
        ):
            args += [flag, str(v)] if v is not None else []
        args += (["--echo"] if echo else []) + (["--record-bodies"] if record_bodies else [])
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.startswith("LISTENING "):
            self.proc.kill()
            raise RuntimeError(f"loopback server process did not start: {line!r}")
        self.port = int(line.split()[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _call(self, path: str, payload: Any = None, post: bool = False) -> Any:
        import httpx

        r = (
            httpx.post(self.url + path, json=payload or [], timeout=10)
            if post
            else httpx.get(self.url + path, timeout=10)
        )
        r.raise_for_status()
        return r.json()

    def stats(self) -> dict[str, Any]:
        return self._call("/_stats")

    def records(self) -> list[dict[str, Any]]:
        return self._call("/_records")

    def script(self, *actions: Action) -> None:
        self._call("/_script", [asdict(a) for a in actions], post=True)

    def reset(self) -> None:
        self._call("/_reset", post=True)

    def kill(self) -> None:
        """SIGKILL, for crash tests: connections drop mid-request."""
        self.proc.kill()
        self.proc.wait(5)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.kill()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--latency", type=float, default=0.0, help="seconds before each answer (the median if lognormal)")
    ap.add_argument("--latency-sigma", type=float, default=0.0, help="lognormal sigma of the latency (0: fixed)")
    ap.add_argument("--max-concurrency", type=int, default=None, help="answer 429 above this many in flight")
    ap.add_argument("--retry-after", type=float, default=None, help="Retry-After seconds sent with those 429s")
    ap.add_argument("--answer", default="ok")
    ap.add_argument("--echo", action="store_true", help="answer with the last user text")
    ap.add_argument("--max-prompt-tokens", type=int, default=None, help="context-length 400 above this")
    ap.add_argument("--record-bodies", action="store_true", help="keep request bodies (memory grows)")
    a = ap.parse_args(argv)
    core = ServerCore(
        ServerConfig(
            latency=a.latency,
            latency_sigma=a.latency_sigma,
            max_concurrency=a.max_concurrency,
            retry_after_429=a.retry_after,
            answer=a.answer,
            echo=a.echo,
            max_prompt_tokens=a.max_prompt_tokens,
            record_bodies=a.record_bodies,
        )
    )

    async def serve() -> None:
        server = await asyncio.start_server(core.handle_conn, "127.0.0.1", a.port, backlog=1024)
        print(f"LISTENING {server.sockets[0].getsockname()[1]}", flush=True)
        async with server:
            await server.serve_forever()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
