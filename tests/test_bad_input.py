"""Bad input: one clear error naming the file, line or field; a non-zero exit; nothing half-written.

Each case is a command line plus what the error must name.  Cases run in-process through
``mmrag.cli.main`` (the same code path as the console script) to keep the suite fast.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from PIL import Image

from mmrag.cli import main

GOOD_KB = {"id": "d1", "modality": "text", "text": "The capital of Varnholt is Quellmar.", "entity_id": "e1"}


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _jsonl(path: Path, rows: list) -> Path:
    return _write(path, "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))


def _defl(**over):
    rec = {"sample_id": "s1", "question_id": "q1", "question": "What is the capital of Varnholt?",
           "answer": "Quellmar", "gold_contexts": [{"doc_id": "d1", "modality": "text"}], "source": "demo"}
    rec.update(over)
    return rec


def _cases(t: Path) -> list[tuple[str, list[str], list[str], Path | None]]:
    """(name, argv, substrings the error must contain, a path that must NOT exist afterwards)."""
    out = t / "out"
    img = t / "img.png"
    Image.new("RGB", (8, 8), "red").save(img)
    corrupt = _write(t / "corrupt.png", "definitely not a png")
    _jsonl(t / "defl" / "kb.jsonl", [GOOD_KB])  # the knowledge base beside the deflection files
    cases = [
        ("config misspelt field", ["run", "--config", str(_write(t / "c1.yaml", "benchmarks: [{name: demo}]\nmodels: [{backend: always-deflect}]\nlimitt: 3\n"))], ["c1.yaml", "limitt"], out),
        ("config invalid yaml", ["run", "--config", str(_write(t / "c2.yaml", "benchmarks: [\n"))], ["c2.yaml", "YAML"], out),
        ("config missing", ["run", "--config", str(t / "nope.yaml")], ["nope.yaml", "not found"], out),
        ("config wrong type", ["run", "--config", str(_write(t / "c3.yaml", "benchmarks: [{name: demo}]\nmodels: [{backend: always-deflect}]\nbatch_size: many\n"))], ["c3.yaml", "batch_size"], out),
        ("unknown benchmark", ["run", "--benchmark", "nosuchbench", "--model", "always-deflect", "--out", str(out)], ["nosuchbench"], out),
        ("unknown model backend", ["run", "--benchmark", "demo", "--model", "nosuch:model", "--out", str(out)], ["nosuch"], out),
        ("unknown baseline", ["run", "--benchmark", "demo", "--model", "always-wrong", "--out", str(out)], ["always-wrong"], out),
        ("unknown scenario", ["run", "--benchmark", "demo", "--model", "always-deflect", "--scenarios", "oracel", "--out", str(out)], ["oracel", "--scenarios"], out),
        ("distractors not ints", ["run", "--benchmark", "demo", "--model", "always-deflect", "--distractors", "two", "--out", str(out)], ["--distractors"], out),
        ("distractors negative", ["run", "--benchmark", "demo", "--model", "always-deflect", "--scenarios", "realistic", "--distractors", "-1", "--out", str(out)], ["n-distractors"], out),
        ("unknown strictness", ["run", "--benchmark", "demo", "--model", "always-deflect", "--strictness", "harsh", "--out", str(out)], ["strictness"], out),
        ("unknown negative modality", ["run", "--benchmark", "demo", "--model", "always-deflect", "--scenarios", "realistic", "--negative-modality", "audio", "--out", str(out)], ["negative-modality"], out),
        ("resume without manifest", ["run", "--resume", str(t)], ["manifest.json"], None),
        ("source file missing", ["run", "--benchmark", "deflection", "--source", str(t / "missing.jsonl"), "--model", "always-deflect", "--out", str(out)], ["missing.jsonl"], out),
        ("deflection invalid json", ["run", "--benchmark", "deflection", "--source", str(_jsonl(t / "defl" / "a.jsonl", [_defl(), "{oops"])), "--model", "always-deflect", "--out", str(out)], ["a.jsonl:2"], out),
        ("deflection missing field", ["run", "--benchmark", "deflection", "--source", str(_jsonl(t / "defl" / "b.jsonl", [_defl(), {k: v for k, v in _defl(sample_id="s2").items() if k != "answer"}])), "--model", "always-deflect", "--out", str(out)], ["b.jsonl:2", "answer"], out),
        ("deflection missing image", ["run", "--benchmark", "deflection", "--source", str(_jsonl(t / "defl" / "c.jsonl", [_defl(query_images=["no_such.png"])])), "--model", "always-deflect", "--out", str(out)], ["c.jsonl", "no_such.png"], out),
        ("deflection corrupt image", ["run", "--benchmark", "deflection", "--source", str(_jsonl(t / "defl" / "d.jsonl", [_defl(query_images=[str(corrupt)])])), "--model", "always-deflect", "--out", str(out)], ["corrupt.png"], out),
        ("deflection unknown source", ["run", "--benchmark", "deflection", "--source", str(_jsonl(t / "defl" / "e.jsonl", [_defl(source="okvqa")])), "--model", "always-deflect", "--out", str(out)], ["e.jsonl:1", "source"], out),
        ("knowhal bad dimension", ["run", "--benchmark", "knowhal", "--source", str(_jsonl(t / "kh.jsonl", [{"id": "k1", "pair_id": "p1", "entity_id": "e1", "image": str(img), "dimension": "X", "polarity": "positive", "question": "Q?", "answers": ["a"]}])), "--model", "always-deflect", "--out", str(out)], ["kh.jsonl:1", "dimension"], out),
        ("humblebench bad label", ["run", "--benchmark", "humblebench", "--source", str(_jsonl(t / "hb" / "metadata.jsonl", [{"question_id": 1, "question": "Q?\nA. x\nB. y\nC. z\nD. w\nE. None of the above", "label": "F", "type": "Object", "file_name": "img.png"}])), "--model", "always-deflect", "--out", str(out)], ["metadata.jsonl:1", "label"], out),
        ("validate reports line and field", ["benchmark", "validate", str(_jsonl(t / "v.jsonl", [_defl(), _defl(gold_contexts=[])])), "--benchmark", "deflection"], ["v.jsonl", "2", "gold_contexts"], None),
        ("kb record missing text", ["index", "build", "--kb", str(_jsonl(t / "kb2.jsonl", [GOOD_KB, {"id": "d2", "modality": "text"}])), "--kind", "text", "--out", str(t / "idx_bad")], ["kb2.jsonl:2"], t / "idx_bad"),
        ("empty kb", ["index", "build", "--kb", str(_write(t / "kb3.jsonl", "")), "--kind", "text", "--out", str(t / "idx_empty")], ["kb3.jsonl", "empty"], t / "idx_empty"),
        ("index dir missing", ["index", "info", str(t / "no_index")], ["no_index"], None),
        ("judge input missing field", ["judge", "--input", str(_jsonl(t / "j.jsonl", [{"question": "q", "answers": ["a"], "response": "a"}, {"question": "q", "response": "a"}])), "--output", str(t / "j_out.jsonl")], ["j.jsonl:2", "answers"], t / "j_out.jsonl"),
        ("score predictions malformed", ["score", "humblebench", "--predictions", str(_jsonl(t / "p.jsonl", [{"question_id": 1}]))], ["p.jsonl:1"], None),
        ("sweep bad field", ["sweep", "--config", str(_write(t / "s.yaml", "name: x\naxes: {n_distractorz: [1, 2]}\n"))], ["s.yaml", "n_distractorz"], None),
        ("curate bad field", ["curate", "--config", str(_write(t / "cu.yaml", "benchmark: {name: demo}\ngating_models: [{backend: always-deflect}]\nkmin: 3\n"))], ["cu.yaml", "kmin"], None),
        ("api key env unset", ["run", "--benchmark", "demo", "--model", "openai:m", "--base-url", "http://127.0.0.1:9/v1", "--api-key-env", "MMRAG_TEST_UNSET_KEY", "--out", str(out)], ["MMRAG_TEST_UNSET_KEY"], out),
    ]
    return cases


def test_at_least_25_kinds(tmp_path):
    assert len(_cases(tmp_path)) >= 25


@pytest.mark.parametrize("idx", range(30))
def test_bad_input_case(idx, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("MMRAG_TEST_UNSET_KEY", raising=False)
    cases = _cases(tmp_path)
    if idx >= len(cases):
        pytest.skip("no such case")
    name, argv, needles, must_not_exist = cases[idx]
    code = main(argv)
    captured = capsys.readouterr()
    err = captured.err
    assert code != 0, f"{name}: exit code 0"
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert lines, f"{name}: no error printed"
    assert "Traceback" not in err, f"{name}: traceback instead of a clear error:\n{err}"
    for needle in needles:  # `validate` lists its problems on stdout and the count on stderr
        assert needle in err + captured.out, f"{name}: error does not name {needle!r}:\n{err}"
    if must_not_exist is not None:
        assert not must_not_exist.exists(), f"{name}: left {must_not_exist} behind"


def test_unwritable_output_directory(tmp_path, capsys):
    if os.geteuid() == 0:
        target = Path("/proc/mmrag-cannot-write-here")
    else:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        target = ro / "run"
    code = main(["run", "--benchmark", "demo", "--model", "always-deflect", "--limit", "2", "--scenarios", "parametric",
                 "--out", str(target)])
    err = capsys.readouterr().err
    assert code != 0 and str(target) in err and "not writable" in err
