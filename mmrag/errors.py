"""One exception type for bad input, so the CLI can print one clear line and exit non-zero.

Every loader, validator and config reader raises :class:`InputError` naming *where* the problem
is (file, line, field) rather than letting a KeyError or a pydantic trace escape to the user.
"""

from __future__ import annotations

from pathlib import Path


class MmragError(Exception):
    """Base class of every error mmrag raises on purpose."""

    exit_code = 2


class InputError(MmragError):
    """Bad user input: a file, a record, a config field or a flag."""

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        self.path = str(path) if path is not None else None
        self.line = line
        self.field = field
        self.message = message
        super().__init__(self.render())

    def render(self) -> str:
        where = []
        if self.path:
            where.append(self.path + (f":{self.line}" if self.line is not None else ""))
        elif self.line is not None:
            where.append(f"line {self.line}")
        if self.field:
            where.append(f"field '{self.field}'")
        prefix = ", ".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message


class IndexMismatchError(InputError):
    """An index on disk does not match what the caller expects (encoder, knowledge base, files)."""


def pydantic_field(exc) -> str:
    """The dotted location of the first error of a pydantic ValidationError."""
    try:
        err = exc.errors()[0]
        return ".".join(str(p) for p in err.get("loc", ())) or "?"
    except Exception:  # pragma: no cover - defensive
        return "?"


def pydantic_message(exc) -> str:
    try:
        return exc.errors()[0].get("msg", str(exc))
    except Exception:  # pragma: no cover
        return str(exc)
