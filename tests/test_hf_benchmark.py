"""Bring your own dataset: ``hf:PATH_OR_ID`` + a field mapping, from a ``save_to_disk`` folder made
here with a real ``Image`` column, through the CLI, YAML and ``mmrag.benchmarks.from_hf``."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from PIL import Image

import mmrag
from mmrag.benchmarks import from_hf, load_benchmark
from mmrag.cli import main
from mmrag.errors import InputError
from mmrag.runs import load

datasets = pytest.importorskip("datasets")

ROWS = [
    {
        "qid": "fr",
        "q": "What is the capital of Freedonia?",
        "a": ["Fredville", "Fredville City"],
        "colour": (200, 10, 10),
        "ctx": "The capital of Freedonia is Fredville.",
    },
    {
        "qid": "sy",
        "q": "What is the capital of Sylvania?",
        "a": ["Sylvan"],
        "colour": (10, 200, 10),
        "ctx": "The capital of Sylvania is Sylvan.",
    },
    {
        "qid": "gr",
        "q": "What is the capital of Grand Fenwick?",
        "a": ["Fenwick Town"],
        "colour": (10, 10, 200),
        "ctx": "The capital of Grand Fenwick is Fenwick Town.",
    },
]
FIELDS = {"id": "qid", "question": "q", "answer": "a", "image": "img", "context": "ctx"}


def _png(colour) -> Image.Image:
    return Image.new("RGB", (12, 8), colour)


def _dataset(rows=ROWS):
    features = datasets.Features(
        {
            "qid": datasets.Value("string"),
            "q": datasets.Value("string"),
            "a": datasets.Sequence(datasets.Value("string")),
            "img": datasets.Image(),
            "ctx": datasets.Value("string"),
        }
    )
    return datasets.Dataset.from_dict(
        {
            "qid": [r["qid"] for r in rows],
            "q": [r["q"] for r in rows],
            "a": [r["a"] for r in rows],
            "img": [_png(r["colour"]) for r in rows],
            "ctx": [r["ctx"] for r in rows],
        },
        features=features,
    )


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("hf") / "capitals"
    _dataset().save_to_disk(str(folder))
    return folder


def test_a_saved_folder_loads_with_its_images_and_contexts(saved, module_home):
    bench = load_benchmark(f"hf:{saved}", fields=FIELDS)
    samples = bench.samples()
    assert [s.id for s in samples] == ["fr", "sy", "gr"] and bench.kind == "deflection"
    fr = samples[0]
    assert fr.question == ROWS[0]["q"] and fr.answers == ["Fredville", "Fredville City"] and fr.source == "hf"
    [img] = fr.images
    assert img.sha256 and Image.open(img.path).getpixel((0, 0)) == (200, 10, 10)  # the pixels of the row
    docs = {d.id: d for d in bench.documents()}
    assert fr.gold_doc_ids == ["fr#context0"] and docs["fr#context0"].text == ROWS[0]["ctx"]
    assert bench.fingerprint() == load_benchmark("hf", str(saved), fields=FIELDS).fingerprint()
    assert bench.fingerprint() != load_benchmark(f"hf:{saved}", fields={**FIELDS, "context": "q"}).fingerprint()


def test_a_missing_mapped_field_names_the_field(saved):
    with pytest.raises(InputError) as err:
        load_benchmark(f"hf:{saved}", fields={**FIELDS, "question": "question_text"})
    assert err.value.field == "fields.question" and "no column 'question_text'" in str(err.value)
    assert "qid" in str(err.value)  # the columns it does have are listed
    with pytest.raises(InputError, match="unknown field 'questoin'"):
        load_benchmark(f"hf:{saved}", fields="questoin=q")
    with pytest.raises(InputError, match="no column for 'question'"):
        load_benchmark(f"hf:{saved}", fields={"answer": "a"})
    with pytest.raises(InputError, match="cannot load this dataset"):
        load_benchmark(f"hf:{saved.parent / 'nope'}", fields=FIELDS)


def test_bad_rows_name_their_row_and_column(tmp_path):
    rows = [dict(ROWS[0]), {**ROWS[1], "q": "  "}]
    with pytest.raises(InputError) as err:
        from_hf(_dataset(rows), FIELDS, register=False).samples()
    assert (err.value.line, err.value.field) == (2, "q") and "empty" in str(err.value)
    dup = [dict(ROWS[0]), dict(ROWS[0])]
    with pytest.raises(InputError, match="duplicate id 'fr'"):
        from_hf(_dataset(dup), FIELDS, register=False).samples()
    broken = _dataset().cast_column("img", datasets.Image(decode=False))
    broken = broken.map(
        lambda r, i: {"img": {"bytes": b"not a png" if i == 2 else r["img"]["bytes"], "path": None}}, with_indices=True
    )
    with pytest.raises(InputError) as err:
        from_hf(broken, FIELDS, register=False).samples()
    assert (err.value.line, err.value.field) == (3, "img") and "cannot be decoded" in str(err.value)
    mcq = datasets.Dataset.from_dict({"question": ["Which colour?"], "options": [["red", "green"]], "answer_idx": [5]})
    with pytest.raises(InputError, match="names none of the 2 options"):
        from_hf(mcq, {"choices": "options", "label": "answer_idx"}, register=False).samples()
    splits = datasets.DatasetDict({"train": _dataset(), "test": _dataset()})
    with pytest.raises(InputError, match="splits test, train"):
        from_hf(splits, FIELDS, register=False)
    assert len(from_hf(splits, FIELDS, split="test", register=False).samples()) == 3


def test_multiple_choice_columns_become_lettered_options():
    ds = datasets.Dataset.from_dict(
        {
            "question": ["Which colour is the square?"],
            "options": [["red", "green", "None of the above"]],
            "gold": ["green"],
        }
    )
    [s] = from_hf(ds, {"choices": "options", "label": "gold"}, register=False).samples()
    assert [c.letter for c in s.choices] == ["A", "B", "C"] and s.choices[2].is_nota
    assert s.label == "B" and s.answers == ["green"]


def test_the_cli_runs_an_hf_dataset_and_yaml_names_it_too(saved, tmp_path, module_home, capsys):
    run = tmp_path / "run"
    assert (
        main(
            [
                "run",
                "-b",
                f"hf:{saved}",
                "--field",
                "id=qid,question=q,answer=a",
                "--field",
                "image=img,context=ctx",
                "-m",
                "context-reader",
                "--scenarios",
                "parametric,oracle,adversarial",
                "--distractors",
                "1",
                "--out",
                str(run),
            ]
        )
        == 0
    )
    df = load(run)
    assert len(df) == 9 and set(df["kind"]) == {"parametric", "oracle", "adversarial"}
    assert set(df["question"]) == {r["q"] for r in ROWS} and df[df["kind"] == "oracle"]["n_gold"].eq(1).all()
    adversarial = df[df["kind"] == "adversarial"]  # negatives mined from the other rows' passages
    assert adversarial["n_gold"].eq(0).all() and adversarial["n_negative"].eq(1).all()
    cfg = tmp_path / "run.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "benchmarks": [{"name": f"hf:{saved}", "options": {"fields": FIELDS}}],
                "models": ["always-deflect"],
                "scenarios": [{"kind": "parametric"}],
            }
        )
    )
    assert main(["run", "--config", str(cfg), "--out", str(tmp_path / "yaml")]) == 0
    assert len(load(tmp_path / "yaml")) == 3
    assert (
        main(["run", "-b", "demo", "--field", "question=q", "-m", "always-deflect", "--out", str(tmp_path / "x")]) != 0
    )
    assert "--field" in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_an_in_memory_dataset_runs_through_the_python_api(tmp_path, module_home):
    from_hf(_dataset(), FIELDS, name="capitals-mem")
    result = mmrag.run(
        benchmarks=[{"name": "capitals-mem"}],
        models=["always-deflect"],
        scenarios=[{"kind": "parametric"}],
        out=tmp_path / "mem",
    )
    assert result.new_records == 3 and result.failure is None


def test_image_lists_and_path_columns(tmp_path):
    pngs = [_png((i * 60, 0, 0)) for i in range(3)]
    features = datasets.Features(
        {
            "question": datasets.Value("string"),
            "answer": datasets.Value("string"),
            "image": datasets.List(datasets.Image()),
        }
    )
    ds = datasets.Dataset.from_dict(
        {"question": ["a?", "b?"], "answer": ["x", "y"], "image": [pngs[:2], pngs[2:]]}, features=features
    )
    assert [len(s.images) for s in from_hf(ds, register=False).samples()] == [2, 1]  # no mapping: own names
    pngs[0].save(tmp_path / "p0.png")
    by_path = datasets.Dataset.from_dict({"question": ["a?"], "answer": ["x"], "img": [str(tmp_path / "p0.png")]})
    [s] = from_hf(by_path, "image=img", register=False).samples()
    assert s.images[0].path == str(tmp_path / "p0.png")
    missing = datasets.Dataset.from_dict({"question": ["a?"], "answer": ["x"], "img": [str(tmp_path / "nope.png")]})
    with pytest.raises(InputError, match="image not found") as err:
        from_hf(missing, "image=img", register=False).samples()
    assert (err.value.line, err.value.field) == (1, "img")
