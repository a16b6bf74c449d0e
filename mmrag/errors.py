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

    def __init__(
        self, message: str, *, path: str | Path | None = None, line: int | None = None, field: str | None = None
    ) -> None:
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


class DependencyError(MmragError):
    """A service the command depends on failed (a judge model, a gating model, a Ray cluster).

    Why a type of its own: a failing dependency must never become a measurement.  The command stops
    with one line naming the dependency and the error class, and exits 1 (like a run over its
    error budget); what was written before stays intact, and running the command again redoes
    the failed work."""

    exit_code = 1


class JudgeError(DependencyError):
    """The judge could not grade (its model failed, or answered with the wrong number of replies)."""


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
