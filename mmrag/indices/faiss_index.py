"""A loaded FAISS index over a knowledge base: shards, row -> document id mapping, verification.

On disk an index is a folder: ``shard_000.faiss`` ... (FAISS's own format, an ``IndexIDMap2`` whose
int64 ids are global row numbers), ``doc_ids.parquet`` (row, doc_id, modality) and
``manifest.json``.  No pickle anywhere.  Several shards are searched one after the other and their
top-k lists merged, so a knowledge base too large for one file (or one GPU) still answers as one
index.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import numpy as np

from mmrag.errors import IndexMismatchError, InputError
from mmrag.indices.gpu import set_threads, to_gpu, want_gpu
from mmrag.indices.manifest import FORMAT_VERSION, IndexManifest
from mmrag.schema import sha256_file

Verify = Literal["checksum", "size", "none"]


def _apply_search_params(index: Any, params: dict[str, Any]) -> None:
    import faiss

    ps = faiss.ParameterSpace()
    for name, value in params.items():
        try:
            ps.set_index_parameter(index, name, value)
        except RuntimeError as exc:
            raise InputError(
                f"search parameter '{name}' does not apply to this index ({exc})".strip(), field=f"search_params.{name}"
            ) from None


class Index:
    """Shards + id mapping.  ``search`` takes L2-normalised float32 query vectors."""

    def __init__(
        self,
        path: Path,
        manifest: IndexManifest,
        shards: list[Any],
        doc_ids: np.ndarray,
        modalities: np.ndarray,
        on_gpu: bool = False,
    ) -> None:
        self.path, self.manifest, self.shards = path, manifest, shards
        self.doc_ids, self.modalities, self.on_gpu = doc_ids, modalities, on_gpu
        self._row_of: dict[str, int] | None = None

    kind = property(lambda self: self.manifest.kind)
    dim = property(lambda self: self.manifest.dim)
    count = property(lambda self: self.manifest.count)
    fingerprint = property(lambda self: self.manifest.fingerprint)

    def __len__(self) -> int:
        return self.manifest.count

    def set_search_params(self, **params: Any) -> None:
        """E.g. ``efSearch=256`` (HNSW) or ``nprobe=64`` (IVF); changes the fingerprint too."""
        for shard in self.shards:
            _apply_search_params(shard, params)
        self.manifest.search_params.update(params)

    def search(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, rows), each (n, k); rows are -1 where the index has fewer than k vectors."""
        q = np.ascontiguousarray(vectors, dtype=np.float32)
        if q.ndim != 2 or q.shape[1] != self.dim:
            raise IndexMismatchError(
                f"query vectors have shape {q.shape}, index dimension is {self.dim}", path=self.path
            )
        with _one_thread_for(len(q)):
            if len(self.shards) == 1:
                return self.shards[0].search(q, k)
            parts = [s.search(q, k) for s in self.shards]
        scores = np.concatenate([p[0] for p in parts], axis=1)
        rows = np.concatenate([p[1] for p in parts], axis=1)
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(scores, order, 1), np.take_along_axis(rows, order, 1)

    def row_of(self, doc_id: str) -> int | None:
        if self._row_of is None:
            self._row_of = {d: i for i, d in enumerate(self.doc_ids.tolist())}
        return self._row_of.get(doc_id)

    def __contains__(self, doc_id: str) -> bool:
        return self.row_of(doc_id) is not None


@contextlib.contextmanager
def _one_thread_for(n_queries: int) -> Iterator[None]:
    """Search a single query on this thread alone.  FAISS parallelises over queries, so one query
    gains nothing from OpenMP, while waking the thread team costs more than the search itself (a
    negative miner searching 810 queries one by one over 1,500 vectors: 0.85 s with two threads,
    0.06 s with one).  The OpenMP thread count is per calling thread, so other threads' searches
    keep theirs."""
    if n_queries != 1:
        yield
        return
    import faiss

    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def read_manifest(path: str | Path) -> IndexManifest:
    path = Path(path)
    mpath = path / "manifest.json"
    if not mpath.is_file():
        raise InputError("not an mmrag index: manifest.json is missing", path=path)
    try:
        m = IndexManifest.model_validate(json.loads(mpath.read_text(encoding="utf-8")))
    except Exception as exc:
        raise InputError(f"unreadable index manifest ({type(exc).__name__}: {str(exc)[:200]})", path=mpath) from None
    if m.format_version != FORMAT_VERSION:
        raise IndexMismatchError(
            f"index format {m.format_version}, this mmrag reads {FORMAT_VERSION}; rebuild it", path=mpath
        )
    return m


def _check_file(path: Path, expected_bytes: int, expected_sha: str, verify: Verify) -> None:
    if not path.is_file():
        raise IndexMismatchError("index file is missing", path=path)
    size = path.stat().st_size
    if verify != "none" and size != expected_bytes:
        raise IndexMismatchError(
            f"index file is truncated or altered: {size} bytes, the manifest says {expected_bytes}; rebuild the index",
            path=path,
        )
    if verify == "checksum" and sha256_file(path) != expected_sha:
        raise IndexMismatchError(
            "index file is corrupt: its sha256 differs from the manifest; rebuild the index", path=path
        )


def load_index(
    path: str | Path,
    encoder: Any | None = None,
    *,
    kb_hash: str | None = None,
    verify: Verify = "checksum",
    device: str | None = "cpu",
    threads: int | None = None,
    search_params: dict[str, Any] | None = None,
    mmap: bool = False,
) -> Index:
    """Open an index folder, refusing any mismatch with an :class:`IndexMismatchError`.

    ``encoder``: when given, its dimension and fingerprint must equal the manifest's.  ``kb_hash``:
    when given (see :func:`kb_content_hash`), the knowledge base must be the one indexed.
    ``verify``: "checksum" (sha256 of every file, default), "size", or "none".  ``device``: "cpu",
    "auto" or "gpu" (sharded fp16 over all GPUs).  ``mmap``: memory-map shards FAISS can map.
    """
    import faiss
    import pyarrow.parquet as pq

    path = Path(path)
    m = read_manifest(path)
    if encoder is not None:
        if int(encoder.dim) != m.dim:
            raise IndexMismatchError(
                f"encoder dimension {encoder.dim} differs from the index dimension {m.dim} "
                f"(index built with {m.encoder_fingerprint})",
                path=path,
                field="encoder",
            )
        if encoder.fingerprint != m.encoder_fingerprint:
            raise IndexMismatchError(
                f"index was built with encoder {m.encoder_fingerprint}, not {encoder.fingerprint}",
                path=path,
                field="encoder",
            )
    if kb_hash is not None and kb_hash != m.kb_content_hash:
        raise IndexMismatchError(
            "the knowledge base changed since this index was built "
            f"(content hash {kb_hash[:12]} != {m.kb_content_hash[:12]}); rebuild it",
            path=path,
        )
    set_threads(threads)
    _check_file(path / m.doc_ids.file, m.doc_ids.bytes, m.doc_ids.sha256, verify)
    try:
        with pq.ParquetFile(path / m.doc_ids.file) as fh:  # pq.read_table would import pyarrow.dataset
            table = fh.read(columns=["row", "doc_id", "modality"])
    except Exception as exc:
        raise IndexMismatchError(f"unreadable document-id table ({exc})", path=path / m.doc_ids.file) from None
    if table.num_rows != m.count or table.column("row").to_numpy().tolist() != list(range(m.count)):
        raise IndexMismatchError(
            f"document-id table has {table.num_rows} rows in a wrong order or count, the manifest says {m.count}",
            path=path / m.doc_ids.file,
        )
    doc_ids = table.column("doc_id").to_numpy(zero_copy_only=False)
    modalities = table.column("modality").to_numpy(zero_copy_only=False)
    shards = []
    gpu = want_gpu(device)
    on_gpu = False
    for info in m.shards:
        fpath = path / info.file
        _check_file(fpath, info.bytes, info.sha256, verify)
        flags = faiss.IO_FLAG_MMAP if mmap else 0
        try:
            idx = faiss.read_index(str(fpath), flags)
        except Exception as exc:
            raise IndexMismatchError(
                f"FAISS cannot read this index file ({str(exc).splitlines()[0][:160]})", path=fpath
            ) from None
        if idx.d != m.dim or idx.ntotal != info.count:
            raise IndexMismatchError(
                f"index file holds {idx.ntotal} vectors of dimension {idx.d}, the manifest "
                f"says {info.count} of {m.dim}",
                path=fpath,
            )
        _apply_search_params(idx, {**m.search_params, **(search_params or {})})
        if gpu:
            idx, on_gpu = to_gpu(idx)
        shards.append(idx)
    if search_params:
        m.search_params.update(search_params)
    return Index(path, m, shards, doc_ids, modalities, on_gpu=on_gpu)


def describe(index: Index) -> dict[str, Any]:
    """What ``mmrag index info`` prints."""
    m = index.manifest
    counts: dict[str, int] = {}
    for mod in index.modalities.tolist():
        counts[mod] = counts.get(mod, 0) + 1
    return {
        "path": str(index.path),
        "kind": m.kind,
        "count": m.count,
        "dim": m.dim,
        "factory": m.factory,
        "search_params": m.search_params,
        "encoder": m.encoder_fingerprint,
        "kb_content_hash": m.kb_content_hash,
        "shards": [(s.file, s.count, s.bytes) for s in m.shards],
        "modalities": counts,
        "mmrag_version": m.mmrag_version,
        "created_at": m.created_at,
        "fingerprint": m.fingerprint,
        "on_gpu": index.on_gpu,
    }
