"""Streaming storage for embeddings during an index build.

Embeddings are appended chunk by chunk to a raw float32 file (row-major, ``dim`` columns) and read
back in chunks or as sampled rows, so a build never holds the whole embedding matrix in memory.
Reads go through ``pread`` into fresh arrays rather than through a long-lived ``np.memmap``:
pages touched through a mapping count toward the process's resident memory until unmapped, which
would make the peak RSS of a 1 M-vector build include the whole file.  :meth:`memmap` gives a
read-only ``np.memmap`` view for callers that want one (exact evaluation, debugging).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from pathlib import Path

import numpy as np

from mmrag.errors import InputError
from mmrag.util import pid_alive

log = logging.getLogger("mmrag.indices")


def _size(folder: Path) -> int:
    total = 0
    for f in folder.rglob("*"):
        try:
            total += f.stat().st_size if f.is_file() else 0
        except OSError:
            pass
    return total


def clean_stale_spools(out: str | Path) -> tuple[int, int]:
    """Remove the temporary build folders (``.NAME.tmp-PID-*``) that killed builds of the index
    ``out`` left behind, and half-swapped ``.NAME.old-*`` folders; a folder whose PID still runs
    (a concurrent build) is kept.  Returns ``(folders removed, bytes freed)`` and logs them, so a
    killed build costs disk space only until the next build of the same target."""
    out = Path(out)
    removed, freed = 0, 0
    if not out.parent.is_dir():
        return 0, 0
    for cand in out.parent.glob(f".{out.name}.tmp-*"):
        pid = cand.name[len(f".{out.name}.tmp-") :].split("-", 1)[0]
        if not cand.is_dir() or (pid.isdigit() and pid_alive(int(pid))):
            continue
        freed += _size(cand)
        shutil.rmtree(cand, ignore_errors=True)
        removed += 1
    for cand in out.parent.glob(f".{out.name}.old-*"):
        if cand.is_dir() and out.is_dir():
            freed += _size(cand)
            shutil.rmtree(cand, ignore_errors=True)
            removed += 1
    if removed:
        log.warning(
            "removed %d stale build folder(s) of %s left by killed builds (%.1f MB freed)", removed, out, freed / 1e6
        )
    return removed, freed


class EmbeddingSpool:
    def __init__(self, path: Path, dim: int) -> None:
        self.path, self.dim = Path(path), int(dim)
        self._fh = open(self.path, "wb")
        self.count = 0
        self._id_hashes: list[np.ndarray] = []

    @staticmethod
    def _hash_ids(ids: list[str]) -> np.ndarray:
        return np.array(
            [int.from_bytes(hashlib.blake2b(i.encode(), digest_size=8).digest(), "little") for i in ids],
            dtype=np.uint64,
        )

    def append(self, ids: list[str], vectors: np.ndarray) -> None:
        v = np.ascontiguousarray(vectors, dtype=np.float32)
        if v.ndim != 2 or v.shape[1] != self.dim:
            raise InputError(
                f"encoder returned vectors of shape {v.shape}, expected (n, {self.dim}): "
                "dimension mismatch between the encoder's output and its declared dim",
                field="encoder",
            )
        if v.shape[0] != len(ids):
            raise InputError(f"encoder returned {v.shape[0]} vectors for {len(ids)} documents", field="encoder")
        if not np.isfinite(v).all():
            bad = ids[int(np.where(~np.isfinite(v).all(axis=1))[0][0])]
            raise InputError(f"encoder produced a non-finite vector for document '{bad}'", field="encoder")
        self._fh.write(v.data.cast("B"))  # no copy of the batch (v is C-contiguous float32)
        self._id_hashes.append(self._hash_ids(ids))
        self.count += v.shape[0]

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.flush()
            self._fh.close()

    def duplicate_rows(self) -> np.ndarray:
        """Rows whose document id (by 64-bit hash) appeared on an earlier row."""
        if not self._id_hashes:
            return np.zeros(0, dtype=np.int64)
        h = np.concatenate(self._id_hashes)
        _, first = np.unique(h, return_index=True)
        mask = np.ones(len(h), dtype=bool)
        mask[first] = False
        return np.where(mask)[0]

    def read(self, start: int, stop: int) -> np.ndarray:
        n = max(0, stop - start)
        return np.fromfile(self.path, dtype=np.float32, count=n * self.dim, offset=start * self.dim * 4).reshape(
            n, self.dim
        )

    def sample(self, rows: np.ndarray) -> np.ndarray:
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        width = self.dim * 4
        fd = os.open(self.path, os.O_RDONLY)
        try:
            for j, r in enumerate(np.sort(rows)):
                out[j] = np.frombuffer(os.pread(fd, width, int(r) * width), dtype=np.float32)
        finally:
            os.close(fd)
        return out

    def memmap(self) -> np.memmap:
        return np.memmap(self.path, dtype=np.float32, mode="r", shape=(self.count, self.dim))

    def remove(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)
