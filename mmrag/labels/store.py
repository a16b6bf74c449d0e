"""Label files: ``RUN_DIR/labels/LABELLER.jsonl``, one line per label as it is given.

A line is ``{"key": record key, "label": "correct|deflection|hallucination", "labeller": NAME,
"at": ISO time}``.  The file is append-only and every line is flushed and fsynced before the page
hears back, so a crash or a closed laptop loses at most the label being given.  Two more values
keep the file append-only while the page allows undo and skip: ``"label": "skip"`` marks an item
passed over (it is not a label and counts nowhere), ``"label": null`` retracts the key's label.
The last line of a key wins.  A last line cut short by a kill is ignored (with a warning); any other
bad line is an :class:`~mmrag.errors.InputError` naming file and line, because silently dropping a
label would bias every estimate built on them.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import threading
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from mmrag.errors import InputError
from mmrag.runs.store import RunLock
from mmrag.util import iter_jsonl

#: what a person can say a reply is (the judge's fourth outcome, unparseable, is not a truth)
HUMAN_LABELS: tuple[str, ...] = ("correct", "deflection", "hallucination")
SKIP = "skip"
LABELS_DIR = "labels"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def labels_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / LABELS_DIR


def check_labeller(name: str, field: str = "--labeller") -> str:
    """A labeller name is a file name: letters, digits, ``_ . -``, at most 64 characters."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise InputError(
            f"labeller name {name!r} must be 1-64 letters, digits, '_', '.' or '-' (it names the label file)",
            field=field,
        )
    return name


def default_labeller() -> str:
    """The login name when it is a valid labeller name, else ``labeller``."""
    import getpass

    try:
        name = re.sub(r"[^A-Za-z0-9_.-]", "", getpass.getuser())[:64]
    except Exception:  # noqa: BLE001 - no login name (containers): fall back
        name = ""
    return name if name and _NAME.match(name) else "labeller"


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def label_path(run_dir: str | Path, labeller: str) -> Path:
    return labels_dir(run_dir) / f"{check_labeller(labeller)}.jsonl"


class LabellerLock(RunLock):
    """An exclusive, non-blocking ``flock`` on ``labels/NAME.lock`` (the run lock's mechanism):
    one ``mmrag label`` process per labeller and run.  Why: two pages for one labeller would each
    replay the file at start and then interleave undo and skip lines the other never saw.  The
    kernel drops the lock when the process ends, Ctrl-C or ``kill -9``, so no stale lock is left."""

    def __init__(self, run_dir: str | Path, labeller: str) -> None:
        super().__init__(Path(run_dir))
        self.path = labels_dir(run_dir) / f"{check_labeller(labeller)}.lock"
        self.labeller = labeller

    def busy(self, who: str) -> InputError:
        return InputError(
            f"labeller {self.labeller!r} is already labelling this run ({who}); close that page's "
            "mmrag label first, or label as another --labeller",
            path=self.path.parent.parent,
            field="--labeller",
        )

    def acquire(self) -> LabellerLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        super().acquire()
        return self

    def __enter__(self) -> LabellerLock:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


class LabelFile:
    """Appends one labeller's lines, each flushed and fsynced at once (thread-safe)."""

    def __init__(self, run_dir: str | Path, labeller: str) -> None:
        self.labeller = check_labeller(labeller)
        self.path = label_path(run_dir, labeller)
        self._lock = threading.Lock()
        self._drop_partial_tail()

    def _drop_partial_tail(self) -> None:
        """A line cut short by a kill would become a bad line in the middle once we append after
        it: cut it off first (it held no finished label)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
            warnings.warn(f"{self.path}: dropping a truncated last line before appending", stacklevel=3)
            with self.path.open("rb+") as fh:
                fh.truncate(keep)

    def append(self, key: str, label: str | None, at: str | None = None) -> dict[str, Any]:
        if label is not None and label not in (*HUMAN_LABELS, SKIP):
            raise InputError(f"unknown label {label!r}; one of {', '.join(HUMAN_LABELS)}, skip or null", field="label")
        line = {"key": str(key), "label": label, "labeller": self.labeller, "at": at or now_iso()}
        data = (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
        return line

    def current(self) -> dict[str, str | None]:
        """``{key: label}`` after applying every line in order (skip included, retractions removed)."""
        if not self.path.exists():
            return {}
        return {k: v for k, v in _replay(read_lines(self.path)).items() if v is not None}


def _iso_time(value: Any) -> bool:
    """An ISO 8601 date or time string (``Z`` accepted); labels are ordered and audited by it."""
    if not isinstance(value, str):
        return False
    try:
        _dt.datetime.fromisoformat(value.strip())
    except ValueError:
        return False
    return True


def _parse_line(obj: dict[str, Any], path: Path, line: int, labeller: str | None = None) -> dict[str, Any]:
    if not isinstance(obj.get("key"), str) or not obj["key"]:
        raise InputError("a label line needs a non-empty string 'key'", path=path, line=line, field="key")
    if "label" not in obj:
        raise InputError("a label line needs 'label'", path=path, line=line, field="label")
    label = obj["label"]
    if label is not None and label not in (*HUMAN_LABELS, SKIP):
        raise InputError(
            f"unknown label {label!r}; one of {', '.join(HUMAN_LABELS)} (or skip, null)",
            path=path,
            line=line,
            field="label",
        )
    who = obj.get("labeller", labeller)
    if who is None:
        raise InputError(
            "no labeller: give 'labeller' on the line or --labeller", path=path, line=line, field="labeller"
        )
    try:
        check_labeller(str(who), field="labeller")
    except InputError as exc:
        raise InputError(exc.message, path=path, line=line, field="labeller") from None
    at = obj.get("at")
    if at is not None and not _iso_time(at):
        raise InputError(
            f"'at' must be an ISO 8601 time (e.g. 2026-01-31T12:00:00+00:00), got {str(at)[:40]!r}",
            path=path,
            line=line,
            field="at",
        )
    return {"key": obj["key"], "label": label, "labeller": str(who), "at": at, "_line": line}


def read_lines(path: str | Path, *, labeller: str | None = None, tolerate_tail: bool = True) -> list[dict[str, Any]]:
    """Every valid line of a label file, in order (see the module docstring for bad lines)."""
    path = Path(path)

    def cut_short(exc: InputError) -> None:
        warnings.warn(f"{path}:{exc.line}: ignoring a truncated last line", stacklevel=3)

    return [
        _parse_line(obj, path, line, labeller)
        for line, obj in iter_jsonl(path, on_truncated_tail=cut_short if tolerate_tail else None)
    ]


def _replay(lines: Iterable[dict[str, Any]]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for ln in lines:
        out.pop(ln["key"], None)  # re-insert: order follows the kept line
        out[ln["key"]] = ln["label"]
    return out


def load(run_dir: str | Path, *, include_skips: bool = False) -> pd.DataFrame:
    """Every labeller's current labels of a run: columns ``key, label, labeller, at``.

    One row per (labeller, key): the key's last line.  Retracted keys are gone; skipped keys are
    dropped unless ``include_skips``.  Empty (with the columns) when the run has no labels."""
    rows: list[dict[str, Any]] = []
    d = labels_dir(run_dir)
    for path in sorted(d.glob("*.jsonl")) if d.is_dir() else []:
        name = path.stem
        if not _NAME.match(name):
            continue
        last: dict[str, dict[str, Any]] = {}
        for ln in read_lines(path, labeller=name):
            if ln["labeller"] != name:
                raise InputError(f"line of labeller {ln['labeller']!r} in {name}'s file", path=path, field="labeller")
            last.pop(ln["key"], None)
            last[ln["key"]] = ln
        rows += [ln for ln in last.values() if ln["label"] is not None and (include_skips or ln["label"] != SKIP)]
    return pd.DataFrame(rows, columns=["key", "label", "labeller", "at"])


def import_labels(
    run_dir: str | Path, path: str | Path, known_keys: set[str], *, labeller: str | None = None
) -> dict[str, int]:
    """Append the lines of ``path`` (the label line format) to each labeller's file.

    Every line is checked first (a key the run does not hold, an unknown label, a missing labeller:
    an error naming the line) and nothing is written unless all are good.  ``labeller`` fills lines
    without one.  Returns ``{labeller: lines imported}``."""
    path = Path(path)
    lines = read_lines(path, labeller=labeller, tolerate_tail=False)
    if not lines:
        raise InputError("no label lines in this file", path=path)
    for ln in lines:
        if ln["key"] not in known_keys:
            raise InputError(f"key {ln['key']!r} is not a record of this run", path=path, line=ln["_line"], field="key")
    counts: dict[str, int] = {}
    files: dict[str, LabelFile] = {}
    locks = [LabellerLock(run_dir, who) for who in sorted({ln["labeller"] for ln in lines})]
    try:
        for lock in locks:  # not while that labeller's page is open
            lock.acquire()
        for ln in lines:
            f = files.setdefault(ln["labeller"], LabelFile(run_dir, ln["labeller"]))
            f.append(ln["key"], ln["label"], at=ln["at"])
            counts[ln["labeller"]] = counts.get(ln["labeller"], 0) + 1
    finally:
        for lock in locks:
            lock.release()
    return counts
