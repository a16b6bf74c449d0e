"""A knowledge base in blocks: byte ranges of ``kb.jsonl`` that any worker can parse on its own.

Why byte ranges: a multi-million-document KB should be parsed where it is encoded, not funnelled
through the driver.  Two passes, both on workers:

1. :func:`plan_blocks` cuts the file into ranges of ``block_docs`` lines (bytes only, no JSON);
   :func:`scan_block` validates a range exactly as the single-process build does (same errors,
   same line numbers), hashes its documents for the KB content hash, and returns the byte offset
   of every document the index kind holds.
2. :func:`encode_groups` turns those offsets into ranges holding exactly ``batch_size`` indexable
   documents — the very batches the single-process build encodes — and :func:`read_rows` parses
   one.  Same batches in, bit-identical embeddings out (a sentence encoder's output depends on
   which texts share a batch), hence the same FAISS files and manifest as a local build.

Workers read the file by its path, so every node must see it at the same path (a shared or copied
folder), as they must the images it names.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from mmrag.errors import InputError
from mmrag.schema import Document, ImageRef
from mmrag.util import parse_json_line, parse_record, read_lines


def kb_document(obj: dict[str, Any], path: Path, line: int) -> Document:
    """One ``kb.jsonl`` object as a Document; image paths are relative to the file's folder."""
    from mmrag.benchmarks.formats import KBRecord

    rec = parse_record(KBRecord, obj, path=path, line=line)
    image = None
    if rec.image:
        p = Path(rec.image)
        image = ImageRef(path=str(p if p.is_absolute() else path.parent / p))
    return rec.to_document(image)


def plan_blocks(path: str | Path, block_docs: int) -> list[dict[str, int]]:
    """Byte ranges ``{block, start, stop, line}`` of ``block_docs`` lines each (the last may be shorter)."""
    blocks: list[dict[str, int]] = []
    start = pos = n = 0
    first = lineno = 1
    with open(path, "rb") as fh:
        for _, raw in read_lines(fh, path):  # bounded: a line with no end is refused, not read whole
            pos += len(raw)
            n += 1
            if n == block_docs:
                blocks.append({"block": len(blocks), "start": start, "stop": pos, "line": first})
                start, first, n = pos, lineno + 1, 0
            lineno += 1
    if n:
        blocks.append({"block": len(blocks), "start": start, "stop": pos, "line": first})
    return blocks


def _documents(path: Path, start: int, stop: int, line: int) -> Iterator[tuple[int, int, Document]]:
    """``(byte offset, line number, Document)`` for each record line of a range."""
    with open(path, "rb") as fh:
        fh.seek(start)
        data = fh.read(stop - start)
    offset = start
    for i, raw in enumerate(data.split(b"\n")):
        lineno, here = line + i, offset
        offset += len(raw) + 1
        if raw.strip():
            yield here, lineno, kb_document(parse_json_line(raw, path, lineno), path, lineno)


def _fits(doc: Document, kind: str, path: Path) -> bool:
    from mmrag.indices.build import document_fits

    try:
        return document_fits(doc, kind)
    except InputError as exc:
        raise InputError(exc.message, path=path, field=f"{doc.id}.image") from None


def scan_block(path: str, block: dict[str, int], kind: str) -> dict[str, Any]:
    """Pass 1 on one range: the KB hash of its documents, the offsets and line numbers of those the
    kind holds, or the first bad record as an error (raised by the driver in KB order)."""
    from mmrag.indices.manifest import KBHasher

    src, hasher = Path(path), KBHasher()
    offsets: list[int] = []
    lines: list[int] = []
    try:
        for off, lineno, doc in _documents(src, block["start"], block["stop"], block["line"]):
            hasher.add(doc)
            if _fits(doc, kind, src):
                offsets.append(off)
                lines.append(lineno)
    except InputError as exc:
        return {
            "block": block["block"],
            "error": {"message": exc.message, "path": exc.path, "line": exc.line, "field": exc.field},
        }
    return {
        "block": block["block"],
        "error": None,
        "hasher": hasher,
        "offsets": np.asarray(offsets, dtype=np.int64),
        "lines": np.asarray(lines, dtype=np.int64),
    }


def raise_scan_error(error: dict[str, Any]) -> None:
    raise InputError(error["message"], path=error.get("path"), line=error.get("line"), field=error.get("field"))


def encode_groups(offsets: np.ndarray, lines: np.ndarray, size: int, end: int) -> list[dict[str, int]]:
    """Ranges ``{group, start, stop, line}`` holding exactly ``size`` indexable documents each (the
    last may hold fewer): the batches of the single-process build."""
    groups = []
    for g, k in enumerate(range(0, len(offsets), size)):
        stop = int(offsets[k + size]) if k + size < len(offsets) else end
        groups.append({"group": g, "start": int(offsets[k]), "stop": stop, "line": int(lines[k])})
    return groups


def read_rows(path: str, group: dict[str, int], kind: str, include_title: bool = True) -> dict[str, list]:
    """Pass 2 on one group: the indexable documents' ids, modalities, texts to embed and image paths."""
    from mmrag.indices.build import document_text

    src = Path(path)
    rows: dict[str, list] = {"group": [], "doc_id": [], "modality": [], "text": [], "image": []}
    for _, _, doc in _documents(src, group["start"], group["stop"], group["line"]):
        if not _fits(doc, kind, src):
            continue
        rows["group"].append(group["group"])
        rows["doc_id"].append(doc.id)
        rows["modality"].append(doc.modality)
        rows["text"].append(document_text(doc, include_title) if kind != "visual" else "")
        rows["image"].append(doc.image.path if doc.image is not None else "")
    return rows
