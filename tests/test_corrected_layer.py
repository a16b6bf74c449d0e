"""The judge-corrected rates reach every surface from above: runs and reports never import
:mod:`mmrag.labels`, so the commands and the facade pass them in (docs/architecture.md, dependency
layers).  These are the commands a user types after labelling a run."""

from __future__ import annotations

import json

import pytest
from cli_runs import cli_run

import mmrag
from mmrag.cli import main
from mmrag.labels import ensure_sample
from mmrag.labels.store import LabelFile
from mmrag.runs import load

SECTION = "## Rates corrected for judge error"


@pytest.fixture(scope="module")
def labelled(tmp_path_factory, module_home):
    run_dir = cli_run(
        tmp_path_factory.mktemp("corrected") / "run",
        model="context-reader,always-deflect",
        scenarios="parametric,oracle",
        limit=6,
    )
    sample = ensure_sample(run_dir, load(run_dir), n=20, seed=0)
    f = LabelFile(run_dir, "ann")
    for key, outcome in zip(sample.items["key"], sample.items["outcome"]):
        f.append(key, {"unparseable": "deflection"}.get(outcome, outcome))
    return run_dir


@pytest.mark.parametrize("command", ["score", "run --resume"])
def test_score_and_resume_keep_the_corrected_rates_in_the_summary(labelled, command):
    assert main([*command.split(), str(labelled)]) == 0
    summary = json.loads((labelled / "summary.json").read_text())
    assert summary["judge_corrected"]["labeller"] == "ann" and summary["judge_corrected"]["groups"]
    assert SECTION in (labelled / "summary.md").read_text()


def test_report_command_and_facade_show_the_corrected_rates(labelled, tmp_path):
    assert main(["report", str(labelled), "--out", str(tmp_path / "cli"), "--n-boot", "100", "--no-browser"]) == 0
    assert SECTION in (tmp_path / "cli" / "report.md").read_text()
    rep = mmrag.report(labelled, tmp_path / "api", n_boot=100, browser=False)
    assert SECTION in (tmp_path / "api" / "report.md").read_text()
    assert any(p.name == "corrected.csv" for p in rep.files)
    assert rep.labels.frame()["labeller"].eq("ann").all()


def test_the_report_layer_alone_writes_no_corrected_section(labelled, tmp_path):
    """``mmrag.reports.report`` knows nothing of labels: the section comes only when passed in."""
    from mmrag.reports import CIOptions, report

    report(labelled, tmp_path / "plain", opts=CIOptions(n_boot=100), browser=False)
    assert SECTION not in (tmp_path / "plain" / "report.md").read_text()


def test_a_summary_marked_running_keeps_the_corrected_rates(labelled):
    from mmrag.runs.summary import mark_summary_running

    assert main(["score", str(labelled)]) == 0  # the summary now has the corrected rates
    before = (labelled / "summary.md").read_text()
    assert SECTION in before
    mark_summary_running(labelled, 1, 99)  # a resume starts: runs rewrites summary.md, knowing no labels
    after = (labelled / "summary.md").read_text()
    assert "incomplete: 1 of 99 cells" in after
    assert after[after.index(SECTION) :] == before[before.index(SECTION) :]
