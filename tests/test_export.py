"""Exports other tools open: Inspect AI eval logs (read back with inspect_ai's own reader) and
lmms-eval's ``--log_samples`` JSONL plus results JSON (read back line by line)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from cli_runs import cli_run

from mmrag.cli import main
from mmrag.errors import InputError
from mmrag.export import export
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
    """One log per benchmark x scenario x model, each sample as Inspect shows its own: the question
    first in ``input``, the system prompt as the system message, the reply as the assistant turn,
    the verdict as the score's value, usage summed into ``stats.model_usage``, images inside."""
    log_api = pytest.importorskip("inspect_ai.log")
    assert main(["export", str(demo_run), "--format", "inspect", "--out", str(tmp_path / "inspect")]) == 0
    df = load(demo_run)
    paths = sorted((tmp_path / "inspect").glob("*.eval"))
    logs = [log_api.read_eval_log(str(p), resolve_attachments=True) for p in paths]
    assert len(logs) == df.groupby(["benchmark", "scenario_id", "model"]).ngroups == 6
    assert sum(len(lg.samples) for lg in logs) == len(df)
    by_cell = df.set_index(["scenario_id", "model", "sample_id"])
    images = 0
    for lg in logs:
        scenario_id = lg.eval.metadata["scenario_id"]
        label = df.loc[df["scenario_id"] == scenario_id, "scenario"].iloc[0]
        assert lg.status == "success" and lg.eval.task == f"mmrag/demo/{label}"
        assert lg.eval.dataset.samples == len(lg.samples) == lg.results.total_samples
        assert lg.eval.task_args["kind"] == label.split()[0]
        rows = []
        for s in lg.samples:
            row = by_cell.loc[(scenario_id, lg.eval.model, s.metadata["sample_id"])]
            rows.append(row)
            assert s.id == f"{s.metadata['sample_id']}/{label.replace(' ', '_')}"
            assert s.scores["mmrag"].value == row["outcome"]
            assert s.scores["mmrag"].explanation.startswith(row["outcome"])
            assert s.scores["mmrag"].answer == (
                row["extracted"] if isinstance(row["extracted"], str) else row["response"]
            )
            assert s.output.completion == row["response"]
            first = s.input[0]
            assert first.role == "user" and first.content[0].text == row["question"]
            roles = [m.role for m in s.messages]
            assert roles[0] == "system" and roles[-1] == "assistant" and s.messages[-1].text == row["response"]
            parts = [p for m in s.messages for p in (m.content if isinstance(m.content, list) else [])]
            embedded = [p.image for p in parts if p.type == "image"]
            assert all(u.startswith("data:image/") for u in embedded)
            images += len(embedded)
            assert len(s.metadata["contexts"]) == row["n_contexts"]
        metrics = lg.results.scores[0].metrics
        for o in OUTCOMES:
            assert metrics[o].value == pytest.approx(sum(bool(r[o]) for r in rows) / len(rows))
        assert lg.eval.model in lg.stats.model_usage
    assert images > 0  # the demo's question images travel inside the logs
    oracle = [s for lg in logs for s in lg.samples if s.metadata["scenario"]["kind"] == "oracle"]
    assert oracle and all(c["role"] == "gold" for s in oracle for c in s.metadata["contexts"])


def test_bad_requests_fail_clearly(demo_run, tmp_path, monkeypatch, capsys):
    assert main(["export", str(demo_run), "--format", "csv"]) != 0
    assert "unknown export format 'csv'" in capsys.readouterr().err
    assert main(["export", str(tmp_path), "--format", "lmms-eval"]) != 0
    assert "manifest.json" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # inspect_ai not installed
    with pytest.raises(InputError, match=r"mmrag\[inspect\]"):
        export(demo_run, "inspect", tmp_path / "none")
    assert not list((tmp_path / "none").glob("*.eval"))


def test_inspect_score_explains_the_verdict_with_its_evidence(tmp_path):
    """The judge's evidence (the step that decided, the span it read, the reference, the rule)
    is the score's explanation, readable in Inspect's scoring tab."""
    log_api = pytest.importorskip("inspect_ai.log")
    from runfactory import deflection_records, write_run

    from mmrag.schema import Evidence

    recs = [r for r in deflection_records(tmp_path, n_questions=1, full=False) if r.response.error is None][:3]
    ev = Evidence(step="match", span="Paris", start=4, end=9, reference="Paris", rule="the reference appears")
    recs[0].verdict = recs[0].verdict.model_copy(
        update={"outcome": "correct", "reason": "gives the reference", "evidence": ev}
    )
    run = write_run(tmp_path / "run", recs)
    paths = export(run, "inspect", tmp_path / "out")
    samples = {s.metadata["key"]: s for p in paths for s in log_api.read_eval_log(str(p)).samples}
    score = samples[recs[0].key].scores["mmrag"]
    assert score.value == "correct"
    assert score.explanation.startswith("correct: gives the reference")
    for part in ("decided by match", "«Paris» (chars 4-9)", "reference «Paris»", "the reference appears"):
        assert part in score.explanation
    assert score.metadata["evidence"]["span"] == "Paris"
