"""Turning a :class:`~mmrag.schema.Prompt` into what a backend consumes.

Two renderings, one per family of backends:

* :func:`openai_messages` — the chat-completions wire format: text parts as ``{"type": "text"}``,
  images as ``{"type": "image_url", "image_url": {"url": "data:<mime>;base64,..."}}``.  A message
  without images is sent as a plain string (the most widely accepted form: older llama.cpp and
  Ollama builds reject part lists in system messages).  The vLLM offline engine takes the same form.
* :func:`template_messages` — the form a processor's chat template expects
  (``{"type": "image"}`` placeholders) plus the PIL images in prompt order, for transformers.

Base64 encoding of the same image for many prompts (a knowledge-base image appears in many
scenarios) is memoised by content hash, so a batch pays the encoding once per distinct image.
"""

from __future__ import annotations

import base64
from collections import OrderedDict
from threading import Lock
from typing import Any

from mmrag.errors import InputError
from mmrag.schema import ImageRef, Prompt

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
)


#: what :func:`sniff_mime` recognises, i.e. what a data URL can carry (TIFF, for one, cannot)
DATA_URL_TYPES: tuple[str, ...] = ("image/png", "image/jpeg", "image/gif", "image/bmp", "image/webp")


def sniff_mime(data: bytes) -> str:
    """The MIME type of an encoded image from its magic bytes (file extensions lie)."""
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    raise InputError("not a PNG, JPEG, GIF, BMP or WebP image")


class _DataUrlCache:
    """A small LRU of ``sha256 -> data URL``; thread-safe because transformers/vLLM render in threads."""

    def __init__(self, capacity: int = 256) -> None:
        self.capacity = capacity
        self._items: OrderedDict[str, str] = OrderedDict()
        self._lock = Lock()

    def get(self, image: ImageRef) -> str:
        key = image.content_hash()
        with self._lock:
            url = self._items.get(key)
            if url is not None:
                self._items.move_to_end(key)
                return url
        try:
            with open(image.path, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            raise InputError(f"cannot read image: {exc.strerror}", path=image.path) from None
        try:
            mime = sniff_mime(data)
        except InputError as exc:
            raise InputError(exc.message, path=image.path) from None
        url = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
        with self._lock:
            self._items[key] = url
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
        return url


_DATA_URLS = _DataUrlCache()


def data_url(image: ImageRef) -> str:
    """``data:image/png;base64,...`` for an image file, memoised by content hash."""
    return _DATA_URLS.get(image)


def openai_messages(prompt: Prompt, *, image_detail: str | None = None) -> list[dict[str, Any]]:
    """The prompt in chat-completions form (see the module docstring for the string/parts rule)."""
    out: list[dict[str, Any]] = []
    for msg in prompt.messages:
        has_image = any(p.type == "image" and p.image is not None for p in msg.content)
        if not has_image:
            out.append({"role": msg.role, "content": msg.text()})
            continue
        parts: list[dict[str, Any]] = []
        for p in msg.content:
            if p.type == "image" and p.image is not None:
                img: dict[str, Any] = {"url": data_url(p.image)}
                if image_detail:
                    img["detail"] = image_detail
                parts.append({"type": "image_url", "image_url": img})
            elif p.text:
                parts.append({"type": "text", "text": p.text})
        out.append({"role": msg.role, "content": parts})
    return out


def template_messages(prompt: Prompt, *, system_prompt: bool = True) -> tuple[list[dict[str, Any]], list[ImageRef]]:
    """Messages for ``processor.apply_chat_template`` and the images in the order they appear.

    With ``system_prompt=False`` (a template without a system role) the system text is prepended
    to the first user message instead of being dropped.
    """
    msgs: list[dict[str, Any]] = []
    images: list[ImageRef] = []
    carry = ""
    for msg in prompt.messages:
        if msg.role == "system" and not system_prompt:
            carry += msg.text() + "\n\n"
            continue
        content: list[dict[str, Any]] = []
        if carry and msg.role == "user":
            content.append({"type": "text", "text": carry})
            carry = ""
        for p in msg.content:
            if p.type == "image" and p.image is not None:
                content.append({"type": "image"})
                images.append(p.image)
            else:
                content.append({"type": "text", "text": p.text or ""})
        msgs.append({"role": msg.role, "content": content})
    return msgs, images


def question_text(prompt: Prompt) -> str:
    """The question a prompt asks: ``metadata["question"]`` (set by the composer); else, from the
    last user message (which usually also holds the contexts and instructions), its last line that
    contains a "?", or its last non-empty line."""
    q = prompt.metadata.get("question")
    if isinstance(q, str) and q.strip():
        return q
    for msg in reversed(prompt.messages):
        if msg.role == "user":
            lines = [ln.strip() for ln in msg.text().splitlines() if ln.strip()]
            for ln in reversed(lines):
                if "?" in ln:
                    return ln
            return lines[-1] if lines else ""
    return ""
