"""Image handling for the source builders: find a dataset's images, check them, store them once.

Every image a builder emits (query images, gold images, negative images) goes through
:class:`ImageStore`, which decodes it with PIL (so a truncated download is caught at build time, not
in the middle of a model run), and writes it under a content-addressed name
(``<sha256>.<ext>``) in a folder beside the output.  Records then reference it by a path relative
to the output file's folder, so the built benchmark can be moved as a whole and an image shared by
several samples or documents is stored once.

Datasets ship images in three ways, each with a small finder here:

* a folder laid out as the release documents it (InfoSeek/OVEN, E-VQA, ViQuAE, MMDocRAG, WebQA):
  :class:`FolderImages`, exact lookup only (a missing file is a counted skip);
* WebQA's ``imgs.tsv`` (``image_id<TAB>base64``): :func:`ingest_webqa_tsv` streams it once and
  stores only the ids a build needs;
* Hugging Face ``Image`` values (MRAG-Bench's parquet): :func:`image_bytes` accepts the
  ``{"bytes", "path"}`` struct, raw bytes or a PIL image.
"""

from __future__ import annotations

import base64
import binascii
import io
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mmrag.schema import sha256_bytes
from mmrag.util import atomic_write_bytes

#: PIL format name -> file extension of the stored copy.  Other formats are re-encoded as PNG.
_EXT = {"JPEG": ".jpg", "PNG": ".png", "WEBP": ".webp", "GIF": ".gif", "BMP": ".bmp", "TIFF": ".tif"}
#: extensions (lower-cased) that :meth:`FolderImages.find_stem` accepts as an image file
_IMAGE_EXTS = (".jpg", ".jpeg", ".png", ".webp", ".gif", ".bmp", ".tif", ".tiff")


class BadImage(Exception):
    """Bytes that PIL cannot decode.  Builders turn it into a counted skip (real dumps have a few
    broken files) rather than aborting a build of thousands of samples."""


class ImageStore:
    """Content-addressed image folder beside the output; returns paths relative to ``base``."""

    def __init__(self, folder: Path, base: Path) -> None:
        self.folder = folder
        self.base = base
        self.written = 0
        self._known: dict[str, str] = {}
        self._created: list[Path] = []

    def put_bytes(self, data: bytes) -> str:
        """Store ``data`` (after checking it decodes) and return its path relative to ``base``."""
        digest = sha256_bytes(data)
        if digest in self._known:
            return self._known[digest]
        ext, payload = _checked(data)
        path = self.folder / f"{digest}{ext}"
        if not path.exists():
            atomic_write_bytes(path, payload)
            self._created.append(path)
            self.written += 1
        rel = os.path.relpath(path, self.base).replace(os.sep, "/")
        self._known[digest] = rel
        return rel

    def put_file(self, path: Path) -> str:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise BadImage(f"cannot read {path}: {exc.strerror}") from None
        return self.put_bytes(data)

    def rollback(self) -> None:
        """Remove the files this store created (a failed build leaves nothing behind)."""
        for p in self._created:
            p.unlink(missing_ok=True)
        self._created.clear()
        try:
            self.folder.rmdir()  # only when empty: earlier builds' images stay
        except OSError:
            pass

    def sha_of(self, rel: str) -> str:
        """The content hash of a stored image (its file stem)."""
        return Path(rel).stem


def _checked(data: bytes) -> tuple[str, bytes]:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as im:
            fmt = im.format or ""
            im.load()
            if fmt in _EXT:
                return _EXT[fmt], data
            buf = io.BytesIO()
            im.convert("RGB").save(buf, format="PNG")
            return ".png", buf.getvalue()
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise BadImage(f"undecodable image ({exc})") from None


class FolderImages:
    """Find an image inside a dataset's image folder, exactly as the release lays it out.

    Lookup is exact on purpose: in a dump of millions of files a "close" name (``x.jpg`` vs
    ``x.jpg.png``, the same stem in another folder) can be a different picture, so a missing file
    is reported as missing (the builder counts the skip) and never replaced by a look-alike.

    * :meth:`find` — one or more paths relative to the folder (the release's documented layout,
      e.g. E-VQA landmarks ``a/b/c/<id>.jpg``, MMDocRAG's ``img_path``, ViQuAE's ``image``);
    * :meth:`find_stem` — a file named ``<stem><ext>`` in one sub-folder when the release keeps
      each image's original extension and the data names the image by id only (OVEN's
      ``<two digits>/<image_id><ext>``, with ``.JPEG`` for ImageNet images).
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._listing: dict[Path, dict[str, list[Path]]] = {}

    def find(self, *relpaths: str) -> Path | None:
        for rel in relpaths:
            rel = str(rel).strip()
            if not rel or Path(rel).is_absolute() or ".." in Path(rel).parts:
                continue
            p = self.root / rel
            if p.is_file():
                return p
        return None

    def find_stem(self, subdir: str, stem: str) -> Path | None:
        """The file ``<subdir>/<stem><ext>`` for the one image extension present (files are
        listed once per sub-folder); None when there is none."""
        folder = self.root / subdir if subdir else self.root
        if folder not in self._listing:
            by_stem: dict[str, list[Path]] = {}
            if folder.is_dir():
                for entry in os.scandir(folder):
                    if entry.is_file():
                        p = Path(entry.path)
                        if p.suffix.lower() in _IMAGE_EXTS:
                            by_stem.setdefault(p.stem, []).append(p)
            self._listing[folder] = by_stem
        hits = sorted(self._listing[folder].get(stem, []))
        return hits[0] if hits else None


def image_bytes(value: Any, base_dir: Path | None = None) -> bytes | None:
    """Bytes of a Hugging Face ``Image`` value: ``{"bytes", "path"}``, raw bytes, or a PIL image.

    A struct with no bytes falls back to reading ``path`` (absolute, or relative to ``base_dir``).
    Returns None for a missing value."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, dict):
        if value.get("bytes"):
            return bytes(value["bytes"])
        p = value.get("path")
        if p:
            cand = Path(p)
            if not cand.is_absolute() and base_dir is not None:
                cand = base_dir / cand
            if cand.is_file():
                return cand.read_bytes()
        return None
    if hasattr(value, "save"):  # a PIL image (datasets decoded it)
        buf = io.BytesIO()
        value.save(buf, format="PNG")
        return buf.getvalue()
    raise TypeError(f"unsupported image value of type {type(value).__name__}")


def ingest_webqa_tsv(tsv: Path, wanted: Iterable[str], store: ImageStore) -> dict[str, str]:
    """Stream WebQA's ``imgs.tsv`` (``image_id<TAB>base64`` per line) once, storing only ``wanted``.

    Returns image id -> stored relative path.  A wanted id whose bytes do not decode is left out
    (the builder then counts the sample or negative as skipped)."""
    from mmrag.errors import InputError

    wanted = {str(w) for w in wanted}
    found: dict[str, str] = {}
    with open(tsv, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not wanted - found.keys():
                break
            image_id, sep, b64 = line.rstrip("\n").partition("\t")
            if not sep:
                raise InputError("expected 'image_id<TAB>base64'", path=tsv, line=lineno)
            if image_id not in wanted or image_id in found:
                continue
            try:
                data = base64.b64decode(b64, validate=False)
                found[image_id] = store.put_bytes(data)
            except (binascii.Error, BadImage):
                continue
    return found
