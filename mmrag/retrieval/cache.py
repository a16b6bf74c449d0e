"""A persistent retrieval cache (SQLite, WAL) in front of any retriever.

Key = sha256(retriever fingerprint, canonical query, k): the fingerprint changes whenever the
index, its encoder, search parameters or knowledge base change, so a stale entry can never be
served.  Query images are keyed by content hash (never path).  Misses are retrieved in one batch
and committed in one transaction before being returned.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path

from mmrag.retrieval.base import Hit, Query, Retriever
from mmrag.schema import canonical_json, sha256_bytes
from mmrag.util import open_sqlite_wal


def query_key(fingerprint: str, query: Query, k: int) -> str:
    q = {"text": query.text, "images": [im.content_hash() for im in query.images]}
    return sha256_bytes(canonical_json([fingerprint, q, int(k)]).encode())


class CachedRetriever:
    def __init__(self, retriever: Retriever, path: str | Path) -> None:
        self.retriever = retriever
        self.fingerprint = retriever.fingerprint
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = open_sqlite_wal(
            self.path,
            "CREATE TABLE IF NOT EXISTS hits (key TEXT PRIMARY KEY, "
            "retriever TEXT NOT NULL, k INTEGER NOT NULL, hits TEXT NOT NULL)",
            synchronous="NORMAL",
        )
        self.hits = 0
        self.misses = 0

    def retrieve(self, queries: Sequence[Query], k: int) -> list[list[Hit]]:
        keys = [query_key(self.fingerprint, q, k) for q in queries]
        found: dict[str, list[Hit]] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                part = keys[i : i + 500]
                rows = self._db.execute(
                    f"SELECT key, hits FROM hits WHERE key IN ({','.join('?' * len(part))})", part
                ).fetchall()
                for key, blob in rows:
                    found[key] = [Hit(**h) for h in json.loads(blob)]
        miss_idx = [i for i, key in enumerate(keys) if key not in found]
        self.hits += len(keys) - len(miss_idx)
        self.misses += len(miss_idx)
        if miss_idx:
            fresh = self.retriever.retrieve([queries[i] for i in miss_idx], k)
            rows = [
                (keys[i], self.fingerprint, int(k), json.dumps([h.model_dump(mode="json") for h in hl]))
                for i, hl in zip(miss_idx, fresh)
            ]
            with self._lock:
                self._db.execute("BEGIN IMMEDIATE")  # autocommit connection: one transaction per batch
                try:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO hits (key, retriever, k, hits) VALUES (?, ?, ?, ?)", rows
                    )
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
            for i, hl in zip(miss_idx, fresh):
                found[keys[i]] = hl
        return [found[key] for key in keys]

    def close(self) -> None:
        with self._lock:
            self._db.close()
