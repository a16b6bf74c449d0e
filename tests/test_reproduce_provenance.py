"""What ``mmrag reproduce`` and ``mmrag report --paper`` say produced their numbers, read from the
run: the data, the model (simulated or real), the judge id the run recorded beside the paper's
judge, and the judge's agreement with people when the run has labels."""

from __future__ import annotations

import json

import pandas as pd

from mmrag.cli import main
from mmrag.runs.frame import load


def test_provenance_of_real_data_and_a_real_model(tmp_path):
    """Read from the manifest and the frame: a benchmark read from a file is named with it, a real
    model by its fingerprint (credentials redacted), the judge by the id the run recorded."""
    from mmrag.reports.paper.provenance import provenance

    run = tmp_path / "run"
    run.mkdir()
    fp = "openai:some-vlm@https://user:s3cret@vlm.example/v1"
    manifest = {
        "config": {"benchmarks": [{"name": "deflection", "source": "data/bench.jsonl"}], "limit": None},
        "models": {"some-vlm": fp},
        "judge_id": "judge-from-manifest@7",
    }
    (run / "manifest.json").write_text(json.dumps(manifest))
    df = pd.DataFrame({"model": ["some-vlm"], "model_fingerprint": [fp], "judge_id": ["judge-from-manifest@7"]})
    p = provenance((run,), df, demo_benchmark="demo", paper_judge="GPT-4o (92.6 % agreement)")
    text = "\n".join(p.lines())
    assert "`deflection` read from `data/bench.jsonl`" in text and "demo world" not in text
    assert "`some-vlm`, a real model" in text and "s3cret" not in text
    assert "`judge-from-manifest@7`; the paper's judge: GPT-4o (92.6 % agreement)" in text
    assert "not a reproduction error" not in text  # the paper's data and a real model: comparable in kind
    assert p.caption("n = 1") == (
        "Ours: data deflection read from data/bench.jsonl; model some-vlm (real); judge judge-from-manifest@7 "
        "(paper: GPT-4o); n = 1."
    )


def test_paper_md_reports_the_judges_agreement_when_the_run_has_labels(module_home, tmp_path):
    """With labels (here: a labeller who agrees with the judge on all but one reply), paper.md gives
    the judge's measured agreement with people instead of "not measured"."""
    run = tmp_path / "run"
    assert main(["reproduce", "knowhal", "--model", "sim-vlm", "--limit", "12", "--out", str(tmp_path)]) == 0
    assert "not measured: the run has no labels" in (tmp_path / "paper.md").read_text()
    df = load(run)
    decided = df[df["outcome"].isin(["correct", "deflection", "hallucination"])].head(8)
    flip = {"correct": "hallucination", "hallucination": "correct", "deflection": "correct"}
    lines = [
        {"key": k, "label": flip[o] if i == 0 else o, "labeller": "ann"}
        for i, (k, o) in enumerate(zip(decided["key"], decided["outcome"]))
    ]
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert main(["label", str(run), "--import", str(tmp_path / "labels.jsonl")]) == 0
    assert main(["report", str(run), "--paper", "knowhal", "--out", str(tmp_path / "paper")]) == 0
    text = (tmp_path / "paper" / "paper.md").read_text()
    agree = 100.0 * (len(lines) - 1) / len(lines)
    assert f"{agree:.1f} % agreement, kappa " in text and f"on {len(lines)} replies labelled by ann" in text
    assert "not measured" not in text
