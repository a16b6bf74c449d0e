"""Typed access to one raw source record, with errors that say where the record is.

Source files are big and hand-edited copies circulate; a record with a missing or mistyped field
must stop the build with one line naming the file, the line (or row, or the record's key for
JSON dicts such as WebQA's guid-keyed file) and the field, never with a KeyError from deep inside
a builder.  :class:`Fields` wraps a record with its location and offers one accessor per shape.
"""

from __future__ import annotations

import builtins  # the methods str / int / list shadow the built-ins in the class body
from pathlib import Path
from typing import Any

from mmrag.errors import InputError

_MISSING = object()


class Fields:
    """A raw record plus where it came from: ``line`` for JSONL/CSV/parquet rows, ``key`` for
    records of a JSON dict."""

    def __init__(
        self, obj: Any, path: Path | str, *, line: int | None = None, key: str | None = None, prefix: str = ""
    ) -> None:
        self.path = path
        self.line = line
        self.key = key
        self.prefix = prefix
        if not isinstance(obj, dict):
            raise self.error("expected an object", field=prefix.rstrip(".") or None)
        self.obj = obj

    def error(self, message: str, *, field: str | None = None) -> InputError:
        where = f"record '{self.key}': " if self.key is not None else ""
        return InputError(where + message, path=self.path, line=self.line, field=field)

    def _f(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def raw(self, name: str, default: Any = _MISSING) -> Any:
        if name not in self.obj or self.obj[name] is None:
            if default is _MISSING:
                raise self.error("missing required field", field=self._f(name))
            return default
        return self.obj[name]

    def str(self, name: str, *, default: Any = _MISSING, allow_empty: bool = False) -> Any:
        v = self.raw(name, default)
        if v is default and default is not _MISSING:
            return v
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise self.error(f"expected a string, got {type(v).__name__}", field=self._f(name))
        s = str(v).strip()
        if not s and not allow_empty:
            if default is not _MISSING:
                return default
            raise self.error("must not be empty", field=self._f(name))
        return s

    def int(self, name: builtins.str, *, default: Any = _MISSING) -> Any:
        v = self.raw(name, default)
        if v is default and default is not _MISSING:
            return v
        try:
            if isinstance(v, bool):
                raise ValueError
            return int(str(v).strip())
        except ValueError:
            raise self.error(f"expected an integer, got {v!r}", field=self._f(name)) from None

    def list(self, name: builtins.str, *, default: Any = _MISSING, nonempty: bool = False) -> Any:
        v = self.raw(name, default)
        if v is default and default is not _MISSING:
            return v
        if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):
            v = v.tolist()  # numpy arrays from parquet
        if not isinstance(v, (list, tuple)):
            raise self.error(f"expected a list, got {type(v).__name__}", field=self._f(name))
        if nonempty and not v:
            raise self.error("must be a non-empty list", field=self._f(name))
        return list(v)

    def str_list(self, name: builtins.str, *, default: Any = _MISSING, nonempty: bool = False) -> Any:
        items = self.list(name, default=default, nonempty=nonempty)
        if items is default and default is not _MISSING:
            return items
        out = []
        for i, item in enumerate(items):
            if isinstance(item, bool) or not isinstance(item, (str, int, float)):
                raise self.error(f"expected a string, got {type(item).__name__}", field=f"{self._f(name)}[{i}]")
            out.append(str(item).strip())
        if nonempty and not any(out):
            raise self.error("must hold at least one non-empty string", field=self._f(name))
        return out

    def sub(self, name: builtins.str, *, index: builtins.int | None = None, value: Any = _MISSING) -> Fields:
        """A nested object (``output``, a quote, a fact), keeping the location and a dotted prefix."""
        v = self.raw(name) if value is _MISSING else value
        label = self._f(name) + (f"[{index}]" if index is not None else "")
        return Fields(v, self.path, line=self.line, key=self.key, prefix=label + ".")


def dedupe(items: list[str], *, exclude: tuple[str, ...] = ()) -> list[str]:
    """Order-preserving de-duplication of non-empty strings, dropping ``exclude``."""
    seen = set(exclude)
    out = []
    for s in items:
        s = s.strip()
        if s and s not in seen:
            seen.add(s)
            out.append(s)
    return out
