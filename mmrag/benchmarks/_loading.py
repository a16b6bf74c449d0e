"""Helpers shared by the benchmark loaders: image resolution, the content-addressed image cache,
multiple-choice options, and data fingerprints.

Loaders never hold pixels: a sample carries an :class:`~mmrag.schema.ImageRef` (path, and sha256
where the loader had the bytes anyway).  Images embedded as bytes (parquet, hub arrow files) are
written once into ``mmrag_home()/images/<sha[:2]>/<sha>.<ext>`` and referenced from there, so a
22k-question dataset costs one pass over its images, not a copy in memory.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mmrag.errors import InputError
from mmrag.schema import Choice, ImageRef, is_nota_text, sha256_bytes
from mmrag.util import atomic_write_bytes, mmrag_home


def resolve_image(value: str, base: Path, *, file: str | Path, line: int | None, field: str, record: str) -> ImageRef:
    """A record's image path (relative to ``base`` unless absolute) as an ImageRef; a missing file
    is an InputError naming the data file, line, field and the record's id."""
    if not isinstance(value, str) or not value or "\0" in value or len(value) > 4096:
        shown = value[:80] + "..." if isinstance(value, str) and len(value) > 80 else value
        raise InputError(f"not a usable image path: {shown!r} (record {record})", path=file, line=line, field=field)
    p = Path(value)
    if not p.is_absolute():
        p = base / p
    try:
        found = p.is_file()
    except OSError as exc:  # a name too long for the filesystem, a loop of links...
        raise InputError(
            f"image path unusable ({exc.strerror}) (record {record})", path=file, line=line, field=field
        ) from None
    if not found:
        raise InputError(f"image not found: {p} (record {record})", path=file, line=line, field=field)
    _check_decodable(p, file=file, line=line, field=field, record=record)
    return ImageRef(path=str(p))


#: the most pixels an input image may have (PIL's own bomb limit, kept even if a caller disabled it)
MAX_PIXELS = 89_478_485


def _check_header(source: Any, shown: str, *, file: str | Path, line: int | None, field: str, record: str) -> None:
    """Read an image's header only (cheap: no pixel decoding), so a corrupt or non-image file, or a
    decompression bomb (a tiny file claiming billions of pixels), fails at load time naming its
    record — not deep inside a model call hours into a run."""
    import warnings

    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(source) as im:
                w, h = im.size
    except (Image.DecompressionBombWarning, Image.DecompressionBombError):
        raise InputError(
            f"image {shown} declares too many pixels (a decompression bomb?) (record {record})",
            path=file,
            line=line,
            field=field,
        ) from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise InputError(
            f"image cannot be decoded: {shown} ({type(exc).__name__}) (record {record})",
            path=file,
            line=line,
            field=field,
        ) from None
    if w * h > (Image.MAX_IMAGE_PIXELS or MAX_PIXELS) or w <= 0 or h <= 0:
        raise InputError(
            f"image {shown} is {w}x{h} pixels, over the limit of {MAX_PIXELS} (record {record})",
            path=file,
            line=line,
            field=field,
        )


def _check_decodable(p: Path, *, file: str | Path, line: int | None, field: str, record: str) -> None:
    _check_header(p, str(p), file=file, line=line, field=field, record=record)


def check_image_bytes(data: bytes, *, file: str | Path, line: int | None, field: str, record: str) -> None:
    """Embedded image bytes (parquet, hub arrow) must be a decodable image of sane size."""
    import io

    if not isinstance(data, (bytes, bytearray)) or not data:
        raise InputError(f"image bytes are empty or not bytes (record {record})", path=file, line=line, field=field)
    _check_header(io.BytesIO(bytes(data)), "bytes", file=file, line=line, field=field, record=record)


def _image_ext(data: bytes, hint: str | None = None) -> str:
    if data.startswith(b"\x89PNG"):
        return ".png"
    if data.startswith(b"\xff\xd8"):
        return ".jpg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return ".webp"
    if data[:3] == b"GIF":
        return ".gif"
    suffix = Path(hint).suffix.lower() if hint else ""
    return suffix if suffix else ".img"


def cache_image_bytes(data: bytes, hint: str | None = None, cache_dir: Path | None = None) -> ImageRef:
    """Store embedded image bytes once under their content hash and return a reference to the file."""
    digest = sha256_bytes(data)
    root = cache_dir or (mmrag_home() / "images")
    path = root / digest[:2] / f"{digest}{_image_ext(data, hint)}"
    if not path.is_file():
        atomic_write_bytes(path, data)
    return ImageRef(path=str(path), sha256=digest)


def choices_from_options(options: dict[str, str] | None) -> list[Choice]:
    """MCQ options as Choices, in letter order; "None of the above" is found by its text."""
    if not options:
        return []
    return [Choice(letter=k, text=v, is_nota=is_nota_text(v)) for k, v in sorted(options.items())]


def fingerprint_files(paths: Iterable[Path | str], extra: str = "") -> str:
    """sha256 over the named data files (names and bytes, in sorted order) plus ``extra``."""
    h = hashlib.sha256(extra.encode())
    for p in sorted(Path(x) for x in paths):
        h.update(p.name.encode() + b"\0")
        with open(p, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def take_options(benchmark: str, options: dict, allowed: dict) -> dict:
    """``allowed`` (name -> default) filled from ``options``; an unknown option is an InputError
    (a typo such as ``kbb=`` must not be silently ignored)."""
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise InputError(
            f"unknown option(s) for benchmark '{benchmark}': {', '.join(unknown)}; "
            f"known: {', '.join(sorted(allowed)) or '(none)'}"
        )
    out = {k: options.get(k, v) for k, v in allowed.items()}
    for k, default in allowed.items():
        _check_option_type(benchmark, k, out[k], default)
    return out


def _check_option_type(benchmark: str, name: str, value: Any, default: Any) -> None:
    """An option must have its default's type (``seed: "x"`` or ``check_gold: "no"`` is an error,
    not a traceback later); options whose default is None take a path or string."""
    if default is None:
        ok = value is None or isinstance(value, (str, Path))
        want = "a path or string"
    elif isinstance(default, bool):
        ok, want = isinstance(value, bool), "true or false"
    elif isinstance(default, int):
        ok, want = isinstance(value, int) and not isinstance(value, bool), "an integer"
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        want = "a finite number"
    elif isinstance(default, str):
        ok, want = isinstance(value, str), "a string"
    else:
        return
    if not ok:
        raise InputError(
            f"option '{name}' of benchmark '{benchmark}' must be {want}, got {value!r}", field=f"options.{name}"
        )
