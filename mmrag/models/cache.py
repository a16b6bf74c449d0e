"""The response cache: SQLite in WAL mode plus an append-only JSONL audit log.

Why it exists: a re-run of a finished evaluation — into a new output directory, after a crash, with
a different judge — must not pay for the model again.  Keys are content hashes, so the cache is
shared by every run on the machine (``mmrag_home()/cache/responses.sqlite``) and survives moving
datasets: a key is the sha256 of

* the model fingerprint (backend, model id, revision, server),
* the canonical prompt (:meth:`Prompt.canonical`: messages with images as content hashes, never paths),
* the generation settings (every field of :class:`GenerationSettings`, ``extra`` gen kwargs included
  when there are any),
* and, for models that answer from more than the messages (the baselines read ``prompt.choices``
  and ``prompt.contexts``), whatever their ``cache_key_extra(prompt)`` returns.

Only deterministic (greedy) requests are cached and errors are never stored; that policy lives in
:class:`~mmrag.models.cached.CachedVLM`, this class only stores what it is given.  Durability:
``synchronous=FULL`` makes each committed batch reach the disk before ``put_many`` returns, and
several processes may share the file (WAL readers never block the writer; writers wait on a busy
timeout).  The audit log records every write (time, key, fingerprint, prompt id, answer length) and
is fsynced per batch; it is for humans and forensics, the SQLite file is the source of truth.

Damage: a cache file that is not SQLite, has damaged pages, or sits where a folder
should be is one :class:`~mmrag.errors.InputError` naming the file and the way out (``--no-cache``
or delete it); a single row that does not parse is a miss (the model is asked again and the row
replaced), never a traceback mid-run.  Fingerprints and audit lines pass through
:func:`mmrag.redact.redact_text` before they are written.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mmrag.errors import InputError
from mmrag.redact import redact_text
from mmrag.schema import Prompt, Response, canonical_json
from mmrag.util import as_input_error, disk_full, mmrag_home, open_sqlite_wal

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL
)
"""
KEY_VERSION = 1
_CHUNK = 500  # keys per SELECT ... IN (...) (SQLite's default variable limit is 999 on old builds)


def _rollback(conn: sqlite3.Connection) -> None:
    try:
        conn.execute("ROLLBACK")
    except sqlite3.Error:
        pass


def cache_key(fingerprint: str, prompt: Prompt, settings: Any, extra: Any = None) -> str:
    """sha256 of (key version, model fingerprint, canonical prompt, settings, extra)."""
    s = settings.model_dump(mode="json") if hasattr(settings, "model_dump") else settings
    if isinstance(s, dict) and not s.get("extra"):
        s = {k: v for k, v in s.items() if k != "extra"}  # keys written before gen kwargs existed stay valid
    doc = {"v": KEY_VERSION, "model": fingerprint, "prompt": prompt.canonical(), "settings": s}
    if extra is not None:
        doc["extra"] = extra
    return hashlib.sha256(canonical_json(doc).encode("utf-8")).hexdigest()


class ResponseCache:
    """A content-addressed store of :class:`Response` objects; safe across threads and processes."""

    def __init__(self, path: str | Path, audit_path: str | Path | None = None) -> None:
        self.path = Path(path)
        self.audit_path = Path(audit_path) if audit_path else self.path.with_name(self.path.stem + ".audit.jsonl")
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.writes = 0
        self.unreadable = 0  # rows that did not parse, served as misses
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.is_dir():
                raise IsADirectoryError(21, "is a directory")
            self._conn = open_sqlite_wal(self.path, _SCHEMA, synchronous="FULL")
        except (sqlite3.DatabaseError, OSError) as exc:
            raise self._damaged(exc) from None

    def _damaged(self, exc: BaseException) -> InputError:
        why = getattr(exc, "strerror", None) or str(exc)
        return InputError(
            f"the response cache cannot be used ({why}); run with --no-cache, or delete "
            f"{self.path} (and its -wal/-shm files) to start an empty cache",
            path=self.path,
        )

    @classmethod
    def default(cls) -> ResponseCache:
        """The cache shared by all runs: ``mmrag_home()/cache/responses.sqlite``."""
        return cls(mmrag_home() / "cache" / "responses.sqlite")

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"

    # -- reads -----------------------------------------------------------------------------------
    def get_many(self, keys: Iterable[str]) -> dict[str, Response]:
        """The stored responses among ``keys`` (marked ``cached=True``); absent keys are left out."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, Response] = {}
        with self._lock:
            for i in range(0, len(wanted), _CHUNK):
                chunk = wanted[i : i + _CHUNK]
                try:
                    rows = self._conn.execute(
                        f"SELECT key, response FROM responses WHERE key IN ({','.join('?' * len(chunk))})", chunk
                    ).fetchall()
                except sqlite3.DatabaseError as exc:
                    raise self._damaged(exc) from None
                for k, blob in rows:
                    try:
                        r = Response.model_validate_json(blob)
                    except (ValidationError, ValueError, TypeError):
                        self.unreadable += 1  # a damaged row is a miss: asked again, then replaced
                        continue
                    r.cached = True
                    found[k] = r
            self.hits += len(found)
            self.misses += len(wanted) - len(found)
        return found

    def get(self, key: str) -> Response | None:
        return self.get_many([key]).get(key)

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return self._conn.execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone() is not None

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    # -- writes ----------------------------------------------------------------------------------
    def put_many(self, items: Sequence[tuple[str, str, Response]]) -> int:
        """Store ``(key, fingerprint, response)`` triples in one durable transaction; responses with
        an error are refused (returns how many were written)."""
        rows = []
        audit = []
        now = time.time()
        redacted: dict[str, str] = {}  # fingerprint -> its redacted form, computed once per batch
        for key, fp, resp in items:
            if resp.error is not None:
                continue
            stored = resp.model_copy(update={"cached": False})
            fp = redacted[fp] if fp in redacted else redacted.setdefault(fp, redact_text(fp))
            rows.append((key, fp, stored.model_dump_json(), now))
            audit.append(
                json.dumps(
                    {
                        "ts": round(now, 3),
                        "op": "put",
                        "key": key,
                        "fingerprint": fp,
                        "prompt_id": resp.prompt_id,
                        "chars": len(resp.text),
                    },
                    ensure_ascii=False,
                )
            )
        if not rows:
            return 0
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO responses (key, fingerprint, response, created) VALUES (?, ?, ?, ?)", rows
                )
                self._conn.execute("COMMIT")
            except BaseException as exc:
                _rollback(self._conn)  # a failed ROLLBACK must not hide why the write failed
                if isinstance(exc, sqlite3.OperationalError) and "full" in str(exc).lower():
                    raise disk_full(self.path) from None
                if isinstance(exc, sqlite3.DatabaseError):
                    raise self._damaged(exc) from None
                raise
            self.writes += len(rows)
            try:
                with open(self.audit_path, "a", encoding="utf-8") as fh:
                    fh.write("\n".join(audit) + "\n")
                    fh.flush()
                    os.fsync(fh.fileno())
            except OSError as exc:
                raise as_input_error(exc, self.audit_path) from None
        return len(rows)

    def put(self, key: str, fingerprint: str, response: Response) -> bool:
        return self.put_many([(key, fingerprint, response)]) == 1

    # -- housekeeping ----------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "entries": len(self),
            "hits": self.hits,
            "misses": self.misses,
            "writes": self.writes,
        }

    def clear(self, fingerprint: str | None = None) -> int:
        """Delete every entry (or those of one model fingerprint); returns the count removed."""
        with self._lock:
            if fingerprint is None:
                cur = self._conn.execute("DELETE FROM responses")
            else:
                cur = self._conn.execute("DELETE FROM responses WHERE fingerprint = ?", (fingerprint,))
            return cur.rowcount

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
