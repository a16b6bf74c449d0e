"""The files and argv pieces behind the bad-input cases (``tests/bad_inputs.py``).

Writers of small valid and broken inputs (JSONL rows, PNGs, a decompression-bomb PNG, parquet) and
:class:`CaseFiles`, the files every group of cases shares, written once per folder, so that each
case module builds its command lines on the same paths.
"""

from __future__ import annotations

import io
import json
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

GOOD_KB = {"id": "d1", "modality": "text", "text": "The capital of Varnholt is Quellmar.", "entity_id": "e1"}
HB_QUESTION = "What is shown?\nA. a cat\nB. a dog\nC. a bird\nD. a fish\nE. None of the above"
NOT_UTF8 = b'{"id": "d1", "modality": "text", "text": "caf\xe9 \xff"}\n'


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)
    return path


def jsonl(path: Path, rows: list) -> Path:
    return write(path, "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))


def defl(**over):
    rec = {
        "sample_id": "s1",
        "question_id": "q1",
        "question": "What is the capital of Varnholt?",
        "answer": "Quellmar",
        "gold_contexts": [{"doc_id": "d1", "modality": "text"}],
        "source": "demo",
    }
    rec.update(over)
    return rec


def knowhal(**over):
    rec = {
        "id": "k1",
        "pair_id": "p1",
        "entity_id": "e1",
        "image": "img.png",
        "dimension": "E",
        "polarity": "positive",
        "question": "Who is this?",
        "answers": ["Ada"],
    }
    rec.update(over)
    return rec


def png_bytes(color: str = "red") -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), color).save(buf, format="PNG")
    return buf.getvalue()


def bomb_png(side: int = 100_000) -> bytes:
    """A valid PNG header declaring ``side`` x ``side`` pixels (a decompression bomb) with no pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b"")


def humblebench_parquet(path: Path, images: list[bytes]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [
        {
            "question_id": i + 1,
            "question": HB_QUESTION,
            "label": "A",
            "type": "Object",
            "image": {"bytes": b, "path": f"{i}.png"},
        }
        for i, b in enumerate(images)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def parquet_file(path: Path) -> Path:
    """Any parquet file (given where JSONL is expected)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": ["d1"], "text": ["x"]}), path)
    return path


#: name -> (argv, substrings the error must contain, a path that must not exist afterwards)
Cases = dict[str, tuple[list[str], list[str], Path | None]]


@dataclass
class CaseFiles:
    """The files the cases share, in the folder ``t``, and the argv pieces built on them."""

    t: Path
    out: Path
    img: Path
    corrupt: Path
    bomb: Path
    pq: Path
    bad_utf8: Path
    empty: Path
    hb_fake_pq: Path
    hb_bad_bytes: Path
    kb_dir: Path
    base = "benchmarks: [{name: demo}]\nmodels: [{backend: always-deflect}]\n"
    openai = ("--model", "openai:m", "--base-url", "http://127.0.0.1:9/v1")

    @classmethod
    def write_all(cls, t: Path) -> CaseFiles:
        out = t / "out"
        img = t / "img.png"
        Image.new("RGB", (8, 8), "red").save(img)
        (t / "defl").mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (8, 8), "red").save(t / "defl" / "q.tiff")
        corrupt = write(t / "corrupt.png", "definitely not a png")
        bomb = write(t / "defl" / "bomb.png", bomb_png())
        jsonl(t / "defl" / "kb.jsonl", [GOOD_KB])  # the knowledge base beside the deflection files
        pq = parquet_file(t / "data.parquet")
        bad_utf8 = write(t / "bad.jsonl", NOT_UTF8)
        empty = write(t / "empty.jsonl", "")
        write(t / "hb" / "img.png", img.read_bytes())
        hb_fake_pq = write(t / "hbfake" / "h.parquet", json.dumps({"question_id": 1}) + "\n")
        hb_bad_bytes = humblebench_parquet(t / "hbbytes" / "h.parquet", [b"these bytes are not an image"])
        kb_dir = t / "kbdir"
        kb_dir.mkdir()
        return cls(t, out, img, corrupt, bomb, pq, bad_utf8, empty, hb_fake_pq, hb_bad_bytes, kb_dir)

    @property
    def run(self) -> list[str]:
        return ["--out", str(self.out)]

    def cfg(self, name: str, text: str | bytes) -> str:
        return str(write(self.t / name, text))

    def run_src(self, bench: str, src: Path, *extra: str) -> list[str]:
        return ["run", "--benchmark", bench, "--source", str(src), "--model", "always-deflect", *extra, *self.run]

    def validate(self, path: Path, kind: str) -> list[str]:
        return ["benchmark", "validate", str(path), "--benchmark", kind]
