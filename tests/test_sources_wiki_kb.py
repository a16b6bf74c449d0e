"""The E-VQA and ViQuAE builders, whose knowledge bases are Wikipedia articles: E-VQA's CSV with its
iNaturalist and GLDv2 images, multi-answer and two-hop questions, and ViQuAE's released JSONL and
saved Hugging Face datasets with gold from provenance passages or the entity's own article."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sourcebuilds import FIX, VIQ, by_id, load, write_img

from mmrag.benchmarks.sources import build_deflection
from mmrag.errors import InputError


# ---------------------------------------------------------------- E-VQA
def evqa_images(tmp: Path) -> Path:
    imgs = tmp / "imgs"
    names = {d["id"]: d["file_name"] for d in json.loads((FIX / "inat2021_val_subset.json").read_text())["images"]}
    for seed, image_id in enumerate(["4f3c9b1e2a", "7d2e8c0a91", "b10e5a", "b10e5b"], 1):  # b10e5c is missing
        write_img(imgs / names[image_id], seed)
    write_img(imgs / "b10e5c.jpg", 9)  # named by the id but not where the annotations say: never used
    write_img(imgs / "0" / "a" / "1" / "0a1b2c3d4e5f6a7b.jpg", 5)  # GLDv2: a/b/c/<id>.jpg
    return imgs


def test_evqa(tmp_path):
    out = tmp_path / "evqa.jsonl"
    stats = build_deflection(
        "evqa",
        FIX / "evqa_val.csv",
        out,
        kb=FIX / "evqa_kb.json",
        images=evqa_images(tmp_path),
        options={"inat_annotations": str(FIX / "inat2021_val_subset.json")},
    )
    assert (stats.records_read, stats.samples_written, stats.skipped) == (3, 5, {"query image not found": 1})
    recs, kb = load(out)
    snake = [r for r in recs if r.question.startswith("What does this snake")]
    assert [r.sample_id.rsplit(":", 1)[1] for r in snake] == ["0", "1"]
    assert len({r.question_id for r in snake}) == 1 and snake[0].query_images != snake[1].query_images
    assert snake[0].answer == "lizards" and snake[0].aliases == ["small snakes"]
    gold = kb[snake[0].gold_contexts[0].doc_id]
    assert "lizards" in gold.text and gold.metadata["section"] == "Diet"
    assert gold.entity_id == snake[0].entity_id == "https://en.wikipedia.org/wiki/Coral_snake"
    eggs = [r for r in recs if r.question_type == "multi_answer"]
    assert len(eggs) == 2 and eggs[0].answer == "blue, white" and eggs[0].aliases == ["pale blue, white"]
    assert eggs[0].metadata["answer_parts"] == [["blue", "white"], ["pale blue", "white"]]
    (hop,) = [r for r in recs if r.question_type == "2_hop"]
    assert [kb[g.doc_id].title for g in hop.gold_contexts] == ["Villa Savoye", "Le Corbusier"]
    assert "Switzerland" in kb[hop.gold_contexts[1].doc_id].text
    titles = {d.title for d in kb.values()}
    assert "Unused page" not in titles and len(kb) == 3 + 2 + 2 + 2  # empty 'References' section left out


def test_evqa_inaturalist_needs_the_annotations(tmp_path):
    with pytest.raises(InputError, match="--option inat_annotations=PATH") as err:
        build_deflection(
            "evqa", FIX / "evqa_val.csv", tmp_path / "e.jsonl", kb=FIX / "evqa_kb.json", images=evqa_images(tmp_path)
        )
    assert "evqa_val.csv:2" in str(err.value)


# ---------------------------------------------------------------- ViQuAE


BRAVEHEART, WHYMPER = "viquae:5e1a7f0c0bcf4a5b9e0a1d2c:0", "viquae:7c2d0e9f1a2b4c3d8e7f6a5b:0"
EIFFEL = "viquae:c0ffee00c0ffee00c0ffee00:0"


def viquae_images(tmp: Path) -> Path:
    for seed, name in enumerate(["512px-Mel_Gibson_Cannes.jpg", "512px-Matterhorn.jpg", "512px-Eiffel.jpg"], 21):
        write_img(tmp / "images" / name, seed)
    return tmp / "images"


def check_viquae(out: Path, stats) -> None:
    assert (stats.records_read, stats.samples_written) == (5, 3)
    assert stats.skipped == {"provenance article not in KB": 1, "no provenance passage contains the answer": 1}
    assert stats.noted == {"gold from the entity's own article (no provenance)": 1}
    recs, kbr = load(out)
    bh, wh = by_id(recs)[BRAVEHEART], by_id(recs)[WHYMPER]
    # evidence in another article: the depicted man is Mel Gibson, the gold is the Braveheart article's passage
    assert bh.answer == "Braveheart" and bh.aliases == ["braveheart"] and bh.entity_id == "Q42229"
    assert [g.doc_id for g in bh.gold_contexts] == ["viquae:159013:p1"] and kbr[
        "viquae:159013:p1"
    ].entity_id == "Q221102"
    assert bh.metadata["kilt_id"] == "qw_2719" and bh.metadata["provenance_articles"] == ["159013"]
    assert not any(k.startswith("viquae:196431") for k in kbr)  # the depicted entity's own article is not gold
    assert [g.doc_id for g in wh.gold_contexts] == ["viquae:736:p3"]  # matched through the alias 'Whymper'
    assert sorted(kbr) == [
        "viquae:159013:p1",
        "viquae:159013:p3",
        "viquae:736:p1",
        "viquae:736:p3",
        "viquae:9232:p1",
        "viquae:9232:p3",
    ]  # no title paragraph, no heading
    assert kbr["viquae:736:p3"].metadata["section"] == "Climbing"
    # no provenance: the gold is the passage of the depicted entity's own article (Q243) holding the answer
    eiffel = by_id(recs)[EIFFEL]
    assert [g.doc_id for g in eiffel.gold_contexts] == ["viquae:9232:p3"] and eiffel.entity_id == "Q243"
    assert eiffel.metadata["gold_match"] == "entity_article" and bh.metadata["gold_match"] == "provenance"


def test_viquae_released_jsonl_and_gz_kb_parts(tmp_path):
    out = tmp_path / "viquae.jsonl"
    stats = build_deflection("viquae", VIQ / "validation.jsonl", out, kb=VIQ / "kb", images=viquae_images(tmp_path))
    check_viquae(out, stats)


def test_viquae_saved_hf_datasets(tmp_path):
    import datasets

    rows = [json.loads(x) for x in (VIQ / "validation.jsonl").read_text().splitlines()]
    data = tmp_path / "viquae_dataset"
    ds = datasets.Dataset.from_list(rows)
    datasets.DatasetDict({"validation": ds, "test": ds.select([0])}).save_to_disk(str(data))
    kb = tmp_path / "viquae_wikipedia"
    from mmrag.benchmarks.sources.tables import iter_table

    arts = [obj for _, _, obj in iter_table(VIQ / "kb")]
    datasets.Dataset.from_list(
        [
            {k: a[k] for k in ("kilt_id", "wikipedia_id", "wikipedia_title", "text", "url", "wikidata_info")}
            for a in arts
        ]
    ).save_to_disk(str(kb))
    out = tmp_path / "viquae.jsonl"
    with pytest.raises(InputError, match="choose a split with --split; this dataset has: validation, test"):
        build_deflection("viquae", data, out, kb=kb, images=viquae_images(tmp_path))
    check_viquae(
        out, build_deflection("viquae", data, out, kb=kb, images=tmp_path / "images", options={"split": "validation"})
    )
