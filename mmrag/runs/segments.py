"""Append-only tables of Parquet segments, each committed by an atomic rename.

A run directory holds a few tables (``records/``, ``objects/``, ``verdicts/``), each a folder of
Parquet files ``seg-<first>-<last>.parquet``.  Why this shape:

- **Append per flush, never rewrite.**  A flush writes one new file; nothing already on disk is
  touched, so a kill can only hurt the file being written.
- **The rename is the commit marker.**  A segment is written as ``*.tmp``, fsynced, renamed to
  its final name and the folder fsynced.  A file under a final name is complete; a ``*.tmp`` is a
  torn write and is deleted on the next open.  Readers never see half a segment.
- **Compaction without a window of loss.**  Many small segments are merged into one file named
  by the range it covers (``seg-00000001-00000420.parquet``); it is committed the same way and only
  then are the covered files deleted.  A reader ignores any file whose range lies inside another
  file's, so a kill between the two steps is harmless.
- **Columnar and plain.**  pandas, pyarrow (``pyarrow.dataset``) and DuckDB
  (``SELECT * FROM 'RUN/records/*.parquet'``) read the folders directly.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

_NAME = re.compile(r"^seg-(\d{8})-(\d{8})\.parquet$")
COMPRESSION = "zstd"
#: rows per row group of a compacted segment (memory while compacting is bounded by one group)
ROW_GROUP = 1 << 17


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _range(p: Path) -> tuple[int, int] | None:
    m = _NAME.match(p.name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def live_segments(folder: Path) -> list[Path]:
    """Committed segments in order, leaving out any whose range another file covers."""
    if not folder.is_dir():
        return []
    found = sorted((r, p) for p in folder.iterdir() if (r := _range(p)) is not None)
    out: list[tuple[tuple[int, int], Path]] = []
    for r, p in found:
        if any(o[0] <= r[0] and r[1] <= o[1] and o != r for o, _ in found):
            continue
        out.append((r, p))
    return [p for _, p in out]


def next_seq(folder: Path) -> int:
    last = 0
    if folder.is_dir():
        for p in folder.iterdir():
            r = _range(p)
            if r is not None:
                last = max(last, r[1])
    return last + 1


def drop_torn(folder: Path) -> int:
    """Delete uncommitted ``*.tmp`` files (a kill mid-write); returns how many."""
    n = 0
    if folder.is_dir():
        for p in folder.glob("*.tmp"):
            p.unlink()
            n += 1
    return n


def commit_table(folder: Path, table: pa.Table, first: int, last: int | None = None) -> Path:
    """Write ``table`` as ``seg-first-last.parquet``, durably (fsync file, rename, fsync folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / f"seg-{first:08d}-{(last if last is not None else first):08d}.parquet"
    tmp = final.with_name(final.name + ".tmp")
    with open(tmp, "wb") as fh:
        pq.write_table(table, fh, compression=COMPRESSION, row_group_size=ROW_GROUP)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, final)
    fsync_dir(folder)
    return final


def read_table(folder: Path, columns: list[str] | None = None, schema: pa.Schema | None = None) -> pa.Table:
    """All live segments of a table as one Arrow table (empty with ``schema`` when there are none)."""
    files = live_segments(folder)
    if not files:
        if schema is None:
            return pa.table({})
        sch = pa.schema([schema.field(c) for c in columns]) if columns else schema
        return sch.empty_table()
    tables = [_read_segment(f, columns, schema) for f in files]
    return pa.concat_tables(tables, promote_options="default") if len(tables) > 1 else tables[0]


def _read_segment(path: Path, columns: list[str] | None, schema: pa.Schema | None) -> pa.Table:
    """One segment; a column added to ``schema`` after the segment was written reads as nulls
    (columns are only ever added, so a run written by an older version still opens)."""
    if columns is None or schema is None:
        return read_file(path, columns)
    have = set(pq.read_schema(path).names)
    t = read_file(path, [c for c in columns if c in have])
    for c in columns:
        if c not in have:
            t = t.append_column(schema.field(c), pa.nulls(t.num_rows, schema.field(c).type))
    return t.select(columns)


def read_file(path: Path, columns: list[str] | None = None) -> pa.Table:
    """One Parquet file, read through ``ParquetFile``: the same table as ``pq.read_table``, without
    importing ``pyarrow.dataset`` (a fifth of a second of every run's start-up)."""
    with pq.ParquetFile(path) as fh:
        return fh.read(columns=columns)


def compact(folder: Path, min_files: int = 2) -> bool:
    """Merge every live segment into one (a no-op below ``min_files``); crash-safe, see module doc."""
    files = live_segments(folder)
    if len(files) < min_files:
        return False
    ranges = [r for p in files if (r := _range(p)) is not None]  # a live segment's name always has one
    first, last = min(r[0] for r in ranges), max(r[1] for r in ranges)
    writer_path = folder / f"seg-{first:08d}-{last:08d}.parquet"
    tmp = writer_path.with_name(writer_path.name + ".tmp")
    schema = None
    with open(tmp, "wb") as fh:
        writer = None
        pending: list[pa.Table] = []
        rows = 0
        for f in files:
            t = read_file(f)
            if writer is None:
                schema = t.schema
                writer = pq.ParquetWriter(fh, schema, compression=COMPRESSION)
            pending.append(t.cast(schema))
            rows += t.num_rows
            if rows >= ROW_GROUP:  # few large row groups: a footer of 1,000 small ones costs more to read
                writer.write_table(pa.concat_tables(pending), row_group_size=ROW_GROUP)
                pending, rows = [], 0
        assert writer is not None  # files is not empty
        if pending:
            writer.write_table(pa.concat_tables(pending), row_group_size=ROW_GROUP)
        writer.close()
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, writer_path)
    fsync_dir(folder)
    for f in files:
        if f != writer_path:
            f.unlink()
    fsync_dir(folder)
    return True
