"""The benchmark loaders on small fixtures written in each real format, and their error messages."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
from pathlib import Path

import pytest
from PIL import Image

from mmrag.benchmarks import BENCHMARKS, load_benchmark
from mmrag.benchmarks.humblebench import parse_options
from mmrag.benchmarks.validate import validate_file
from mmrag.errors import InputError
from mmrag.schema import Document, Sample


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("MMRAG_HOME", str(tmp_path / "home"))


def png(path: Path, colour=(200, 30, 40), size=(16, 12)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, colour).save(buf, format="PNG")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buf.getvalue())
    return buf.getvalue()


def jsonl(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def roundtrip(objs) -> None:
    for o in objs:
        assert type(o).model_validate(json.loads(o.model_dump_json())) == o


# ---------------------------------------------------------------------------------- deflection

KB = [
    {
        "id": "d-text",
        "modality": "text",
        "text": "Orvale's capital is Kelford; it was founded in 1512.",
        "entity_id": "Q1",
    },
    {"id": "d-img", "modality": "image", "image": "img/flag.png", "title": "Flag of Orvale", "entity_id": "Q1"},
    {"id": "d-mm", "modality": "multimodal", "image": "img/flag.png", "text": "The flag of Orvale.", "entity_id": "Q1"},
]


def deflection_rec(**over):
    rec = {
        "sample_id": "s1",
        "question_id": "q1",
        "question": "When was the country shown founded?",
        "query_images": ["img/query.png"],
        "answer": "1512",
        "aliases": ["the year 1512"],
        "numeric_ranges": [[1500, 1520]],
        "gold_contexts": [{"doc_id": "d-mm", "modality": "multimodal"}, {"doc_id": "d-text", "modality": "text"}],
        "negative_doc_ids": [],
        "source": "infoseek",
        "entity_id": "Q1",
        "question_type": "numerical",
    }
    rec.update(over)
    return rec


@pytest.fixture
def deflection_dir(tmp_path):
    d = tmp_path / "db"
    png(d / "img/flag.png")
    png(d / "img/query.png", (30, 70, 180))
    jsonl(d / "kb.jsonl", KB)
    mcq = deflection_rec(
        sample_id="s2",
        question_id="q2",
        question="Which animal is this?",
        query_images=[],
        answer="B",
        aliases=[],
        numeric_ranges=[],
        source="mragbench",
        gold_contexts=[{"doc_id": "d-img", "modality": "image"}],
        options={"A": "Fox", "B": "Lynx", "C": "None of the above", "D": "Wolf"},
        label="B",
    )
    jsonl(d / "deflection.jsonl", [deflection_rec(), deflection_rec(sample_id="s1b"), mcq])
    return d


def test_deflection_loader_parses_samples_and_documents(deflection_dir):
    b = load_benchmark("deflection", str(deflection_dir / "deflection.jsonl"))
    assert b.kind == "deflection"
    s1, s1b, s2 = b.samples()
    assert s1.question_id == s1b.question_id == "q1" and s1.id != s1b.id
    assert s1.answers == ["1512", "the year 1512"] and s1.numeric_ranges == [(1500.0, 1520.0)]
    assert s1.gold_doc_ids == ["d-mm", "d-text"] and s1.source == "infoseek" and s1.entity_id == "Q1"
    assert s1.metadata["positive_modality"] == "multimodal" and s1.metadata["question_type"] == "numerical"
    assert Path(s1.images[0].path).is_absolute() and Path(s1.images[0].path).is_file()
    assert s2.metadata["positive_modality"] == "image" and s2.label == "B"
    assert [c.letter for c in s2.choices] == ["A", "B", "C", "D"] and s2.nota_letter() == "C"
    docs = {d.id: d for d in b.documents()}
    assert docs["d-img"].image.path == str(deflection_dir / "img/flag.png") and docs["d-text"].image is None
    roundtrip(b.samples())
    roundtrip(docs.values())
    fp = b.fingerprint()
    with open(deflection_dir / "kb.jsonl", "a") as fh:
        fh.write(json.dumps({"id": "d-extra", "modality": "text", "text": "x"}) + "\n")
    assert load_benchmark("deflection", str(deflection_dir / "deflection.jsonl")).fingerprint() != fp


def test_deflection_kb_option_and_missing_source(deflection_dir, tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    shutil.copy(deflection_dir / "deflection.jsonl", other / "samples.jsonl")
    shutil.copytree(deflection_dir / "img", other / "img")
    b = load_benchmark("deflection", str(other / "samples.jsonl"), kb=str(deflection_dir / "kb.jsonl"))
    assert len(b.samples()) == 3 and len(b.documents()) == 3
    assert load_benchmark("deflection", str(other / "samples.jsonl")).documents() == []
    with pytest.raises(InputError, match="needs a source"):
        load_benchmark("deflection")
    with pytest.raises(InputError, match="unknown option"):
        load_benchmark("deflection", str(other / "samples.jsonl"), kbb="x")


@pytest.mark.parametrize(
    "bad,line,field,text",
    [
        (lambda r: r.pop("answer"), 2, "answer", "Field required"),
        (lambda r: r.update(source="wikipedia"), 2, "source", "infoseek"),
        (
            lambda r: r.update(gold_contexts=[{"doc_id": "nope", "modality": "text"}]),
            2,
            "gold_contexts.0.doc_id",
            "nope",
        ),
        (lambda r: r.update(query_images=["img/missing.png"]), 2, "query_images.0", "missing.png"),
        (lambda r: r.update(sample_id="s1"), 2, "sample_id", "duplicate"),
    ],
)
def test_deflection_malformed_records_name_file_line_field(deflection_dir, bad, line, field, text):
    rows = [deflection_rec(), deflection_rec(sample_id="s9")]
    bad(rows[1])
    path = jsonl(deflection_dir / "bad.jsonl", rows)
    with pytest.raises(InputError) as ei:
        load_benchmark("deflection", str(path)).samples()
    err = ei.value
    assert (err.path, err.line, err.field) == (str(path), line, field) and text in str(err)
    assert f"{path}:{line}" in str(err) and f"field '{field}'" in str(err)


def test_deflection_invalid_json_and_missing_kb_image(deflection_dir):
    path = jsonl(deflection_dir / "broken.jsonl", [deflection_rec(), "{not json"])
    with pytest.raises(InputError, match=r"broken\.jsonl:2: invalid JSON"):
        load_benchmark("deflection", str(path)).samples()
    jsonl(deflection_dir / "kb.jsonl", KB + [{"id": "d-gone", "modality": "image", "image": "img/gone.png"}])
    with pytest.raises(InputError) as ei:
        load_benchmark("deflection", str(deflection_dir / "deflection.jsonl")).documents()
    assert ei.value.line == 4 and ei.value.field == "image" and "d-gone" in str(ei.value)


# ------------------------------------------------------------------------------------- knowhal


def knowhal_pair(pid="p1", dim="R"):
    pos = {
        "id": f"{pid}-pos",
        "pair_id": pid,
        "entity_id": "Q5",
        "image": "img/e.png",
        "domain": "Landmarks",
        "category": "bridge",
        "dimension": dim,
        "polarity": "positive",
        "question": "Where is the boat relative to the bridge?",
    }
    if dim == "R":
        pos.update(options={"A": "Under it", "B": "On it", "C": "Left of it", "D": "Above it"}, label="A")
    else:
        pos.update(answers=["1932", "in 1932"])
    neg = {
        **pos,
        "id": f"{pid}-neg",
        "polarity": "negative",
        "question": "Why is the boat flying over the bridge?",
        "answers": ["The boat is under the bridge."],
        "false_premise": "The boat is not above the bridge.",
        "strategy": "spatial relation",
    }
    neg.pop("options", None), neg.pop("label", None)
    return [pos, neg]


def test_knowhal_loader(tmp_path):
    png(tmp_path / "img/e.png")
    path = jsonl(tmp_path / "kh.jsonl", knowhal_pair("p1", "R") + knowhal_pair("p2", "K"))
    b = load_benchmark("knowhal", str(path))
    assert b.kind == "knowhal" and b.documents() == []
    s = {x.id: x for x in b.samples()}
    r = s["p1-pos"]
    assert r.label == "A" and [c.text for c in r.choices][0] == "Under it"
    assert {
        "pair_id": "p1",
        "dimension": "R",
        "dimension_name": "Relation",
        "polarity": "positive",
        "domain": "Landmarks",
        "category": "bridge",
    }.items() <= r.metadata.items()
    neg = s["p2-neg"]
    assert neg.answers == [] and neg.metadata["reference_answers"] == ["The boat is under the bridge."]
    assert neg.metadata["false_premise"] and neg.metadata["strategy"] == "spatial relation"
    assert s["p2-pos"].answers == ["1932", "in 1932"]
    roundtrip(b.samples())


def test_knowhal_malformed_and_incomplete_pairs(tmp_path):
    png(tmp_path / "img/e.png")
    rows = knowhal_pair("p1", "R")
    rows[0].pop("label")
    path = jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(InputError) as ei:
        load_benchmark("knowhal", str(path)).samples()
    assert ei.value.line == 1 and "Relation" in str(ei.value) and str(path) in str(ei.value)
    rows = knowhal_pair("p1", "K") + [knowhal_pair("p2", "K")[0]]
    path = jsonl(tmp_path / "half.jsonl", rows)
    with pytest.raises(InputError, match=r"half\.jsonl:3.*pair 'p2'"):
        load_benchmark("knowhal", str(path)).samples()
    rows = knowhal_pair("p1", "K")
    rows[1]["dimension"] = "hallucination"
    with pytest.raises(InputError) as ei:
        load_benchmark("knowhal", str(jsonl(tmp_path / "dim.jsonl", rows))).samples()
    assert (ei.value.line, ei.value.field) == (2, "dimension")


# --------------------------------------------------------------------------------- humblebench

HB_ROWS = [
    {
        "question_id": 1,
        "question": "What is on the table?\nA. A cup\nB. A cat\nC. A lamp\nD. A book\nE. None of the above",
        "label": "B",
        "type": "Object",
    },
    {
        "question_id": 2,
        "question": "What colour is the car?\nA.Red\nB.Blue\nC.Green\nD.White\nE.None of above",
        "label": "E",
        "type": "Attribute",
    },
    {
        "question_id": 3,
        "question": "Where is the dog?\nA. Left of the tree\nB. On the tree\nD. Under the tree\nE. None of the above",
        "label": "D",
        "type": "Relation",
    },
]


def test_parse_options_handles_both_spacings_gaps_and_nota_text():
    stem, ch, _ = parse_options(HB_ROWS[1]["question"])
    assert stem == "What colour is the car?" and [c.text for c in ch] == [
        "Red",
        "Blue",
        "Green",
        "White",
        "None of above",
    ]
    assert [c.is_nota for c in ch] == [False] * 4 + [True]
    _, ch, _ = parse_options(HB_ROWS[2]["question"])
    assert [c.letter for c in ch] == ["A", "B", "D", "E"]
    for bad in ("No options here", "A. only\nB. options", "Stem\nA. x\nA. y"):
        with pytest.raises(ValueError):
            parse_options(bad)


def _check_hb(samples, name="humblebench"):
    assert [s.question_id for s in samples] == ["1", "2", "3"]
    assert [s.label for s in samples] == ["B", "E", "D"]
    assert [s.metadata["type"] for s in samples] == ["Object", "Attribute", "Relation"]
    assert all(s.nota_letter() == "E" and s.benchmark == name for s in samples)
    assert samples[0].question == "What is on the table?" and samples[0].choices[1].text == "A cat"
    assert samples[1].metadata["raw_question"] == HB_ROWS[1]["question"]
    for s in samples:
        assert Path(s.images[0].path).is_file()
    roundtrip(samples)


def test_humblebench_imagefolder(tmp_path):
    root = tmp_path / "hb"
    for i in (1, 2):
        png(root / f"images/{i}.png", (i * 50, 0, 0))
    rows = [dict(r, file_name=f"images/{1 if r['question_id'] < 3 else 2}.png") for r in HB_ROWS]
    jsonl(root / "metadata.jsonl", rows)
    b = load_benchmark("humblebench", str(root))
    _check_hb(b.samples())
    assert b.samples()[0].images[0].path == b.samples()[1].images[0].path  # several questions per image
    assert validate_file(root, "humblebench") == []


def test_humblebench_parquet_writes_images_once_content_addressed(tmp_path):
    import datasets

    blobs = [png(tmp_path / f"src/{i}.png", (10 * i, 100, 50)) for i in range(3)]
    cols = {k: [r[k] for r in HB_ROWS] for k in ("question_id", "question", "label", "type")}
    cols["image"] = [{"bytes": b, "path": f"{i}.png"} for i, b in enumerate(blobs)]
    ds = datasets.Dataset.from_dict(cols).cast_column("image", datasets.Image())
    pq = tmp_path / "data" / "train-00000-of-00001.parquet"
    pq.parent.mkdir()
    ds.to_parquet(str(pq))
    for source in (pq, pq.parent):
        samples = load_benchmark("humblebench", str(source)).samples()
        _check_hb(samples)
        for s, blob in zip(samples, blobs):
            ref = s.images[0]
            assert ref.sha256 == hashlib.sha256(blob).hexdigest() == Path(ref.path).stem
            assert Path(ref.path).read_bytes() == blob and str(tmp_path / "home" / "images") in ref.path
    mtime = Path(samples[0].images[0].path).stat().st_mtime_ns
    load_benchmark("humblebench", str(pq)).samples()
    assert Path(samples[0].images[0].path).stat().st_mtime_ns == mtime


def test_humblebench_jsonl_with_result_style_image_dicts(tmp_path):
    png(tmp_path / "imgs/238772.jpg")
    rows = [dict(r, image={"bytes": None, "path": "/data/author/images/238772.jpg"}, prediction="C") for r in HB_ROWS]
    path = jsonl(tmp_path / "Model.jsonl", rows)
    with pytest.raises(InputError) as ei:
        load_benchmark("humblebench", str(path)).samples()
    assert (ei.value.line, ei.value.field) == (1, "image.path") and "question_id 1" in str(ei.value)
    b = load_benchmark("humblebench", str(path), images=str(tmp_path / "imgs"))
    _check_hb(b.samples())


def _fake_hub_cache(tmp_path: Path, src: Path, repo: str) -> Path:
    """Build the datasets cache that `load_dataset(repo)` reads offline, from a local parquet."""
    import datasets

    cache = tmp_path / "hf_cache"
    ds = datasets.load_dataset("parquet", data_files=str(src), split="train", cache_dir=str(cache))
    built = Path(ds.cache_files[0]["filename"]).parent
    ns, name = repo.split("/")
    target = cache / f"{ns}___{name}" / "default" / "0.0.0" / built.name
    shutil.copytree(built, target)
    (target / Path(ds.cache_files[0]["filename"]).name).rename(target / f"{name}-train.arrow")
    return cache


def test_humblebench_from_hub_cache_offline_and_missing(tmp_path, monkeypatch):
    import datasets
    import huggingface_hub.constants

    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True, raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    blobs = [png(tmp_path / f"src/{i}.png", (0, 10 * i, 90)) for i in range(3)]
    cols = {k: [r[k] for r in HB_ROWS] for k in ("question_id", "question", "label", "type")}
    cols["image"] = [{"bytes": b, "path": f"{i}.png"} for i, b in enumerate(blobs)]
    pq = tmp_path / "hub.parquet"
    datasets.Dataset.from_dict(cols).cast_column("image", datasets.Image()).to_parquet(str(pq))
    cache = _fake_hub_cache(tmp_path, pq, "mmragtest/humble-mini")
    b = load_benchmark("humblebench", repo="mmragtest/humble-mini", cache_dir=str(cache))
    _check_hb(b.samples())
    assert b.samples()[2].images[0].sha256 == hashlib.sha256(blobs[2]).hexdigest()
    assert len(b.fingerprint()) == 64
    with pytest.raises(InputError, match="huggingface-cli download maifoundations/HumbleBench"):
        load_benchmark("humblebench", cache_dir=str(tmp_path / "empty")).samples()


@pytest.mark.parametrize(
    "row,field,text",
    [
        ({"label": "F"}, "label", "A"),
        ({"question": "Stem only, no options"}, "question", "no option lines"),
        ({"question": "Stem\nA. x\nB. y\nC. z"}, "label", "not one of the options"),
        ({"file_name": "images/missing.png"}, "file_name", "missing.png"),
        ({"type": "Counting"}, "type", "Object"),
    ],
)
def test_humblebench_malformed_records(tmp_path, row, field, text):
    png(tmp_path / "hb/images/1.png")
    rows = [dict(r, file_name="images/1.png") for r in HB_ROWS]
    rows[2].update(row)
    path = jsonl(tmp_path / "hb/metadata.jsonl", rows)
    with pytest.raises(InputError) as ei:
        load_benchmark("humblebench", str(tmp_path / "hb")).samples()
    assert (ei.value.path, ei.value.line, ei.value.field) == (str(path), 3, field) and text in str(ei.value)


# ------------------------------------------------------------------------------------ validate


def test_validate_reports_every_problem_with_line_and_field(deflection_dir):
    good = deflection_rec()
    rows = [
        good,
        "{oops",
        dict(deflection_rec(sample_id="s2"), answer="", source="web"),
        deflection_rec(
            sample_id="s3",
            gold_contexts=[{"doc_id": "ghost", "modality": "text"}, {"doc_id": "d-img", "modality": "text"}],
            query_images=["img/nothere.png"],
            negative_doc_ids=["phantom"],
        ),
        deflection_rec(),
    ]
    path = jsonl(deflection_dir / "deflection.jsonl", rows)
    got = {(p.line, p.field) for p in validate_file(path, "deflection")}
    assert got == {
        (2, None),
        (3, "answer"),
        (3, "source"),
        (4, "gold_contexts.0.doc_id"),
        (4, "gold_contexts.1.modality"),
        (4, "query_images.0"),
        (4, "negative_doc_ids.0"),
        (5, "sample_id"),
    }
    assert validate_file(deflection_dir / "kb.jsonl", "kb") == []
    jsonl(deflection_dir / "kb2.jsonl", KB + [{"id": "d-text", "modality": "image"}, {"id": "x", "modality": "text"}])
    kb_problems = validate_file(deflection_dir / "kb2.jsonl", "kb")
    assert [(p.line, p.field) for p in kb_problems] == [(4, None), (5, None)]
    assert "needs 'image'" in kb_problems[0].message and "non-empty 'text'" in kb_problems[1].message
    with pytest.raises(InputError, match="no validator"):
        validate_file(path, "mmlu")


def test_validate_knowhal_and_humblebench(tmp_path):
    png(tmp_path / "img/e.png")
    rows = (
        knowhal_pair("p1", "R") + [knowhal_pair("p2", "K")[0]] + [dict(knowhal_pair("p3", "K")[1], image="img/x.png")]
    )
    problems = validate_file(jsonl(tmp_path / "kh.jsonl", rows), "knowhal")
    assert {(p.line, p.field) for p in problems} == {(3, "pair_id"), (4, "image"), (4, "pair_id")}
    rows = [dict(r, file_name="img/e.png") for r in HB_ROWS]
    rows[0]["label"] = "Z"
    rows[1]["question"] = "What colour is the car?\nA. Red\nB. Blue"
    problems = validate_file(jsonl(tmp_path / "metadata.jsonl", rows), "humblebench")
    assert [(p.line, p.field) for p in problems] == [(1, "label"), (2, "label"), (2, "question")]


def test_validate_command_exit_codes(deflection_dir):
    from typer.testing import CliRunner

    from mmrag.commands.benchmark_validate import app

    runner = CliRunner()
    ok = runner.invoke(app, ["validate", str(deflection_dir / "deflection.jsonl"), "--benchmark", "deflection"])
    assert ok.exit_code == 0, ok.output
    jsonl(deflection_dir / "bad.jsonl", [deflection_rec(), dict(deflection_rec(sample_id="s2"), answer="")])
    bad = runner.invoke(app, ["validate", str(deflection_dir / "bad.jsonl"), "--benchmark", "deflection"])
    assert bad.exit_code == 1 and "bad.jsonl:2: field 'answer'" in bad.output
    unknown = runner.invoke(app, ["validate", str(deflection_dir / "bad.jsonl"), "--benchmark", "nope"])
    assert unknown.exit_code == 2


def test_registry_lists_every_builtin_benchmark():
    assert {"demo", "demo-humblebench", "demo-knowhal", "humblebench", "knowhal", "deflection"} <= set(
        BENCHMARKS.names()
    )
    with pytest.raises(InputError, match="unknown benchmark"):
        load_benchmark("no-such-benchmark")
    assert isinstance(Sample, type) and isinstance(Document, type)


def test_deflection_finds_the_builders_kb_beside_the_file(deflection_dir):
    (deflection_dir / "kb.jsonl").rename(deflection_dir / "mine.kb.jsonl")
    shutil.copy(deflection_dir / "deflection.jsonl", deflection_dir / "mine.jsonl")
    b = load_benchmark("deflection", str(deflection_dir / "mine.jsonl"))
    assert b.kb_path == deflection_dir / "mine.kb.jsonl" and len(b.documents()) == 3
    assert validate_file(deflection_dir / "mine.jsonl", "deflection") == []
    jsonl(deflection_dir / "mine.kb.jsonl", KB[:1])
    assert {p.field for p in validate_file(deflection_dir / "mine.jsonl", "deflection")} == {"gold_contexts.0.doc_id"}
