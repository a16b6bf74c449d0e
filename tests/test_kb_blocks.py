"""The KB block reader that Ray workers run, checked without Ray: blocks cut anywhere read the
same documents as the single-process reader, and a bad line is one error naming file and line
(the same parser as every other JSONL reader, so NaN and bad UTF-8 are caught the same way)."""

from __future__ import annotations

import json

import pytest

from mmrag.commands.index import iter_kb
from mmrag.distributed.kb_blocks import plan_blocks, read_rows, scan_block
from mmrag.errors import InputError


def _kb(tmp_path, lines):
    path = tmp_path / "kb.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def _doc(i):
    return json.dumps({"id": f"d{i}", "modality": "text", "text": f"Document number {i}.", "title": f"T{i}"}).encode()


@pytest.mark.parametrize("block_docs", [1, 3, 7, 100])
def test_blocks_read_the_documents_of_the_single_process_reader(tmp_path, block_docs):
    path = _kb(tmp_path, [_doc(i) if i != 4 else b"   " for i in range(10)])  # a blank line is skipped
    expected = [d.id for d in iter_kb(path)]
    got = []
    for block in plan_blocks(path, block_docs):
        scan = scan_block(str(path), block, "text")
        assert scan["error"] is None
        group = {"group": 0, "start": block["start"], "stop": block["stop"], "line": block["line"]}
        got += read_rows(str(path), group, "text")["doc_id"]
    assert got == expected == [f"d{i}" for i in range(10) if i != 4]


@pytest.mark.parametrize(
    "bad,match",
    [
        (b'{"id": "d5", "modality": "text", "text": NaN}', "NaN"),
        (b'{"id": "d5", "modality": "text", "text": "caf\xe9"}', "not UTF-8"),
        (b'{"id": "d5", "modality": "text", ', "invalid JSON"),
        (b'["d5"]', "expected a JSON object"),
    ],
)
def test_a_bad_line_is_reported_with_file_and_line(tmp_path, bad, match):
    path = _kb(tmp_path, [_doc(i) if i != 5 else bad for i in range(8)])
    errors = [s["error"] for s in (scan_block(str(path), b, "text") for b in plan_blocks(path, 3)) if s["error"]]
    assert len(errors) == 1
    assert errors[0]["line"] == 6 and errors[0]["path"] == str(path)
    assert match in errors[0]["message"]
    with pytest.raises(InputError, match=match) as single:
        list(iter_kb(path))
    assert single.value.line == 6


def test_a_kb_file_gives_the_index_bar_its_total(tmp_path, monkeypatch):
    """A streamed KB used to show an unknown total; the build now reads KBFile's length hint."""
    import contextlib
    import gzip
    import operator

    import mmrag.indices.build as build

    path = tmp_path / "kb.jsonl"
    path.write_bytes(b"\n".join(_doc(i) for i in range(7)))  # no newline after the last line
    assert operator.length_hint(iter_kb(path)) == 7 == len(list(iter_kb(path)))
    gz = tmp_path / "kb.jsonl.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert operator.length_hint(iter_kb(gz)) == 0  # unknown: counting would decompress the file

    totals = []

    @contextlib.contextmanager
    def spy(description, total, enabled=None, min_items=2048):
        totals.append((description, total))
        yield type("Bar", (), {"advance": lambda self, n=1: None})()

    monkeypatch.setattr(build, "progress_bar", spy)
    from mmrag.indices import create_encoder

    build.build_index(
        iter_kb(path), create_encoder({"name": "minilm", "kwargs": {}}), "text", out=tmp_path / "ix", source=path
    )
    assert ("building text index", 7) in totals
