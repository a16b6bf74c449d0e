"""Judging whole files: a JSONL of replies judged and compared with its labels, a bad record named
by line and field with nothing half-written, and the `judge` and `judge-agreement` CLI commands."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from judgeinputs import DATA
from typer.testing import CliRunner

from mmrag.errors import InputError
from mmrag.judging import RuleJudge
from mmrag.judging.records import judge_file
from mmrag.metrics.agreement import agreement


# -- files and CLI ---------------------------------------------------------------------------------
def test_judge_file_and_agreement(tmp_path):
    out = tmp_path / "judged.jsonl"
    stats = judge_file(DATA, out, RuleJudge())
    assert sum(stats["counts"].values()) == len(DATA.read_text().splitlines()) and stats["judged_by_llm"] == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert all({"outcome", "extracted", "judge_id", "label"} <= set(r) for r in rows)
    res = agreement(DATA, out, field_a="label")
    assert res["kappa_decided"] >= 0.95 and res["coverage"] >= 0.7 and res["n"] == len(rows)


def test_bad_records_name_line_and_field(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"question": "q", "answers": ["a"], "response": "a"})
        + "\n"
        + json.dumps({"question": "q", "answers": "a", "response": "a"})
        + "\n"
    )
    with pytest.raises(InputError) as exc:
        judge_file(bad, tmp_path / "o.jsonl", RuleJudge())
    assert exc.value.line == 2 and exc.value.field == "answers"
    assert not (tmp_path / "o.jsonl").exists()  # nothing half-written


def test_cli_commands(tmp_path):
    import typer

    from mmrag.commands.judge import register

    app = typer.Typer()
    app.callback()(lambda: None)
    register(app)
    runner = CliRunner()
    out = tmp_path / "j.jsonl"
    r = runner.invoke(app, ["judge", "--input", str(DATA), "--output", str(out), "--judge", "rule"])
    assert r.exit_code == 0, r.output
    assert Counter(json.loads(x)["outcome"] for x in out.read_text().splitlines())["correct"] > 50
    r = runner.invoke(app, ["judge-agreement", str(DATA), str(out), "--field-a", "label", "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["kappa_decided"] >= 0.95
    r = runner.invoke(app, ["judge-agreement", str(DATA), str(out), "--field-a", "label"])
    assert r.exit_code == 0 and "kappa=" in r.output and "correct" in r.output
    # the four confusions beside kappa, overall and per group
    names = ("hallucination→correct", "correct→hallucination", "deflection→hallucination", "hallucination→deflection")
    assert all(f"{k}=" in r.output for k in names)
    r = runner.invoke(app, ["judge-agreement", str(DATA), str(out), "--field-a", "label", "--json"])
    conf = json.loads(r.output)["confusions"]
    assert set(conf) == set(names) and conf["hallucination→correct"]["n"] > 0
    r = runner.invoke(app, ["judge", "--input", str(DATA), "--output", str(out), "--judge", "llm"])
    assert r.exit_code == 2 and "judge model" in r.output
