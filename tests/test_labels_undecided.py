"""The labels side of the evidence rule: the four confusions of ``judge-agreement`` (overall and
``--by`` any column), ``mmrag label --undecided`` (undecided replies first; a person's label
settles them), the verdict's evidence on the labelling page, and who settled each reply (rule,
LLM, person) with the undecided share in the summary and the report."""

from __future__ import annotations

import json

import httpx
import pytest
from runfactory import build_run

import mmrag.labels as L
from mmrag.cli import main
from mmrag.labels.store import LabelFile
from mmrag.metrics.agreement import CONFUSIONS
from mmrag.runs import load

NAMES = [f"{t}→{j}" for t, j in CONFUSIONS]
CYCLE = ("correct", "deflection", "hallucination")


@pytest.fixture(scope="module")
def labelled_run(tmp_path_factory):
    """A run whose sample is labelled so that each class is sometimes confused with each other."""
    d = build_run(tmp_path_factory.mktemp("confusions"), full=True)
    sample = L.ensure_sample(d, load(d), n=120, seed=1)
    f = LabelFile(d, "ann")
    for i, key in enumerate(sample.keys):
        f.append(key, CYCLE[i % 3])
    return d


def _expected(pairs) -> dict[str, tuple[float | None, int]]:
    out = {}
    for t, j in CONFUSIONS:
        of_t = pairs[pairs["truth"] == t]
        out[f"{t}→{j}"] = ((100.0 * (of_t["outcome"] == j).mean()) if len(of_t) else None, len(of_t))
    return out


def test_judge_agreement_prints_the_four_confusions_overall_and_by_any_column(labelled_run, capsys):
    pairs = L.labelled_pairs(load(labelled_run), L.load(labelled_run))
    argv = ["judge-agreement", str(labelled_run), "--n-boot", "100", "--by", "source", "--by", "model"]
    assert main([*argv, "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    for name, (value, n) in _expected(pairs).items():
        assert res["confusions"][name]["n"] == n
        assert res["confusions"][name]["value"] == pytest.approx(value)
    assert sum(v["value"] > 0 for v in res["confusions"].values()) >= 3  # the fixture does confuse
    for field in ("source", "model"):
        for value, block in res["by"][field].items():
            want = _expected(pairs[pairs[field].astype(str) == value])
            assert {k: v["n"] for k, v in block["confusions"].items()} == {k: n for k, (_, n) in want.items()}
    assert main(argv) == 0
    text = capsys.readouterr().out
    lines = [ln for ln in text.splitlines() if ln.strip().startswith("confusions (people → judge)")]
    n_groups = 1 + len(res["by"]["source"]) + len(res["by"]["model"])
    assert len(lines) == n_groups and all(all(f"{k}=" in ln for k in NAMES) for ln in lines)


def test_the_two_file_form_prints_them_too(tmp_path, capsys):
    rows = [("hallucination", "correct"), ("correct", "hallucination"), ("deflection", "hallucination")]
    rows += [("hallucination", "deflection"), ("hallucination", "hallucination"), ("correct", "correct")]
    a, b = tmp_path / "people.jsonl", tmp_path / "judge.jsonl"
    a.write_text("".join(json.dumps({"id": i, "label": t, "kind": "k"}) + "\n" for i, (t, _) in enumerate(rows)))
    b.write_text("".join(json.dumps({"id": i, "outcome": j}) + "\n" for i, (_, j) in enumerate(rows)))
    assert main(["judge-agreement", str(a), str(b), "--json", "--by", "kind"]) == 0
    res = json.loads(capsys.readouterr().out)
    got = {k: (round(v["value"], 1), v["n"]) for k, v in res["confusions"].items()}
    assert got == {
        "hallucination→correct": (33.3, 3),
        "correct→hallucination": (50.0, 2),
        "deflection→hallucination": (100.0, 1),
        "hallucination→deflection": (33.3, 3),
    }
    assert res["by"]["kind"]["k"]["confusions"] == res["confusions"]
    assert main(["judge-agreement", str(a), str(b), "--by", "kind"]) == 0
    assert capsys.readouterr().out.count("hallucination→deflection=33.3% of 3") == 2  # overall and kind=k
