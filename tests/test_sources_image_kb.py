"""The WebQA, MRAG-Bench and MMDocRAG builders, whose knowledge bases hold images: WebQA from an image
folder or its base64 TSV with positive and negative facts, MRAG-Bench's parquet with gold and
retrieved images stored once, and MMDocRAG's text and image quotes."""

from __future__ import annotations

import base64
from pathlib import Path

from sourcebuilds import (
    FIX,
    WEBQA_IDS,
    by_id,
    img_bytes,
    load,
    mmdoc_images,
    mrag_parquet,
    write_img,
)

from mmrag.benchmarks.sources import build_deflection

# ---------------------------------------------------------------- WebQA


def check_webqa(out: Path, stats) -> None:
    assert (stats.records_read, stats.samples_written) == (3, 2)
    assert stats.skipped == {"no positive facts (unlabeled test split)": 1}
    assert stats.dropped == {"negative image not found": 1}
    recs, kb = load(out)
    boats = by_id(recs)["webqa:d5bbc6d80dba11ecb1e81171463288e9:0"]
    assert boats.question.startswith("Are both") and boats.answer == "Yes, both are home to trajinera boats."
    assert boats.query_images == [] and boats.question_type == "YesNo"
    assert [(g.doc_id, g.modality) for g in boats.gold_contexts] == [
        ("webqa:img:30251823", "multimodal"),
        ("webqa:img:30251824", "multimodal"),
    ]
    assert kb["webqa:img:30251824"].text.startswith("Colourful trajineras")
    assert boats.negative_doc_ids == ["webqa:txt:d5bd2a9a0dba11ecb1e81171463288e9", "webqa:img:30251899"]
    light = by_id(recs)["webqa:d5c0a4e60dba11ecb1e81171463288e9:0"]
    assert [g.modality for g in light.gold_contexts] == ["text"] and "1543" in kb[light.gold_contexts[0].doc_id].text
    assert "webqa:img:30251899" in light.negative_doc_ids and len(light.negative_doc_ids) == 3


def test_webqa_image_folder(tmp_path):
    for image_id, seed in WEBQA_IDS.items():
        write_img(tmp_path / "imgs" / f"{image_id}.jpg", seed)
    out = tmp_path / "webqa.jsonl"
    check_webqa(out, build_deflection("webqa", FIX / "WebQA_train_val.json", out, images=tmp_path / "imgs"))


def test_webqa_imgs_tsv(tmp_path):
    tsv = tmp_path / "imgs.tsv"
    lines = [f"{i}\t{base64.b64encode(img_bytes(s, 'JPEG')).decode()}" for i, s in {**WEBQA_IDS, "999": 9}.items()]
    tsv.write_text("\n".join(lines) + "\n")
    out = tmp_path / "webqa.jsonl"
    stats = build_deflection("webqa", FIX / "WebQA_train_val.json", out, images=tsv)
    check_webqa(out, stats)
    assert stats.images_written == 3  # the unrelated image 999 is not stored


# ---------------------------------------------------------------- MRAG-Bench


def test_mragbench(tmp_path):
    out = tmp_path / "mrag.jsonl"
    stats = build_deflection("mragbench", mrag_parquet(tmp_path).parent, out)
    assert (stats.records_read, stats.samples_written) == (3, 3)
    recs, kb = load(out)
    car, dog, car2 = (by_id(recs)[f"mragbench:{i}:0"] for i in range(3))
    assert car.options == {"A": "Audi A4", "B": "Mercedes-Benz C-Class", "C": "BMW 3 Series", "D": "Lexus IS"}
    assert car.label == "B" and car.answer == "Mercedes-Benz C-Class" and car.question_type == "Scope"
    assert len(car.gold_contexts) == 2 and all(g.modality == "image" for g in car.gold_contexts)
    assert len(car.negative_doc_ids) == 1  # the retrieved copy of a gold image is not a negative
    assert len(dog.gold_contexts) == 1 and len(dog.negative_doc_ids) == 1  # 'Incomplete': first images only
    assert car2.gold_contexts[0].doc_id == car.gold_contexts[0].doc_id  # same picture, one document
    assert kb[car.gold_contexts[0].doc_id].entity_id == car.entity_id == "mragbench:mercedesbenz cclass"
    assert kb[car.negative_doc_ids[0]].entity_id is None
    # 3 queries + gold {31, 32, 41} + retrieved {33, 43, 51}: images 42 and 44 (Incomplete) are never stored
    assert len(car.query_images) == 1 and stats.images_written == 9


# ---------------------------------------------------------------- MMDocRAG


def test_mmdocrag(tmp_path):
    out = tmp_path / "mm.jsonl"
    stats = build_deflection("mmdocrag", FIX / "mmdocrag_dev_15.jsonl", out, images=mmdoc_images(tmp_path))
    assert (stats.samples_written, stats.skipped, stats.dropped) == (
        2,
        {"gold image not found": 1},
        {"negative image not found": 1},
    )
    recs, kb = load(out)
    sales = by_id(recs)["mmdocrag:0:0"]
    assert sales.answer == "$5,283.4 million" and sales.query_images == []
    assert [(g.doc_id, g.modality) for g in sales.gold_contexts] == [
        ("mmdocrag:0:text1", "text"),
        ("mmdocrag:0:image1", "multimodal"),
    ]
    assert kb["mmdocrag:0:image1"].text.startswith("A table of net sales")
    assert sales.negative_doc_ids == ["mmdocrag:0:text2", "mmdocrag:0:text3", "mmdocrag:0:image2"]
    assert by_id(recs)["mmdocrag:1:0"].negative_doc_ids == ["mmdocrag:1:text1"]
