"""Exports other tools open: Inspect AI eval logs (read back with inspect_ai's own reader) and
lmms-eval's ``--log_samples`` JSONL plus results JSON (read back line by line)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cli_runs import cli_run

from mmrag.cli import main
from mmrag.errors import InputError
from mmrag.export import export
from mmrag.export.lmms import read_samples
from mmrag.runs import load
from mmrag.schema import OUTCOMES


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory, module_home) -> Path:
    run = tmp_path_factory.mktemp("export") / "run"
    cli_run(
        run, "--no-cache", model="context-reader,always-deflect", scenarios="parametric,oracle,adversarial", limit=4
    )
    return run


def test_inspect_reads_the_log_with_the_samples_and_scores_of_load(demo_run, tmp_path, capsys):
    log_api = pytest.importorskip("inspect_ai.log")
    assert main(["export", str(demo_run), "--format", "inspect", "--out", str(tmp_path / "inspect")]) == 0
    df = load(demo_run)
    logs = [log_api.read_eval_log(str(p)) for p in sorted((tmp_path / "inspect").glob("*.eval"))]
    assert len(logs) == df["model"].nunique() == 2
    assert sum(len(lg.samples) for lg in logs) == len(df)
    by_key = df.set_index("key")
    for lg in logs:
        assert lg.status == "success" and lg.eval.task == "mmrag/demo"
        rows = by_key.loc[[s.id for s in lg.samples]]
        assert set(rows["model"]) == {lg.eval.model}
        for s in lg.samples:
            row = by_key.loc[s.id]
            value = s.scores["mmrag"].value
            assert {o: bool(value[o]) for o in OUTCOMES} == {o: bool(row[o]) for o in OUTCOMES}
            assert s.output.completion == row["response"]
            assert s.metadata["scenario_id"] == row["scenario_id"] and s.metadata["sample_id"] == row["sample_id"]
            assert len(s.metadata["contexts"]) == row["n_contexts"]
            assert "source" in s.metadata
        means = {sc.name: sc.metrics["mean"].value for sc in lg.results.scores}
        for o in OUTCOMES:
            assert means[o] == pytest.approx(rows[o].mean())
    oracle = [s for lg in logs for s in lg.samples if s.metadata["scenario"]["kind"] == "oracle"]
    assert oracle and all(c["role"] == "gold" for s in oracle for c in s.metadata["contexts"])


def test_lmms_eval_samples_round_trip(demo_run, tmp_path):
    paths = export(demo_run, "lmms-eval", tmp_path / "lmms")
    df = load(demo_run).set_index("key")
    sample_files = [p for p in paths if p.suffix == ".jsonl"]
    results = [p for p in paths if p.name.endswith("_results.json")]
    assert len(results) == 2 and len(sample_files) == 2 * 3  # per model: one task per scenario
    seen = 0
    for f in sample_files:
        lines = read_samples(f)
        assert [x["doc_id"] for x in lines] == list(range(len(lines)))
        for x in lines:
            assert set(x) >= {
                "doc_id",
                "doc",
                "target",
                "arguments",
                "resps",
                "filtered_resps",
                "doc_hash",
                "prompt_hash",
                "target_hash",
                *OUTCOMES,
            }
            row = df.loc[x["doc"]["key"]]
            assert x["resps"] == [[row["response"]]] and x["doc"]["question"] == row["question"]
            assert {o: bool(x[o]) for o in OUTCOMES} == {o: bool(row[o]) for o in OUTCOMES}
            seen += 1
    assert seen == len(df)
    res = json.loads(results[0].read_text())
    assert set(res) >= {"results", "configs", "versions", "n-shot", "higher_is_better", "n-samples", "config", "date"}
    task, metrics = next(iter(res["results"].items()))
    lines = read_samples(next(f for f in sample_files if f.parent == results[0].parent and task in f.name))
    assert metrics["alias"] == task and metrics["correct,none"] == pytest.approx(
        sum(x["correct"] for x in lines) / len(lines)
    )
    assert "correct_stderr,none" in metrics and res["n-samples"][task]["effective"] == len(lines)


def test_bad_requests_fail_clearly(demo_run, tmp_path, monkeypatch, capsys):
    assert main(["export", str(demo_run), "--format", "csv"]) != 0
    assert "unknown export format 'csv'" in capsys.readouterr().err
    assert main(["export", str(tmp_path), "--format", "lmms-eval"]) != 0
    assert "manifest.json" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # inspect_ai not installed
    with pytest.raises(InputError, match=r"mmrag\[inspect\]"):
        export(demo_run, "inspect", tmp_path / "none")
    assert not list((tmp_path / "none").glob("*.eval"))
