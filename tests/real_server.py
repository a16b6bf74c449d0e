"""A real OpenAI-compatible server for the ``real_server`` tests: llama.cpp (``llama-cpp-python``)
serving Gemma 3 270M, built by ``scripts/install_llm_server.sh`` into ``.venv-llm``.

Why a real server beside ``tests/loopback_server.py``: its chat template, its token limit, its
``usage`` and ``finish_reason``, its queueing of concurrent requests and its speed are nobody's
guess here.  :class:`LlamaServer` starts ``python -m llama_cpp.server`` from that venv on
127.0.0.1 and a free port, waits for ``GET /v1/models``, and stops it by its PID (``kill`` kills it
hard, as a crash would; ``restart`` brings it back on the same port, so a run's base URL and model
fingerprint stay the same).  :class:`RecordingProxy` sits between a client and the server and
records what was sent (bodies, times) and the most requests open at once (the measured window).

When the venv or the model is missing the fixture skips, except under ``CI`` or
``MMRAG_REQUIRE_REAL_SERVER`` (``make test`` sets it), where that is a failure: the real-server
tests are never silently skipped there.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
MODEL_FILE = "models/gemma-3-270m-q4_k_m.gguf"
ALIAS = "gemma"


def llm_venv() -> Path:
    """The server's venv: ``MMRAG_LLM_VENV`` or ``.venv-llm`` at the repository root."""
    venv = Path(os.environ.get("MMRAG_LLM_VENV") or ".venv-llm")
    return venv if venv.is_absolute() else ROOT / venv


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_threads() -> int:
    """llama.cpp's threads: 1 unless ``MMRAG_LLM_THREADS`` says otherwise.  Why not the core count:
    on a loaded 2-core machine two spinning decode threads ran 20x slower (0.5 vs 11 tokens/s)."""
    return int(os.environ.get("MMRAG_LLM_THREADS") or 1)


def server_command(venv: Path, port: int, n_ctx: int = 4096, threads: int = 1) -> list[str]:
    """The command docs/models.md shows ("Serve a local model or judge")."""
    return [
        str(venv / "bin" / "python"),
        "-m",
        "llama_cpp.server",
        "--model",
        str(venv / MODEL_FILE),
        "--model_alias",
        ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        str(threads),
        "--chat_format",
        "gemma",
        # keep the evaluated prompts' states: the judge's 1,400-token grader prefix survives the
        # answer requests that interleave with it (without it, each judge call evaluates it again)
        "--cache",
        "true",
        "--cache_size",
        str(512 << 20),
    ]


def missing_reason(venv: Path) -> str | None:
    """Why the server cannot be started (None: it can)."""
    if not (venv / "bin" / "python").exists():
        return f"no llama.cpp server venv at {venv} (build it: bash scripts/install_llm_server.sh)"
    if not (venv / MODEL_FILE).exists():
        return f"no model at {venv / MODEL_FILE} (build it: bash scripts/install_llm_server.sh)"
    return None


def require_or_skip(reason: str) -> None:
    """Fail under CI / MMRAG_REQUIRE_REAL_SERVER (never a silent skip there), skip elsewhere."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes") or os.environ.get("MMRAG_REQUIRE_REAL_SERVER"):
        pytest.fail(f"real_server: {reason}", pytrace=False)
    pytest.skip(reason)


class LlamaServer:
    """``python -m llama_cpp.server`` as a child process, controlled by its PID."""

    def __init__(self, venv: Path, log_dir: Path, port: int | None = None, threads: int | None = None) -> None:
        self.venv = venv
        self.port = port or free_port()
        self.threads = threads or server_threads()
        self.log = log_dir / f"llama-server-{self.port}.log"
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 180.0) -> LlamaServer:
        with open(self.log, "ab") as fh:
            self.proc = subprocess.Popen(
                server_command(self.venv, self.port, threads=self.threads),
                stdout=fh,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama.cpp server exited with {self.proc.returncode}: {self.log_tail()}")
            try:
                r = httpx.get(self.url + "/models", timeout=2.0)
                if r.status_code == 200 and any(m.get("id") == ALIAS for m in r.json().get("data", [])):
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"llama.cpp server not ready on {self.url} after {timeout:.0f}s: {self.log_tail()}")

    def log_tail(self, n: int = 600) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:].replace("\n", " | ")
        except OSError:
            return "(no log)"

    def kill(self) -> None:
        """SIGKILL by PID, as a crash: no graceful shutdown, open requests dropped."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        """SIGTERM by PID, then SIGKILL if it has not gone within 10 s."""
        if self.proc is None or self.proc.poll() is not None:
            return
        os.kill(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()

    def restart(self) -> LlamaServer:
        self.stop()
        return self.start()

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


@dataclass
class Exchange:
    """One request through the proxy: when it arrived and was answered, what was sent and received."""

    path: str
    t: float
    done: float = 0.0
    body: dict[str, Any] = field(default_factory=dict)
    status: int = 0
    reply: dict[str, Any] = field(default_factory=dict)


class RecordingProxy:
    """An HTTP/1.1 forwarder on a thread: each request goes upstream on its own connection, the
    reply comes back whole.  Records every exchange and the most requests open at once."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream = upstream_port
        self.port = 0
        self.records: list[Exchange] = []
        self.open = 0
        self.max_open = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def chat(self) -> list[Exchange]:
        return [r for r in self.records if r.path.endswith("/chat/completions")]

    def reset(self) -> None:
        self.records.clear()
        self.max_open = 0

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("recording proxy did not start")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._loop.run_until_complete(self._serve())

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            writer.close()
            return
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = [ln for ln in lines[1:] if ln and not ln.lower().startswith(("connection:", "host:"))]
        length = next((int(h.split(":", 1)[1]) for h in headers if h.lower().startswith("content-length:")), 0)
        body = await reader.readexactly(length) if length else b""
        ex = Exchange(path=path, t=time.monotonic())
        if body:
            ex.body = json.loads(body)
        self.records.append(ex)
        self.open += 1
        self.max_open = max(self.max_open, self.open)
        try:
            raw = await self._forward(method, path, headers, body)
        except OSError:  # upstream gone: drop the client's connection as the server would
            raw = b""
        finally:
            self.open -= 1
            ex.done = time.monotonic()
        if raw:
            head_out, _, payload = raw.partition(b"\r\n\r\n")
            ex.status = int(head_out.split(b" ", 2)[1])
            try:
                ex.reply = json.loads(payload)
            except ValueError:
                pass
            writer.write(raw)
            await writer.drain()
        writer.close()

    async def _forward(self, method: str, path: str, headers: list[str], body: bytes) -> bytes:
        r, w = await asyncio.open_connection("127.0.0.1", self.upstream)
        head = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{self.upstream}", "Connection: close", *headers]
        w.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
        await w.drain()
        raw = await r.read()
        w.close()
        return raw
