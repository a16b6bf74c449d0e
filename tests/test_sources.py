"""Source builders: each published format -> valid DeflectionBench samples + KB + images.

Question files in the sources' exact published formats live in tests/fixtures/sources/; images
(real PNG/JPEG files), parquet tables and saved Hugging Face datasets are made here in tmp_path.
Every written line is re-read with the pydantic models the deflection loader uses.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from mmrag.benchmarks.formats import DeflectionRecord, KBRecord
from mmrag.benchmarks.sources import SOURCES, build_deflection, kb_path_for
from mmrag.commands.benchmark_build import app
from mmrag.errors import InputError
from mmrag.util import read_jsonl_models

FIX = Path(__file__).parent / "fixtures" / "sources"


def img_bytes(seed: int, fmt: str = "PNG") -> bytes:
    im = Image.new("RGB", (8, 8), ((seed * 53) % 256, (seed * 97) % 256, (seed * 151) % 256))
    im.putpixel((seed % 8, (seed // 8) % 8), (255 - seed % 256, 0, 0))
    buf = io.BytesIO()
    im.save(buf, format=fmt)
    return buf.getvalue()


def write_img(path: Path, seed: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(img_bytes(seed, "JPEG" if path.suffix.lower() in (".jpg", ".jpeg") else "PNG"))
    return path


def load(out: Path) -> tuple[list[DeflectionRecord], dict[str, KBRecord]]:
    """Validate the build as `mmrag benchmark validate` does, re-read both files with the models,
    check ids, references and images on disk."""
    from mmrag.benchmarks.validate import validate_deflection, validate_kb

    assert validate_deflection(out) == [] and validate_kb(kb_path_for(out)) == []
    recs = read_jsonl_models(out, DeflectionRecord)
    kb = {d.id: d for d in read_jsonl_models(kb_path_for(out), KBRecord)}
    assert len({r.sample_id for r in recs}) == len(recs)
    for r in recs:
        for g in r.gold_contexts:
            assert g.doc_id in kb and kb[g.doc_id].modality == g.modality
        assert all(n in kb for n in r.negative_doc_ids)
        assert not {g.doc_id for g in r.gold_contexts} & set(r.negative_doc_ids)
        for p in r.query_images:
            assert (out.parent / p).is_file() and not Path(p).is_absolute()
    for d in kb.values():
        if d.image:
            assert (out.parent / d.image).is_file()
            Image.open(out.parent / d.image).verify()
    return recs, kb


def by_id(recs: list[DeflectionRecord]) -> dict[str, DeflectionRecord]:
    return {r.sample_id: r for r in recs}


def test_registry_lists_the_six_sources():
    assert SOURCES.names() == ["evqa", "infoseek", "mmdocrag", "mragbench", "viquae", "webqa"]
    with pytest.raises(InputError, match="unknown deflection source 'okvqa'"):
        build_deflection("okvqa", FIX / "evqa_val.csv", "x.jsonl")


# ---------------------------------------------------------------- InfoSeek
def infoseek_images(tmp: Path) -> Path:
    """The OVEN layout: <first two digits of the id's number>/<image_id><original extension>."""
    oven = tmp / "oven_images"
    write_img(oven / "04" / "oven_04990193.JPEG", 0)  # ImageNet-sourced: keeps .JPEG
    for i, name in enumerate(["oven_00120033", "oven_00230044", "oven_00230045", "oven_00230046", "oven_00230047"], 1):
        write_img(oven / name.split("_")[-1][:2] / f"{name}.jpg", i)
    write_img(oven / "09" / "oven_09999999.jpg.png", 7)  # look-alikes of a missing image: never used
    write_img(oven / "99" / "oven_09999999.jpg", 8)
    return oven


def build_infoseek(tmp: Path, data: Path = FIX / "infoseek_val.jsonl", **options):
    out = tmp / "build" / "infoseek.jsonl"
    opts = {"qtype": str(FIX / "infoseek_val_qtype.jsonl"), "passage_words": "20", **options}
    stats = build_deflection(
        "infoseek",
        data,
        out,
        kb=options.pop("kb", FIX / "Wiki6M_ver_1_0.jsonl"),
        images=infoseek_images(tmp),
        options={k: v for k, v in opts.items() if k != "kb"},
    )
    return out, stats


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


# ---------------------------------------------------------------- WebQA
WEBQA_IDS = {"30251823": 11, "30251824": 12, "30251899": 13}


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


# ---------------------------------------------------------------- ViQuAE
VIQ = FIX / "viquae"
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


# ---------------------------------------------------------------- MRAG-Bench
def mrag_parquet(tmp: Path, bad_choice: bool = False) -> Path:
    import datasets

    def im(seed):
        return {"bytes": img_bytes(seed), "path": None}

    rows = [
        dict(
            id="0",
            aspect="Perspective",
            scenario="Scope",
            question="Which car model is this?",
            A="Audi A4",
            B="Mercedes-Benz C-Class",
            C="BMW 3 Series",
            D="Lexus IS",
            answer_choice="B",
            answer="Mercedes-Benz C-Class",
            image=im(30),
            gt_images=[im(31), im(32)],
            retrieved_images=[im(32), im(33)],
        ),
        dict(
            id="1",
            aspect="Transformative",
            scenario="Incomplete",
            question="Which animal is this?",
            A="Fox",
            B="Wolf",
            C="Dog",
            D="Coyote",
            answer_choice="E" if bad_choice else "C",
            answer="Dog",
            image=im(40),
            gt_images=[im(41), im(42)],
            retrieved_images=[im(43), im(44)],
        ),
        dict(
            id="2",
            aspect="Perspective",
            scenario="Angle",
            question="Which car model is this?",
            A="Audi A4",
            B="Mercedes-Benz C-Class",
            C="BMW 3 Series",
            D="Lexus IS",
            answer_choice="B",
            answer="Mercedes-Benz C-Class",
            image=im(50),
            gt_images=[im(31)],
            retrieved_images=[im(51)],
        ),
    ]
    feats = datasets.Features(
        {
            **{k: datasets.Value("string") for k in rows[0] if k not in ("image", "gt_images", "retrieved_images")},
            "image": datasets.Image(),
            "gt_images": datasets.List(datasets.Image()),
            "retrieved_images": datasets.List(datasets.Image()),
        }
    )
    path = tmp / "data" / "test-00000-of-00001.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(rows, features=feats).to_parquet(str(path))
    return path


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
def mmdoc_images(tmp: Path) -> Path:
    write_img(tmp / "mm" / "images" / "NYSE_FBHS_2017_31_410.jpg", 61)
    write_img(tmp / "mm" / "images" / "NYSE_FBHS_2017_2_12.jpg", 62)
    write_img(tmp / "mm" / "images" / "museum_2023_4_7.png", 63)
    return tmp / "mm"


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


# ---------------------------------------------------------------- CLI
def test_cli_build_deflection(tmp_path):
    out = tmp_path / "cli" / "mm.jsonl"
    runner = CliRunner()
    res = runner.invoke(
        app,
        [
            "build-deflection",
            "--dataset",
            "mmdocrag",
            "--data",
            str(FIX / "mmdocrag_dev_15.jsonl"),
            "--images",
            str(mmdoc_images(tmp_path)),
            "--out",
            str(out),
            "--limit",
            "2",
            "--option",
            "image_quote_modality=image",
        ],
    )
    assert res.exit_code == 0, res.output
    stats = json.loads(res.stdout)
    assert stats["records_read"] == 2 and stats["samples_written"] == 2 and stats["kb_out"].endswith("mm.kb.jsonl")
    recs, kb = load(out)
    assert by_id(recs)["mmdocrag:1:0"].gold_contexts[0].modality == "image" and kb["mmdocrag:1:image1"].text == ""
    bad = runner.invoke(
        app,
        [
            "build-deflection",
            "--dataset",
            "mmdocrag",
            "--data",
            str(tmp_path / "nope.jsonl"),
            "--out",
            str(out),
            "--option",
            "novalue",
        ],
    )
    assert bad.exit_code != 0 and isinstance(bad.exception, InputError)
    assert "expected KEY=VALUE" in str(bad.exception)


# ---------------------------------------------------------------- the deflection loader reads the builds
def test_builds_load_as_deflection_benchmark(tmp_path):
    from mmrag.benchmarks.deflection import DeflectionBenchmark

    out, _ = build_infoseek(tmp_path)
    bench = DeflectionBenchmark(out, kb=kb_path_for(out))
    samples = {s.id: s for s in bench.samples()}
    height = samples["infoseek:infoseek_val_00000001:0"]
    assert height.answers == ["4478", "4,478 metre"] and height.numeric_ranges == [(4030.2, 4925.8)]
    assert height.images[0].load().size == (8, 8) and height.gold_doc_ids == ["infoseek:Q1374:p1"]
    assert {d.id for d in bench.documents()} >= {g for s in samples.values() for g in s.gold_doc_ids}
    out = tmp_path / "mrag.jsonl"
    build_deflection("mragbench", mrag_parquet(tmp_path), out)
    car = {s.id: s for s in DeflectionBenchmark(out, kb=kb_path_for(out)).samples()}["mragbench:0:0"]
    assert [c.letter for c in car.choices] == ["A", "B", "C", "D"] and car.label == "B"
    assert car.metadata["positive_modality"] == "image" and len(car.metadata["negative_doc_ids"]) == 1
