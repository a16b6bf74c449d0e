"""ResultStore: the append-only ``samples.jsonl`` of a run, safe against being killed at any moment.

Each batch of records is appended and fsynced before the run moves on.  A process killed with
SIGKILL can leave at most one partial trailing line; on open, the store cuts the file back to its
last complete line, so a resumed run neither loses a finished record nor duplicates one (resume
skips the keys already on disk).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Iterator

from mmrag.runs.records import RunRecord
from mmrag.util import iter_jsonl, parse_record


class ResultStore:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._repair_tail()
        self._keys: set[str] = {rec["key"] for _, rec in self._iter_raw()}

    def _repair_tail(self) -> None:
        """Drop a partial last line left by a kill mid-write (everything before it was fsynced)."""
        if not self.path.exists():
            return
        with open(self.path, "rb+") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            if size == 0:
                return
            fh.seek(size - 1)
            if fh.read(1) == b"\n":
                return
            # walk back to the previous newline
            pos = size - 1
            block = 4096
            while pos > 0:
                start = max(0, pos - block)
                fh.seek(start)
                chunk = fh.read(pos - start)
                idx = chunk.rfind(b"\n")
                if idx >= 0:
                    pos = start + idx + 1
                    break
                pos = start
            fh.truncate(pos)
            fh.flush()
            os.fsync(fh.fileno())

    def _iter_raw(self) -> Iterator[tuple[int, dict]]:
        if not self.path.exists():
            return
        yield from iter_jsonl(self.path)   # the one JSONL reader (one error policy)

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    @property
    def keys(self) -> set[str]:
        return set(self._keys)

    def append(self, records: Iterable[RunRecord]) -> int:
        """Append new records (keys already stored are skipped) and fsync; returns how many."""
        lines = []
        for rec in records:
            if rec.key in self._keys:
                continue
            lines.append(rec.model_dump_json() + "\n")
            self._keys.add(rec.key)
        if not lines:
            return 0
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write("".join(lines))
            fh.flush()
            os.fsync(fh.fileno())
        return len(lines)

    def records(self) -> list[RunRecord]:
        return [parse_record(RunRecord, obj, path=self.path, line=ln) for ln, obj in self._iter_raw()]

    def rewrite(self, records: list[RunRecord]) -> None:
        """Replace the whole file atomically (used by re-judging, never by a running run)."""
        from mmrag.util import atomic_write_text

        atomic_write_text(self.path, "".join(r.model_dump_json() + "\n" for r in records))
        self._keys = {r.key for r in records}
