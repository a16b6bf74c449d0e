"""Read Hugging Face-style tables (ViQuAE, its KILT KB, MRAG-Bench) without decoding images.

The hub datasets reach users in three shapes; all are accepted, row by row, as plain dicts:

* a folder written by ``datasets.save_to_disk`` (a ``Dataset`` or a ``DatasetDict``; pick a split
  with ``split=`` when there are several);
* a parquet file, or a folder holding parquet files (the hub's ``data/*.parquet`` layout);
* a JSONL file, plain or gzip-compressed (``.jsonl.gz``: Wiki6M and ViQuAE's KB parts ship so), or
  a folder of such files (ViQuAE's three ``*.jsonl.gz`` KB parts).

Rows come out in Arrow form, so an ``Image`` column stays the ``{"bytes", "path"}`` struct and is
only decoded when the builder checks and stores it.  Each row carries its file and 1-based row
number so a bad row is reported as ``file:row``.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mmrag.errors import InputError
from mmrag.util import iter_jsonl, parse_json_line, read_lines

Row = tuple[Path, int, dict[str, Any]]


def _is_saved_dataset(path: Path) -> bool:
    return path.is_dir() and any((path / n).exists() for n in ("dataset_dict.json", "state.json", "dataset_info.json"))


def iter_table(path: Path, *, split: str | None = None, batch_size: int = 256) -> Iterator[Row]:
    """Yield ``(file, row_number, row)`` for every row of the table at ``path``."""
    path = Path(path)
    if not path.exists():
        raise InputError("file or folder not found", path=path)
    if _is_saved_dataset(path):
        yield from _iter_saved(path, split, batch_size)
    elif path.is_file() and path.suffix == ".parquet":
        yield from _iter_parquet(path, batch_size)
    elif path.is_dir() and not any(path.rglob("*.parquet")) and _jsonl_files(path):
        for f in _jsonl_files(path):
            for ln, obj in iter_jsonl_any(f):
                yield f, ln, obj
    elif path.is_dir():
        files = sorted(path.rglob("*.parquet"))
        if split is not None:
            files = [f for f in files if f.name.startswith(split) or f.parent.name == split] or files
        if not files:
            raise InputError(
                "folder holds neither a saved Hugging Face dataset, parquet nor JSONL(.gz) files", path=path
            )
        for f in files:
            yield from _iter_parquet(f, batch_size)
    elif path.suffix in (".jsonl", ".json", ".gz"):
        for ln, obj in iter_jsonl_any(path):
            yield path, ln, obj
    else:
        raise InputError("expected a saved Hugging Face dataset folder, parquet, or JSONL(.gz)", path=path)


def _jsonl_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith((".jsonl", ".jsonl.gz")))


def iter_jsonl_any(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line, object)`` of a JSONL file; ``*.gz`` is decompressed while streaming (the KBs are
    GBs).  A ``.gz`` that is not gzip, or is truncated, is one InputError naming the file."""
    path = Path(path)
    if not path.name.endswith(".gz"):
        yield from iter_jsonl(path)
        return
    if not path.is_file():
        raise InputError("file not found", path=path)
    lineno = 0
    try:
        with gzip.open(path, "rb") as fh:
            for lineno, raw in read_lines(fh, path):  # bounded: a gzip bomb is one line too long
                if raw.strip():
                    yield lineno, parse_json_line(raw, path, lineno)
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        what = "not a gzip file" if lineno == 0 else f"damaged gzip data after line {lineno}"
        raise InputError(f"{what} ({exc})", path=path) from None


def _iter_parquet(path: Path, batch_size: int) -> Iterator[Row]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"not a readable parquet file ({exc})", path=path) from None
    n = 0
    for batch in pf.iter_batches(batch_size=batch_size):
        for row in batch.to_pylist():
            n += 1
            yield path, n, row


def _iter_saved(path: Path, split: str | None, batch_size: int) -> Iterator[Row]:
    import datasets

    try:
        ds = datasets.load_from_disk(str(path))
    except Exception as exc:  # datasets raises several types for a damaged folder
        raise InputError(f"cannot load the saved dataset ({exc})", path=path) from None
    if isinstance(ds, datasets.DatasetDict):
        names = list(ds.keys())
        if split is None and len(names) == 1:
            split = names[0]
        if split not in ds:
            raise InputError(
                f"choose a split with --split; this dataset has: {', '.join(names)}", path=path, field="split"
            )
        ds = ds[split]
    n = 0
    for table in ds.with_format("arrow").iter(batch_size=batch_size):
        for row in table.to_pylist():
            n += 1
            yield path, n, row
