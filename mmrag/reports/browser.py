"""The HTML sample browser: one self-contained static file per run.

``write_browser(RUN_DIR)`` writes ``RUN_DIR/browser.html``: every record of the run as JSON
inside the page, every image as a ``data:`` URI, and a small vanilla-JS viewer (no CDN, no network,
no server) to filter by scenario, outcome, model and free text and to read one sample in full: the
query image, the contexts with their images and roles, the prompt as the model saw it, the response
and the verdict.  The file can be mailed, attached to a paper's supplementary material or opened
from a laptop with no mmrag installed.

Safety: model responses are untrusted text.  The data is embedded in a ``<script
type="application/json">`` block with ``<``, ``>`` and ``&`` escaped as ``\\u003c`` etc., so no
response can close the block, and the viewer builds the page with ``textContent`` only (never
``innerHTML`` on data), so ``<script>`` in a response is shown as text and never runs.

Size guard: images are de-duplicated by content hash (a query image shared by 40 scenarios is
stored once), downscaled so that their longer side is at most ``max_side`` pixels (default 384),
and re-encoded as PNG or JPEG, whichever is smaller.  Once the embedded images reach
``max_image_bytes`` (default 48 MiB of base64 text), further images are left out and shown as
"image omitted (size budget)"; the page says how many were left out.  Pass ``max_image_bytes=None``
to embed everything.
"""

from __future__ import annotations

import base64
import io
import json
import logging
from importlib import resources
from pathlib import Path
from typing import Any

from mmrag.runs.frame import read_records
from mmrag.runs.records import RunRecord
from mmrag.scenarios.kinds import scenario_label
from mmrag.schema import ImageRef, sha256_file
from mmrag.util import atomic_write_text

log = logging.getLogger(__name__)

BROWSER_FILE = "browser.html"
DEFAULT_MAX_SIDE = 384
DEFAULT_MAX_IMAGE_BYTES = 48 * 1024 * 1024
_DATA_MARK = "/*__MMRAG_DATA__*/"


class ImageStore:
    """Content-addressed ``data:`` URIs with a downscale and a total-size budget."""

    def __init__(self, max_side: int = DEFAULT_MAX_SIDE, max_bytes: int | None = DEFAULT_MAX_IMAGE_BYTES) -> None:
        self.max_side = max_side
        self.max_bytes = max_bytes
        self.uris: dict[str, str] = {}
        self.by_path: dict[str, str | None] = {}
        self.total = 0
        self.omitted: set[str] = set()
        self.missing: set[str] = set()

    def _encode(self, path: str) -> str:
        from PIL import Image

        with Image.open(path) as im:
            im.load()
            im = im.convert("RGBA" if im.mode in ("RGBA", "LA", "P") else ("L" if im.mode == "L" else "RGB"))
            im.thumbnail((self.max_side, self.max_side))
            best: tuple[int, str, bytes] | None = None
            for fmt, mime in (("PNG", "image/png"), ("JPEG", "image/jpeg")):
                if fmt == "JPEG" and im.mode == "RGBA":
                    continue
                buf = io.BytesIO()
                im.save(buf, format=fmt, **({"quality": 85} if fmt == "JPEG" else {"optimize": True}))
                data = buf.getvalue()
                if best is None or len(data) < best[0]:
                    best = (len(data), mime, data)
        assert best is not None
        return f"data:{best[1]};base64," + base64.b64encode(best[2]).decode("ascii")

    def add(self, ref: ImageRef | None) -> str | None:
        """The hash the page refers to this image by, or None when the file is missing."""
        if ref is None:
            return None
        if ref.path in self.by_path:
            return self.by_path[ref.path]
        try:
            digest = ref.sha256 or sha256_file(ref.path)
        except OSError:
            log.warning("browser: image not found: %s", ref.path)
            self.missing.add(ref.path)
            self.by_path[ref.path] = None
            return None
        self.by_path[ref.path] = digest
        if digest in self.uris or digest in self.omitted:
            return digest
        if self.max_bytes is not None and self.total >= self.max_bytes:
            self.omitted.add(digest)
            return digest
        try:
            uri = self._encode(ref.path)
        except OSError as exc:  # unreadable or not an image
            log.warning("browser: cannot read image %s: %s", ref.path, exc)
            self.missing.add(ref.path)
            self.by_path[ref.path] = None
            return None
        if self.max_bytes is not None and self.total + len(uri) > self.max_bytes:
            self.omitted.add(digest)
            return digest
        self.uris[digest] = uri
        self.total += len(uri)
        return digest


def _record_view(i: int, rec: RunRecord, images: ImageStore) -> dict[str, Any]:
    """What the page needs of one record (paths and pixels replaced by image hashes)."""
    choices = rec.prompt.choices or rec.sample.choices
    label = rec.prompt.label if rec.prompt.label is not None else rec.sample.label
    return {
        "i": i,
        "key": rec.key,
        "benchmark": rec.benchmark,
        "benchmark_kind": rec.benchmark_kind,
        "scenario_id": rec.scenario_id,
        "scenario": scenario_label(rec.scenario),
        "spec": rec.scenario,
        "model": rec.model,
        "sample_id": rec.sample.id,
        "question_id": rec.sample.question_id,
        "question": rec.sample.question,
        "source": rec.sample.source,
        "images": [images.add(im) for im in rec.sample.images],
        "answers": rec.sample.answers,
        "choices": [{"letter": c.letter, "text": c.text, "nota": c.is_nota} for c in choices],
        "label": label,
        "metadata": rec.sample.metadata,
        "contexts": [
            {
                "role": c.role,
                "score": c.score,
                "id": c.document.id,
                "modality": c.document.modality,
                "title": c.document.title,
                "text": c.document.text,
                "image": images.add(c.document.image),
            }
            for c in rec.prompt.contexts
        ],
        "prompt": {
            "id": rec.prompt.id,
            "template": rec.prompt.template_id,
            "version": rec.prompt.template_version,
            "messages": [
                {
                    "role": m.role,
                    "parts": [
                        {"type": "image", "image": images.add(p.image)}
                        if p.type == "image"
                        else {"type": "text", "text": p.text or ""}
                        for p in m.content
                    ],
                }
                for m in rec.prompt.messages
            ],
        },
        "response": {
            "text": rec.response.text,
            "error": rec.response.error,
            "error_detail": rec.response.error_detail,
            "latency_s": rec.response.latency_s,
            "cached": rec.response.cached,
        },
        "verdict": {
            "outcome": rec.verdict.outcome,
            "extracted": rec.verdict.extracted,
            "judge_id": rec.verdict.judge_id,
            "reason": rec.verdict.reason,
            "details": rec.verdict.details,
        },
    }


def _safe_json(obj: Any) -> str:
    """JSON that cannot end its ``<script>`` block or open an HTML comment."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)
    return (
        text.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def browser_html(
    records: list[RunRecord],
    title: str,
    *,
    max_side: int = DEFAULT_MAX_SIDE,
    max_image_bytes: int | None = DEFAULT_MAX_IMAGE_BYTES,
    state: str | None = None,
) -> str:
    """The page as a string (see :func:`write_browser`); ``state``: the incomplete-run notice
    (:meth:`mmrag.runs.state.RunState.notice`), shown first in the header."""
    store = ImageStore(max_side=max_side, max_bytes=max_image_bytes)
    views = [_record_view(i, r, store) for i, r in enumerate(records)]
    payload = {
        "title": title,
        "records": views,
        "images": store.uris,
        "omitted": sorted(store.omitted),
        "missing": sorted(store.missing),
        "max_side": max_side,
        "state": state,
    }
    template = resources.files("mmrag.reports").joinpath(BROWSER_FILE).read_text(encoding="utf-8")
    if _DATA_MARK not in template:  # pragma: no cover - guards an edited template
        raise RuntimeError(f"browser template lacks the {_DATA_MARK} marker")
    html_title = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    head, tail = template.split(_DATA_MARK, 1)  # split first: the title may not smuggle in a marker
    return (
        head.replace("__MMRAG_TITLE__", html_title) + _safe_json(payload) + tail.replace("__MMRAG_TITLE__", html_title)
    )


def write_browser(
    run_dir: str | Path,
    out: str | Path | None = None,
    *,
    max_side: int = DEFAULT_MAX_SIDE,
    max_image_bytes: int | None = DEFAULT_MAX_IMAGE_BYTES,
) -> Path:
    """Write the run's sample browser (default ``RUN_DIR/browser.html``) atomically; returns its path."""
    run_dir = Path(run_dir)
    records = read_records(run_dir)
    out_path = Path(out) if out is not None else run_dir / BROWSER_FILE
    from mmrag.runs.state import records_state

    html = browser_html(
        records,
        title=f"mmrag run {run_dir.resolve().name}",
        max_side=max_side,
        max_image_bytes=max_image_bytes,
        state=records_state(run_dir, records).notice(),
    )
    atomic_write_text(out_path, html)
    return out_path
