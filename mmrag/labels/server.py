"""The labelling page: a Starlette app on 127.0.0.1 behind a random token, served by uvicorn.

Nothing but the page, its two static files and three JSON calls is served, all under
``/TOKEN/``; any other path (the root included) is a 404, and a request whose ``Host`` is not the
loopback address is refused (DNS rebinding).  Every response carries a strict Content-Security-
Policy (``default-src 'none'``, scripts and styles only from the page's own files, images only as
``data:`` URIs, fetches only to itself), ``no-referrer`` (the token is in the URL) and
``no-store``.  Run data travels as JSON and the page puts it in with ``textContent`` only, so a
reply holding ``<script>`` is shown as text.

A label is appended to ``RUN_DIR/labels/LABELLER.jsonl`` (:class:`~mmrag.labels.store.LabelFile`,
fsynced) before the call returns: the page never holds a label the disk does not.
"""

from __future__ import annotations

import secrets
import socket
import threading
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mmrag.errors import InputError
from mmrag.labels.items import item_view
from mmrag.labels.sample import LabelSample
from mmrag.labels.store import HUMAN_LABELS, SKIP, LabelFile, LabellerLock
from mmrag.runs.records import RunRecord
from mmrag.util import parse_json_line

HOST = "127.0.0.1"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}
_STATIC = {"label.js": "text/javascript; charset=utf-8", "label.css": "text/css; charset=utf-8"}


@dataclass
class Session:
    """One labeller on one run's sample."""

    run_dir: Path
    sample: LabelSample
    records: dict[str, RunRecord]
    labeller: str
    show_judge: bool = False
    max_side: int = 512
    title: str = ""
    #: the keys in showing order (default: the sample's); ``mmrag label --undecided`` puts the
    #: replies the judge left undecided first, ``n_undecided`` of them
    order: list[str] | None = None
    n_undecided: int = 0
    file: LabelFile = field(init=False)

    def __post_init__(self) -> None:
        from mmrag.reports.browser import ImageStore

        self.file = LabelFile(self.run_dir, self.labeller)
        self._images = ImageStore(max_side=self.max_side, max_bytes=None)
        self._lock = threading.Lock()
        if self.order is None:
            self.order = list(self.sample.keys)
        missing = [k for k in self.keys if k not in self.records]
        if missing:
            raise InputError(
                f"{len(missing)} items of the labelling sample are not records of this run "
                f"(e.g. {missing[0]}): was the run directory changed?",
                path=self.run_dir,
            )

    @property
    def keys(self) -> list[str]:
        """The keys in the order the page shows them."""
        return self.order if self.order is not None else list(self.sample.keys)

    def _uri(self, ref) -> str | None:
        digest = self._images.add(ref)
        return self._images.uris.get(digest) if digest else None

    def state(self) -> dict[str, Any]:
        return {
            "labeller": self.labeller,
            "show_judge": self.show_judge,
            "title": self.title,
            "keys": self.keys,
            "labels": [[k, v] for k, v in self.file.current().items()],
            "classes": list(HUMAN_LABELS),
            "undecided": self.n_undecided,
        }

    def item(self, i: int) -> dict[str, Any]:
        rec = self.records[self.keys[i]]
        with self._lock:
            view = item_view(rec, self._uri)
        view["index"] = i
        if self.show_judge:  # the verdict and what it rests on: only when asked (labels are blind)
            ev = rec.verdict.evidence
            view["judge"] = {
                "outcome": rec.verdict.outcome,
                "reason": rec.verdict.reason,
                "evidence": None if ev is None else ev.model_dump(mode="json"),
            }
        return view

    def label(self, key: str, label: str | None) -> dict[str, Any]:
        if key not in self.records:
            raise InputError(f"{key!r} is not an item of this sample", field="key")
        if label is not None and label not in (*HUMAN_LABELS, SKIP):
            raise InputError(f"unknown label {label!r}", field="label")
        return self.file.append(key, label)


def _headers(resp: Response) -> Response:
    resp.headers.update(HEADERS)
    return resp


def create_app(session: Session, token: str) -> Starlette:
    """The ASGI app; every route lives under ``/{token}/``."""

    def page(request: Request) -> Response:
        html = resources.files("mmrag.labels").joinpath("page/label.html").read_text(encoding="utf-8")
        return _headers(Response(html, media_type="text/html; charset=utf-8"))

    def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            return _headers(Response("not found", status_code=404, media_type="text/plain"))
        body = resources.files("mmrag.labels").joinpath(f"page/{name}").read_text(encoding="utf-8")
        return _headers(Response(body, media_type=_STATIC[name]))

    def state(request: Request) -> Response:
        return _headers(JSONResponse(session.state()))

    def item(request: Request) -> Response:
        i = request.path_params["i"]
        if not 0 <= i < len(session.keys):
            return _headers(JSONResponse({"error": "no such item"}, status_code=404))
        return _headers(JSONResponse(session.item(i)))

    async def label(request: Request) -> Response:
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return _headers(JSONResponse({"error": "send JSON"}, status_code=415))
        try:
            body = parse_json_line(await request.body(), Path("request body"), 1)
            line = session.label(str(body["key"]), body.get("label"))
        except (ValueError, KeyError, TypeError):
            return _headers(JSONResponse({"error": 'expected {"key": ..., "label": ...}'}, status_code=400))
        except InputError as exc:  # a bad label, or a body nested too deeply / with a key twice
            return _headers(JSONResponse({"error": str(exc)}, status_code=400))
        return _headers(JSONResponse({"ok": True, "line": line}))

    routes = [
        Route(f"/{token}/", page),
        Route(f"/{token}/static/{{name}}", static),
        Route(f"/{token}/api/state", state),
        Route(f"/{token}/api/item/{{i:int}}", item),
        Route(f"/{token}/api/label", label, methods=["POST"]),
    ]
    return Starlette(routes=routes, middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=[HOST, "localhost"])])


class LabelServer:
    """uvicorn on a free loopback port; :meth:`start` serves from a thread (tests, notebooks),
    :meth:`serve` blocks until Ctrl-C (the command)."""

    def __init__(self, session: Session, port: int = 0) -> None:
        import uvicorn

        # one page per labeller and run: held until stop(), the end of serve(), or the end of the
        # process (kill -9 included)
        self.lock = LabellerLock(session.run_dir, session.labeller).acquire()
        self.token = secrets.token_urlsafe(24)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind((HOST, port))
        except OSError as exc:
            self.sock.close()
            self.lock.release()
            raise InputError(f"cannot listen on {HOST}:{port} ({exc.strerror})", field="--port") from None
        self.port = self.sock.getsockname()[1]
        self.app = create_app(session, self.token)
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning", lifespan="off", access_log=False))
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/{self.token}/"

    def serve(self) -> None:
        try:
            self.server.run(sockets=[self.sock])
        finally:
            if self._thread is None:  # the command's blocking serve: its end frees the labeller
                self.lock.release()

    def start(self, timeout: float = 10.0) -> str:
        self._thread = threading.Thread(target=self.serve, name="mmrag-label", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the labelling server did not start")
            time.sleep(0.02)
        return self.url

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.sock.close()
        self.lock.release()

    def __enter__(self) -> LabelServer:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
