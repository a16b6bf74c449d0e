"""Inputs and checks for the source builder tests.

Question files in the sources' exact published formats live in tests/fixtures/sources/; images
(real PNG/JPEG files), parquet tables and saved Hugging Face datasets are made here in tmp_path.
`load` re-reads every written line with the pydantic models the deflection loader uses and checks
ids, references and images on disk.
"""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image

from mmrag.benchmarks.formats import DeflectionRecord, KBRecord
from mmrag.benchmarks.sources import build_deflection, kb_path_for
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


WEBQA_IDS = {"30251823": 11, "30251824": 12, "30251899": 13}


VIQ = FIX / "viquae"


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


def mmdoc_images(tmp: Path) -> Path:
    write_img(tmp / "mm" / "images" / "NYSE_FBHS_2017_31_410.jpg", 61)
    write_img(tmp / "mm" / "images" / "NYSE_FBHS_2017_2_12.jpg", 62)
    write_img(tmp / "mm" / "images" / "museum_2023_4_7.png", 63)
    return tmp / "mm"
