"""Source builders on bad input: a malformed record in every source's format named by file, line and
field with nothing half-written, a failed rebuild keeping the previous output, a build where every
record is skipped being an error, and the record limit counting source records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sourcebuilds import FIX, VIQ, WEBQA_IDS, load, mmdoc_images, mrag_parquet, write_img

from mmrag.benchmarks.sources import build_deflection, kb_path_for
from mmrag.errors import InputError


# ---------------------------------------------------------------- malformed input
def _edit_jsonl(src: Path, dst: Path, line: int, fn) -> Path:
    rows = [json.loads(x) for x in src.read_text().splitlines()]
    fn(rows[line - 1])
    dst.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return dst


def _edit_json(src: Path, dst: Path, key: str, fn) -> Path:
    d = json.loads(src.read_text())
    fn(d[key])
    dst.write_text(json.dumps(d))
    return dst


def _infoseek_copy(t: Path, fn) -> Path:
    (t / "infoseek_val_withkb.jsonl").write_bytes((FIX / "infoseek_val_withkb.jsonl").read_bytes())
    return _edit_jsonl(FIX / "infoseek_val.jsonl", t / "infoseek_val.jsonl", 2, fn)


def _gz_part_not_gzip(t: Path) -> Path:
    kb = t / "kb"
    kb.mkdir()
    for p in (VIQ / "kb").iterdir():
        (kb / p.name).write_bytes(p.read_bytes())
    (kb / "non_humans.jsonl.gz").write_bytes(b'{"kilt_id": "1"}\n')  # decompressed by hand, name kept
    return kb


CASES = {
    "infoseek-missing-question": lambda t: (
        "infoseek",
        _infoseek_copy(t, lambda r: r.pop("question")),
        {"kb": FIX / "Wiki6M_ver_1_0.jsonl"},
        "infoseek_val.jsonl:2, field 'question'",
    ),
    "infoseek-bad-range": lambda t: (
        "infoseek",
        _infoseek_copy(t, lambda r: r["answer_eval"][0].update(range="high")),
        {"kb": FIX / "Wiki6M_ver_1_0.jsonl"},
        "infoseek_val.jsonl:2, field 'answer_eval[0].range'",
    ),
    "infoseek-withkb-as-data": lambda t: (
        "infoseek",
        FIX / "infoseek_val_withkb.jsonl",
        {"kb": FIX / "Wiki6M_ver_1_0.jsonl"},
        "infoseek_val_withkb.jsonl:1: this is InfoSeek's with-KB mapping",
    ),
    "viquae-kb-part-not-gzip": lambda t: (
        "viquae",
        VIQ / "validation.jsonl",
        {"kb": _gz_part_not_gzip(t)},
        "non_humans.jsonl.gz: not a gzip file",
    ),
    "evqa-inat-without-images": lambda t: (
        "evqa",
        FIX / "evqa_val.csv",
        {
            "kb": FIX / "evqa_kb.json",
            "options": {"inat_annotations": str(_write(t / "inat.json", json.dumps({"annotations": []})))},
        },
        "inat.json, field 'images'",
    ),
    "evqa-section-id": lambda t: (
        "evqa",
        _write(t / "e.csv", (FIX / "evqa_val.csv").read_text().replace(",1,Breeding", ",one,Breeding")),
        {"kb": FIX / "evqa_kb.json"},
        "e.csv:3, field 'evidence_section_id'",
    ),
    "evqa-missing-column": lambda t: (
        "evqa",
        _write(t / "e.csv", (FIX / "evqa_val.csv").read_text().replace("wikipedia_url,", "wiki_url,", 1)),
        {"kb": FIX / "evqa_kb.json"},
        "e.csv:1, field 'wikipedia_url'",
    ),
    "webqa-missing-Q": lambda t: (
        "webqa",
        _edit_json(
            FIX / "WebQA_train_val.json", t / "w.json", "d5c0a4e60dba11ecb1e81171463288e9", lambda r: r.pop("Q")
        ),
        {},
        "w.json, field 'Q': record 'd5c0a4e60dba11ecb1e81171463288e9'",
    ),
    "webqa-fact-text": lambda t: (
        "webqa",
        _edit_json(
            FIX / "WebQA_train_val.json",
            t / "w.json",
            "d5c0a4e60dba11ecb1e81171463288e9",
            lambda r: r["txt_posFacts"][0].pop("fact"),
        ),
        {},
        "field 'txt_posFacts[0].fact': record 'd5c0a4e60dba11ecb1e81171463288e9'",
    ),
    "viquae-answer": lambda t: (
        "viquae",
        _write(
            t / "v.jsonl",
            json.dumps({"id": "a", "input": "q?", "image": "x.jpg", "output": {"answer": [""]}})
            + "\n"
            + json.dumps({"id": "b", "input": "q?", "image": "x.jpg", "output": {"answer": []}})
            + "\n",
        ),
        {"kb": VIQ / "kb"},
        "v.jsonl:1, field 'output.original_answer'",
    ),
    "mragbench-choice": lambda t: (
        "mragbench",
        mrag_parquet(t, bad_choice=True),
        {},
        "test-00000-of-00001.parquet:2, field 'answer_choice'",
    ),
    "mmdocrag-gold": lambda t: (
        "mmdocrag",
        _edit_jsonl(FIX / "mmdocrag_dev_15.jsonl", t / "m.jsonl", 3, lambda r: r.update(gold_quotes=["image9"])),
        {},
        "m.jsonl:3, field 'gold_quotes'",
    ),
}


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_record_names_file_line_and_field(tmp_path, case):
    source, data, kw, where = CASES[case](tmp_path)
    out = tmp_path / "out" / "x.jsonl"
    out.parent.mkdir()
    with pytest.raises(InputError) as err:
        build_deflection(source, data, out, images=tmp_path, **kw)
    assert where in str(err.value)
    assert sorted(p.name for p in out.parent.iterdir()) == []  # nothing half-written, no temp files left


def test_failed_rebuild_keeps_previous_output_and_all_skipped_is_an_error(tmp_path):
    out = tmp_path / "mm.jsonl"
    build_deflection("mmdocrag", FIX / "mmdocrag_dev_15.jsonl", out, images=mmdoc_images(tmp_path))
    before = out.read_bytes(), kb_path_for(out).read_bytes()
    (tmp_path / "empty").mkdir()
    with pytest.raises(
        InputError, match=r"no sample could be built from 3 records \(skipped: gold image not found: 3\)"
    ):
        build_deflection("mmdocrag", FIX / "mmdocrag_dev_15.jsonl", out, images=tmp_path / "empty")
    assert (out.read_bytes(), kb_path_for(out).read_bytes()) == before
    with pytest.raises(InputError, match="field 'option gold_policy'"):
        build_deflection("mmdocrag", FIX / "mmdocrag_dev_15.jsonl", out, options={"gold_policy": "page"})
    with pytest.raises(InputError, match="needs its knowledge base: pass --kb"):
        build_deflection("evqa", FIX / "evqa_val.csv", out, images=tmp_path)


def test_limit_counts_source_records(tmp_path):
    for image_id, seed in WEBQA_IDS.items():
        write_img(tmp_path / "imgs" / f"{image_id}.jpg", seed)
    out = tmp_path / "w.jsonl"
    stats = build_deflection("webqa", FIX / "WebQA_train_val.json", out, images=tmp_path / "imgs", limit=1)
    assert (stats.records_read, stats.samples_written) == (1, 1)
    assert [r.sample_id for r in load(out)[0]] == ["webqa:d5bbc6d80dba11ecb1e81171463288e9:0"]
