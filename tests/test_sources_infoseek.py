"""The InfoSeek builder: the released question, with-KB and Wiki6M files joined on data_id, numeric
answer ranges, the OVEN image layout with exact file lookup, a gzipped KB and the page gold policy,
and an E-VQA-style KB in place of Wiki6M."""

from __future__ import annotations

import json

import pytest
from PIL import Image
from sourcebuilds import FIX, build_infoseek, by_id, load

from mmrag.errors import InputError


def test_infoseek_released_files_join_on_data_id(tmp_path):
    out, stats = build_infoseek(tmp_path)  # infoseek_val_withkb.jsonl is found beside the question file
    assert (stats.records_read, stats.samples_written) == (8, 5)
    assert stats.skipped == {"query image not found": 1, "entity not in KB": 1, "no with-KB entry for data_id": 1}
    recs, kb = load(out)
    s = by_id(recs)
    alps = s["infoseek:infoseek_val_00000000:0"]
    assert alps.answer == "Alps" and alps.aliases == ["the Alps", "Alpine mountains"]
    assert alps.question_type == "string" and alps.entity_id == "Q1374" and alps.numeric_ranges == []
    assert alps.metadata["entity_text"] == "Matterhorn" and alps.metadata["data_split"] == "val_unseen_question"
    assert [g.doc_id for g in alps.gold_contexts] == ["infoseek:Q1374:p0"] and "Alps" in kb["infoseek:Q1374:p0"].text
    height = s["infoseek:infoseek_val_00000001:0"]
    assert height.numeric_ranges == [(4030.2, 4925.8)] and height.question_type == "numerical"
    assert height.aliases == ["4,478 metre"]
    assert [g.doc_id for g in height.gold_contexts] == ["infoseek:Q1374:p1"] and height.metadata[
        "gold_match"
    ] == "answer"
    y1, y2 = s["infoseek:infoseek_val_00000002:0"], s["infoseek:infoseek_val_00000003:0"]
    assert y1.question_id == y2.question_id != alps.question_id != height.question_id
    assert y1.query_images != y2.query_images and y1.question_type == "time"
    assert [g.doc_id for g in y1.gold_contexts] == ["infoseek:Q243:p1"]
    assert not any(k.startswith("infoseek:Q90") for k in kb)  # pages nobody asks about stay out


def test_infoseek_bare_dict_answer_eval_and_empty_content(tmp_path):
    out, _ = build_infoseek(tmp_path)
    cn = by_id(load(out)[0])["infoseek:infoseek_val_00000005:0"]
    lo, hi = cn.numeric_ranges[0]  # answer_eval is a bare {"wikidata": 330.0}: official +-10%
    assert (round(lo, 6), round(hi, 6)) == (297.0, 363.0) and cn.question_type == "numerical"
    assert cn.gold_contexts and cn.entity_id == "Q9188"  # empty wikipedia_content: the summary is the page


def test_infoseek_jpeg_extension_and_exact_lookup(tmp_path):
    out, stats = build_infoseek(tmp_path)
    recs, _ = load(out)
    alps = by_id(recs)["infoseek:infoseek_val_00000000:0"]
    assert Image.open(out.parent / alps.query_images[0]).format == "JPEG"
    assert "infoseek:infoseek_val_00000004:0" not in by_id(recs)  # only look-alike names exist: skipped
    assert stats.skipped["query image not found"] == 1


def test_infoseek_withkb_option_gz_kb_and_page_policy(tmp_path):
    import gzip

    elsewhere = tmp_path / "q" / "infoseek_val.jsonl"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes((FIX / "infoseek_val.jsonl").read_bytes())
    with pytest.raises(InputError, match="with-KB mapping not found beside the question file") as err:
        build_infoseek(tmp_path, data=elsewhere)
    assert "infoseek_val.jsonl" in str(err.value)
    gz = tmp_path / "Wiki6M_ver_1_0.jsonl.gz"
    gz.write_bytes(gzip.compress((FIX / "Wiki6M_ver_1_0.jsonl").read_bytes()))
    out, stats = build_infoseek(
        tmp_path, data=elsewhere, withkb=str(FIX / "infoseek_val_withkb.jsonl"), kb=gz, gold_policy="page"
    )
    assert stats.samples_written == 5
    recs, kb = load(out)
    assert [g.doc_id for g in by_id(recs)["infoseek:infoseek_val_00000000:0"].gold_contexts] == [
        "infoseek:Q1374:p0",
        "infoseek:Q1374:p1",
        "infoseek:Q1374:p2",
    ]


def test_infoseek_evqa_style_kb(tmp_path):
    kb = tmp_path / "kb.json"
    kb.write_text(
        json.dumps(
            {
                "https://en.wikipedia.org/wiki/CN_Tower": {
                    "title": "CN Tower",
                    "wikidata_id": "Q9188",
                    "section_titles": ["CN Tower", "History"],
                    "section_texts": ["The CN Tower is 553 m tall.", "Its deck is at 330 m."],
                    "url": "https://en.wikipedia.org/wiki/CN_Tower",
                },
                "Q243": {
                    "title": "Eiffel Tower",
                    "section_titles": ["Eiffel Tower"],
                    "section_texts": ["Completed in 1889."],
                },
                "https://en.wikipedia.org/wiki/No_qid": {"title": "No qid", "section_texts": ["ignored"]},
            }
        )
    )
    out, _ = build_infoseek(tmp_path, kb=kb)
    recs, kbr = load(out)
    cn = by_id(recs)["infoseek:infoseek_val_00000005:0"]
    assert [g.doc_id for g in cn.gold_contexts] == ["infoseek:Q9188:p1"]
    assert kbr["infoseek:Q9188:p0"].metadata["url"] == "https://en.wikipedia.org/wiki/CN_Tower"
    assert not any(k.startswith("infoseek:Q1374") for k in kbr)
