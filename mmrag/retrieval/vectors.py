"""Mining-query vectors kept on disk (SQLite, WAL) beside the indices they search.

Why: the negatives of a benchmark are mined from one query per (sample, index kind), and
embedding those queries (MiniLM for the demo's text index) was most of the CPU a re-run spent
once every model reply came from the response cache: a warm ``mmrag demo`` embedded its 810 mining
queries again in every process, importing sentence-transformers and loading the model for it.
With the vectors on disk a re-run, a resume or a second scenario sweep over the same knowledge
base loads them instead; a resumed run also reads exactly the vectors the interrupted one used.

Key = sha256(encoder fingerprint, index kind, query text, query images' content hashes): the
fingerprint changes with the encoder, its weights or its precision, so a stale vector is never
served; images are keyed by content (never by path).  A vector of the wrong size is a miss.  The
cache is an accelerator only: when its file cannot be opened or written (a read-only cache
folder, a damaged file) mining goes on without it and computes every vector, as before.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mmrag.schema import canonical_json, sha256_file

_SCHEMA = "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vec BLOB NOT NULL)"
#: (path, size, mtime_ns) -> sha256 of the file: a query image is hashed once per process
_FILE_HASHES: dict[tuple[str, int, int], str] = {}


def image_hash(ref: Any) -> str:
    """The content hash of a query image, without writing it into the (shared) ImageRef."""
    if getattr(ref, "sha256", None):
        return str(ref.sha256)
    st = Path(ref.path).stat()
    key = (str(ref.path), st.st_size, st.st_mtime_ns)
    if key not in _FILE_HASHES:
        _FILE_HASHES[key] = sha256_file(ref.path)
    return _FILE_HASHES[key]


def vector_key(fingerprint: str, kind: str, query: Any) -> str:
    images = [image_hash(im) for im in query.images]
    return hashlib.sha256(canonical_json([fingerprint, kind, query.text, images]).encode("utf-8")).hexdigest()


class QueryVectorCache:
    """``get_many(keys, dim)`` / ``put_many(items)`` over one SQLite file; silent when unusable."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        try:
            from mmrag.util import open_sqlite_wal

            self._db = open_sqlite_wal(self.path, _SCHEMA, synchronous="NORMAL", timeout=10.0)
        except (sqlite3.Error, OSError):
            self._db = None

    def _disable(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            try:
                db.close()
            except sqlite3.Error:
                pass

    def get_many(self, keys: Sequence[str], dim: int) -> dict[str, np.ndarray]:
        """The stored vectors of ``keys`` that exist and have ``dim`` float32 values."""
        out: dict[str, np.ndarray] = {}
        keys = list(dict.fromkeys(keys))
        with self._lock:
            if self._db is None:
                return out
            try:
                for i in range(0, len(keys), 500):
                    part = keys[i : i + 500]
                    rows = self._db.execute(
                        f"SELECT key, vec FROM vectors WHERE key IN ({','.join('?' * len(part))})", part
                    ).fetchall()
                    for key, blob in rows:
                        if len(blob) == 4 * dim:
                            out[key] = np.frombuffer(blob, dtype=np.float32).copy()
            except sqlite3.Error:
                self._disable()
        return out

    def put_many(self, items: Sequence[tuple[str, np.ndarray]]) -> None:
        rows = [(k, np.ascontiguousarray(v, dtype=np.float32).tobytes()) for k, v in items]
        if not rows:
            return
        with self._lock:
            if self._db is None:
                return
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._db.executemany("INSERT OR REPLACE INTO vectors (key, vec) VALUES (?, ?)", rows)
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
            except sqlite3.Error:
                self._disable()

    def close(self) -> None:
        with self._lock:
            self._disable()
