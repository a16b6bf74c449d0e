"""`mmrag demo` end to end: the table the design predicts for the two baselines, and free re-runs."""

from __future__ import annotations

import json

import pytest

from mmrag.cli import main


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "run"
    assert main(["demo", "--out", str(out), "--limit", "120"]) == 0
    return out


def _rates(run_dir):
    summary = json.loads((run_dir / "summary.json").read_text())
    return {(g["scenario"]["kind"], g["model"]): g["rates"] for g in summary["groups"]}


def test_demo_writes_run_directory(demo_run):
    for name in ("manifest.json", "records", "objects", "summary.json", "summary.md"):
        assert (demo_run / name).exists(), name
    manifest = json.loads((demo_run / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert manifest["datasets"]["demo"] and manifest["templates"] and manifest["judge_id"]
    from mmrag.runs import read_records

    keys = [r.key for r in read_records(demo_run)]
    assert len(keys) == 120 * 4 * 2
    assert len(set(keys)) == len(keys)


def test_context_reader_shows_the_predicted_pattern(demo_run):
    r = _rates(demo_run)
    cr = "context-reader"
    assert r[("parametric", cr)]["correct"] <= 2.0
    assert r[("parametric", cr)]["deflection"] >= 98.0
    assert r[("oracle", cr)]["correct"] > r[("realistic", cr)]["correct"] + 5.0
    assert r[("adversarial", cr)]["hallucination"] > 0.0
    for kind in ("parametric", "oracle", "realistic", "adversarial"):
        assert r[(kind, "always-deflect")]["deflection"] == 100.0


def test_rerun_into_new_directory_makes_no_model_calls(demo_run, tmp_path, capsys):
    out = tmp_path / "again"
    assert main(["run", "--benchmark", "demo", "--model", "context-reader", "--limit", "120", "--out", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["model_calls"] == 0
    assert "model calls: 0" in capsys.readouterr().out
