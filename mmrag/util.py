"""Small I/O helpers shared by every stage: MMRAG_HOME, atomic writes, line-numbered JSONL."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterator, TypeVar

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
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")


def write_jsonl_atomic(path: str | Path, rows: list[dict[str, Any]]) -> None:
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows))


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)``; a malformed line raises InputError naming file and line."""
    path = Path(path)
    if not path.exists():
        raise InputError("file not found", path=path)
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"invalid JSON ({exc.msg})", path=path, line=lineno) from None
            if not isinstance(obj, dict):
                raise InputError("expected a JSON object", path=path, line=lineno)
            yield lineno, obj


def parse_record(model: type[M], obj: dict[str, Any], *, path: str | Path | None = None,
                 line: int | None = None) -> M:
    """Validate one record, turning a pydantic error into an InputError naming file, line, field."""
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise InputError(pydantic_message(exc), path=path, line=line, field=pydantic_field(exc)) from None


def read_jsonl_models(path: str | Path, model: type[M]) -> list[M]:
    return [parse_record(model, obj, path=path, line=ln) for ln, obj in iter_jsonl(path)]


def read_yaml_mapping(path: str | Path, what: str = "file") -> dict[str, Any]:
    """A YAML file that must hold a mapping; a missing file, a syntax error (with its line) or
    another top-level type is one InputError naming the file."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise InputError(f"{what} not found", path=path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(f"invalid YAML ({getattr(exc, 'problem', None) or exc})", path=path,
                         line=mark.line + 1 if mark is not None else None) from None
    if not isinstance(data, dict):
        raise InputError(f"a {what} must hold a mapping", path=path)
    return data


def load_yaml_model(path: str | Path, model: type[M], what: str = "config file") -> M:
    """Read a YAML mapping and validate it as ``model``; errors name the file and the field."""
    data = read_yaml_mapping(path, what)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InputError(pydantic_message(exc), path=path, field=pydantic_field(exc)) from None


def read_json_mapping(path: str | Path, expected: str = "a JSON object") -> dict[str, Any]:
    """A whole-file JSON object (E-VQA-style knowledge bases); errors name the file and line."""
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON ({exc.msg})", path=path, line=exc.lineno) from None
    if not isinstance(data, dict):
        raise InputError(f"expected {expected}", path=path)
    return data


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
