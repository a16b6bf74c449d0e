"""Small I/O helpers shared by every stage: MMRAG_HOME, atomic writes, line-numbered JSONL.

Whole-file YAML and JSON documents (configs, templates, knowledge bases) are read by
:mod:`mmrag.mapping_files`."""

from __future__ import annotations

import errno
import json
import math
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from mmrag.errors import InputError, pydantic_field, pydantic_message

M = TypeVar("M", bound=BaseModel)


def mmrag_home() -> Path:
    """Root of mmrag's caches (demo world, response cache, retrieval cache). ``$MMRAG_HOME`` wins."""
    home = Path(os.environ.get("MMRAG_HOME", Path.home() / ".cache" / "mmrag"))
    home.mkdir(parents=True, exist_ok=True)
    return home


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write to a temp file beside ``path``, fsync, then rename: readers never see half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the usual mode
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError):
            err = as_input_error(exc, path)
            if err is not exc:
                raise err from None
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")


def write_jsonl_atomic(path: str | Path, rows: list[dict[str, Any]]) -> None:
    """Rows as JSONL, atomically; a NaN or Infinity is refused (it would be written as an
    unreadable token) rather than written."""
    try:
        text = "".join(json.dumps(r, ensure_ascii=False, default=str, allow_nan=False) + "\n" for r in rows)
    except ValueError as exc:
        raise InputError(f"refusing to write a non-finite number ({exc})", path=path) from None
    atomic_write_text(path, text)


def _bad_scalar(obj: Any) -> str | None:
    if isinstance(obj, float):
        return None if math.isfinite(obj) else "non-finite number (NaN or Infinity) is not allowed"
    if isinstance(obj, str) and not obj.isascii():
        try:
            obj.encode("utf-8")
        except UnicodeEncodeError:
            return "invalid Unicode (a lone surrogate escape such as \\ud800)"
    return None


def invalid_value(obj: Any, where: str = "") -> tuple[str, str] | None:
    """``(dotted field, why)`` for the first value of a parsed JSON/YAML document that mmrag could
    not write back, else None: a NaN or Infinity (JSON has no such numbers; Python's parser takes
    them and writing them gives ``null``, a record that can never be read back) or a string with a
    lone surrogate (a ``\\ud800`` escape: valid JSON text, but not encodable as UTF-8).

    Iterative, and each container is walked once however often it is referenced (a YAML alias
    shares one object), so neither depth nor a shared-subtree bomb can hang or crash it."""
    stack: list[tuple[Any, str]] = [(obj, where)]
    seen: set[int] = set()
    while stack:
        node, at = stack.pop()
        if isinstance(node, (dict, list)):
            if id(node) in seen:
                continue
            seen.add(id(node))
            items = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
            for k, v in reversed(items):  # reversed: the first bad value in document order is found first
                stack.append((v, f"{at}.{k}" if at else str(k)))
                if isinstance(k, str):
                    stack.append((k, at))
            continue
        why = _bad_scalar(node)
        if why is not None:
            return at or "(value)", why
    return None


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: Any) -> Any:
    """``text`` with every lone surrogate (a ``\\ud800`` escape a server sent: valid JSON, but not
    encodable as UTF-8, so the tokenizer, the cache and Parquet all refuse it) replaced by U+FFFD.

    Why at the client boundary: text from a server is data nobody checked; replacing what cannot be
    encoded keeps the reply (and the run) going, the way a decoder's ``errors="replace"`` does.
    Anything that is not a string is returned as it is."""
    if not isinstance(text, str) or text.isascii():
        return text
    return _LONE_SURROGATE.sub("\ufffd", text)


def nonfinite_field(obj: Any) -> str | None:
    """The dotted location of the first NaN/Infinity (or unwritable string) in ``obj``, else None."""
    bad = invalid_value(obj)
    return bad[0] if bad else None


def _raise(exc: InputError) -> None:
    raise exc


def _decode_line(raw: bytes, path: Path, lineno: int) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})", path=path, line=lineno
        ) from None
    return text.lstrip("\ufeff") if lineno == 1 else text


class _NonFinite(ValueError):
    pass


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook``: JSON's "last wins" for a repeated key would silently drop a value
    (YAML configs refuse it the same way)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise _DuplicateKey(k)
            seen.add(k)
    return obj


def _no_constant(token: str) -> float:
    raise _NonFinite(token)


def _finite_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):  # 1e999 parses to inf
        raise _NonFinite(token)
    return value


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def parse_json_line(raw: bytes, path: Path, lineno: int) -> dict[str, Any]:
    """One JSONL line as a JSON object, or an InputError naming file, line (and field for
    non-finite numbers, lone surrogates and a key given twice).

    Fast path: NaN/Infinity tokens and overflowing floats are caught by the parser's own hooks, and
    the object is walked (:func:`invalid_value`, to name the field) only when one was found or the
    text holds a surrogate escape — so a clean line costs one ``json.loads``."""
    text = _decode_line(raw, path, lineno)
    suspicious = False
    try:
        obj = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float, object_pairs_hook=_unique_pairs)
    except _NonFinite:
        suspicious = True
        try:
            obj = json.loads(text, object_pairs_hook=_unique_pairs)
        except _DuplicateKey as exc:
            raise InputError(
                f"duplicate key '{exc.key}' in a JSON object (the later value would silently win)",
                path=path,
                line=lineno,
                field=exc.key,
            ) from None
    except _DuplicateKey as exc:
        raise InputError(
            f"duplicate key '{exc.key}' in a JSON object (the later value would silently win)",
            path=path,
            line=lineno,
            field=exc.key,
        ) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON ({exc.msg} at column {exc.colno})", path=path, line=lineno) from None
    except RecursionError:
        raise InputError("invalid JSON (nested too deeply)", path=path, line=lineno) from None
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object, got {type(obj).__name__}", path=path, line=lineno)
    if suspicious or ("\\u" in text and _SURROGATE_ESCAPE.search(text)):
        bad = invalid_value(obj)
        if bad is not None:
            raise InputError(bad[1], path=path, line=lineno, field=bad[0])
    return obj


_PARQUET_MAGIC = b"PAR1"


def open_data_file(path: str | Path, what: str = "JSONL file"):
    """Open a data file for binary reading; a missing file, a folder, an unreadable file or a
    parquet file given as JSONL is one InputError naming it."""
    path = Path(path)
    if not path.exists():
        raise InputError("file not found", path=path)
    if path.is_dir():
        raise InputError(f"is a folder; expected a {what}", path=path)
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", path=path) from None
    if fh.read(4) == _PARQUET_MAGIC:
        fh.close()
        raise InputError(f"this is a parquet file; expected a {what}", path=path)
    fh.seek(0)
    return fh


#: the longest line a JSONL reader accepts (bytes); ``MMRAG_MAX_LINE_BYTES`` overrides it
DEFAULT_MAX_LINE_BYTES = 64 << 20


def max_line_bytes() -> int:
    """The line-length bound of every JSONL / KB reader (``MMRAG_MAX_LINE_BYTES``, default 64 MiB).

    Why a bound: a line is read into memory whole, so a file with no newline — a gzip bomb of a
    few MB that expands to GBs of NULs — would otherwise exhaust memory before any check runs."""
    raw = os.environ.get("MMRAG_MAX_LINE_BYTES")
    try:
        return max(1024, int(raw)) if raw else DEFAULT_MAX_LINE_BYTES
    except ValueError:
        raise InputError(f"MMRAG_MAX_LINE_BYTES must be a number of bytes, got {raw!r}") from None


def read_lines(fh: Any, path: str | Path, limit: int | None = None) -> Iterator[tuple[int, bytes]]:
    """``(line number, raw line)`` of a binary file object (plain or decompressing), refusing a
    line longer than ``limit`` bytes (:func:`max_line_bytes`) with an InputError naming file and
    line — after reading at most ``limit + 1`` bytes of it."""
    limit = limit or max_line_bytes()
    lineno = 0
    while True:
        raw = fh.readline(limit + 1)
        if not raw:
            return
        lineno += 1
        if len(raw) > limit and not raw.endswith(b"\n"):
            raise InputError(
                f"line longer than {limit} bytes (a file without newlines?); the bound is MMRAG_MAX_LINE_BYTES",
                path=path,
                line=lineno,
            )
        yield lineno, raw


def iter_jsonl(
    path: str | Path,
    *,
    on_error: Callable[[InputError], None] = _raise,
    on_truncated_tail: Callable[[InputError], None] | None = None,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """THE JSONL reader: yield ``(line_number, object)`` for each non-blank line.

    One error policy: every problem of a line (not UTF-8, not JSON, not an object, a NaN or
    Infinity, a lone surrogate) is an :class:`InputError` naming file, line (and field where there
    is one), handed to ``on_error`` — which raises by default (loaders stop at the first bad
    record) and collects in ``mmrag benchmark validate`` (which lists every problem); the bad line
    is then skipped.  Append-only files (a run's records) may end in a line cut short by a kill:
    when ``on_truncated_tail`` is given, a last line that does not parse goes there instead.
    Problems with the file as a whole (missing, a folder, parquet) always raise."""
    path = Path(path)

    def one(lineno: int, raw: bytes, last: bool) -> Iterator[tuple[int, dict[str, Any]]]:
        try:
            obj = parse_json_line(raw, path, lineno)
        except InputError as exc:
            cut = (
                last
                and on_truncated_tail is not None
                and exc.field is None
                and (exc.message.startswith("invalid JSON") or exc.message.startswith("not UTF-8"))
            )
            (on_truncated_tail if cut else on_error)(exc)  # type: ignore[misc]
            return
        yield lineno, obj

    with open_data_file(path) as fh:
        pending: tuple[int, bytes] | None = None  # one line of lookahead: is this the last one?
        for lineno, raw in read_lines(fh, path):
            if not raw.strip():
                continue
            if pending is not None:
                yield from one(*pending, last=False)
            pending = (lineno, raw)
        if pending is not None:
            yield from one(*pending, last=True)


def parse_record(model: type[M], obj: dict[str, Any], *, path: str | Path | None = None, line: int | None = None) -> M:
    """Validate one record, turning a pydantic error into an InputError naming file, line, field."""
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise InputError(pydantic_message(exc), path=path, line=line, field=pydantic_field(exc)) from None


#: errno -> why a write failed, for the errors that mean "no room": the disk, a quota, a size limit
_NO_ROOM = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EFBIG: "file too large (a file-size limit: `ulimit -f`, or the filesystem's)",
}


def disk_full(
    path: str | Path | None, action: str = "free space and run the command again", why: str = "no space left on device"
) -> InputError:
    """The one message for a full disk: what could not be written and the way out."""
    return InputError(f"{why}; {action} (what was written before is intact)", path=path)


def as_input_error(
    exc: OSError, path: str | Path | None = None, action: str = "free space and run the command again"
) -> InputError | OSError:
    """An OSError from a write as a clear InputError when it is the user's to fix (full disk,
    quota, a file-size limit, permissions, read-only filesystem); anything else is returned unchanged."""
    where = exc.filename or path
    if exc.errno in _NO_ROOM:
        return disk_full(where, action, _NO_ROOM[exc.errno])
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return InputError(f"cannot write ({exc.strerror})", path=where)
    return exc


def read_jsonl_models(path: str | Path, model: type[M]) -> list[M]:
    return [parse_record(model, obj, path=path, line=ln) for ln, obj in iter_jsonl(path)]


def open_sqlite_wal(path: str | Path, schema: str, *, synchronous: str = "FULL", timeout: float = 60.0):
    """A SQLite connection in WAL mode with ``schema`` (one CREATE ... IF NOT EXISTS statement)
    applied, shared safely by several processes.

    Why the retry: two processes opening a *new* file at once race on switching it to WAL, and
    SQLite reports that as "database is locked" at once, without waiting on the busy timeout.
    Autocommit mode (``isolation_level=None``): callers group writes in explicit transactions."""
    import sqlite3
    import time

    conn = sqlite3.connect(str(path), timeout=timeout, check_same_thread=False, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={synchronous}")
            conn.execute(schema)
            return conn
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                conn.close()
                raise
            time.sleep(0.05)


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (one owned by another user counts): the check behind
    every stale-lock and stale-writer test, so that they agree on what "gone" means."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True
