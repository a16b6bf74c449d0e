"""One definition of every rate: console, summary.json, summary.md, report tables, the DataFrame
and the family metrics print the same number for the same run — here a run where a quarter of the
replies are empty (unparseable), the case in which two denominators used to disagree (25.0 vs 31.2).
"""

from __future__ import annotations

import hashlib
import json
import re

import pandas as pd
import pytest
from cli_runs import cli_run
from loopback_core import last_user_text
from loopback_server import LoopbackServer

from mmrag.metrics.rates import RATES, header
from mmrag.schema import DEFLECTION_PHRASE


@pytest.fixture(scope="module")
def run_dir(module_home, tmp_path_factory):
    from mmrag.benchmarks import load_benchmark

    samples = list(load_benchmark("demo").samples())
    answer = {s.question: s.answers[0] for s in samples}

    def model(body: dict) -> str:
        q = re.search(r"Question: (.*)", last_user_text(body)).group(1).strip()
        bucket = hashlib.sha256(last_user_text(body).encode()).digest()[0] % 4
        # empty = unparseable; then a refusal, a right and a made-up answer
        return ["", DEFLECTION_PHRASE, answer.get(q, "x"), "It is definitely Zelborn Hall."][bucket]

    out = tmp_path_factory.mktemp("surfaces") / "run"
    with LoopbackServer(responder=model) as srv:
        cli_run(out, "--base-url", srv.url, model="openai:m", scenarios="parametric,oracle", limit=16)
    return out


def _console_rows(text: str) -> dict[str, list[float]]:
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in re.split(r"[│|]", line) if c.strip()]
        if len(cells) == 5 + len(RATES) and cells[0] == "demo":  # ... rates, then coverage
            rows[cells[1]] = [float(x) for x in cells[4:]]
    return rows


def test_every_surface_shows_the_same_rates(run_dir, capsys, tmp_path):
    from mmrag.commands._console import console, results_table
    from mmrag.reports import report
    from mmrag.runs.frame import load

    summary = json.loads((run_dir / "summary.json").read_text())
    groups = {g["scenario"]["kind"]: g for g in summary["groups"]}
    assert list(groups) == ["parametric", "oracle"]  # the paper's order, not the alphabet's
    # the run must exercise the case: unparseable replies next to every other outcome
    assert all(g["rates"]["unparseable"] > 0 for g in groups.values())
    assert sum(groups["oracle"]["rates"][r.id] for r in RATES) == pytest.approx(100.0)

    console.print(results_table(summary))
    shown = _console_rows(capsys.readouterr().out)
    assert list(shown) == ["parametric", "oracle"]
    for kind, cells in shown.items():  # coverage = 100 - unparseable, beside the rates
        unparseable = groups[kind]["rates"]["unparseable"]
        assert cells[len(RATES)] == pytest.approx(100.0 - unparseable, abs=0.05)
    md = (run_dir / "summary.md").read_text()
    assert "| " + " | ".join(r.header for r in RATES) + " |" in md
    df = load(run_dir)
    report(run_dir, tmp_path / "rep", browser=False)
    table = pd.read_csv(tmp_path / "rep" / "tables" / "scenario.csv")
    table_md = (tmp_path / "rep" / "tables" / "scenario.md").read_text()
    assert header("correct") in table_md and "correct_lo" not in table_md

    for kind, g in groups.items():
        label = g["scenario_id"] and df.loc[df.scenario_id == g["scenario_id"], "scenario"].iloc[0]
        assert label == kind  # one name: the frame's label is the console's and summary.md's
        n = g["n"]
        counts = g["metrics"]["overall"]["counts"]
        for i, rate in enumerate(RATES):
            expected = 100.0 * counts[rate.id] / n  # the paper's denominator: all responses
            frame = 100.0 * df.loc[df.scenario_id == g["scenario_id"], rate.id].mean()
            row = table[table.scenario_id == g["scenario_id"]]
            assert g["rates"][rate.id] == pytest.approx(expected)
            assert g["metrics"]["overall"][rate.id]["value"] == pytest.approx(expected)
            assert frame == pytest.approx(expected)
            assert float(row[rate.id].iloc[0]) == pytest.approx(expected)
            assert shown[label][i] == float(f"{expected:.1f}")
            assert f"| {label} | " in md and f"{expected:.1f}" in md.split(f"| {label} | ")[1].split("\n")[0]
            assert f"{expected:.1f} [" in table_md
