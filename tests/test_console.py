"""What the terminal shows: model labels that tell models apart, and no silent minutes.

The command a user types (``mmrag demo`` through the CLI's own typer app) is run on a fresh
MMRAG_HOME, so the demo world is generated and the indices are built: each slow step must say so
on stderr, the run directory must be named before the work starts, and the cell bar must read
``N cells (2 models)`` with the rate measured over the run.
"""

from __future__ import annotations

import itertools
import json
import re
from types import SimpleNamespace

import pytest
from rich.console import Console
from typer.testing import CliRunner

from mmrag.commands._console import results_table, run_rate
from mmrag.reports.render import label_legend, short_labels, to_rich


def test_names_sharing_a_prefix_get_distinct_short_labels():
    names = ["sim-vlm:text_prior=0.1,vision=0.8", "sim-vlm:text_prior=0.9,vision=0.8", "context-reader"]
    labels = short_labels(names)
    assert labels["context-reader"] == "context-reader"  # short names are left alone
    a, b = labels[names[0]], labels[names[1]]
    assert a != b and len(a) <= 24 and len(b) <= 24
    assert "0.1" in a and "0.9" in b  # the part that differs survives
    assert short_labels(["sim-vlm:text_prior=0.1", "sim-vlm:text_prior=0.9"]) == {
        "sim-vlm:text_prior=0.1": "sim-vlm:text_prior=0.1",
        "sim-vlm:text_prior=0.9": "sim-vlm:text_prior=0.9",
    }
    legend = label_legend(labels)
    assert f"{a} = {names[0]}" in legend and f"{b} = {names[1]}" in legend and "context-reader" not in legend


def test_short_labels_are_unique_for_any_names():
    stems = ["openai:meta-llama/Llama-3.1-", "openai:meta-llama/Llama-3.2-", "transformers:/models/qwen2-vl-"]
    names = [f"{s}{size}-Instruct" for s, size in itertools.product(stems, ("8B", "70B", "7B", "11B-Vision"))]
    names += ["a" * 30, "a" * 31, "m-" * 20 + "x"]
    labels = short_labels(names)
    assert len(set(labels.values())) == len(names)
    for name, label in labels.items():
        assert len(label) <= 24 or label == name
        head, _, tail = label.partition("…")  # "H…T": starts with H, ends with T, something between
        matches = (
            [n for n in names if n.startswith(head) and n.endswith(tail) and len(n) > len(head) + len(tail)]
            if "…" in label
            else [name]
        )
        assert matches == [name], (label, matches)  # a label names exactly one model


def _summary(models):
    rates = {"correct": 50.0, "deflection": 25.0, "hallucination": 25.0, "unparseable": 0.0}
    return {
        "groups": [
            {
                "benchmark": "demo",
                "scenario": {"kind": "realistic", "n_distractors": 2, "negative_modality": "text"},
                "model": m,
                "n": 10,
                "rates": rates,
            }
            for m in models
        ]
    }


@pytest.mark.parametrize("width", [80, 120])
def test_results_table_tells_the_models_apart_in_a_narrow_terminal(width):
    models = [
        "sim-vlm:text_prior=0.1,strictness_gain=0.5",
        "sim-vlm:text_prior=0.9,strictness_gain=0.5",
        "sim-vlm:text_prior=0.1",
        "sim-vlm:text_prior=0.9",
    ]
    console = Console(width=width, record=True)
    console.print(results_table(_summary(models)))
    text = console.export_text()
    labels = short_labels(models)
    rows = [line for line in text.splitlines() if line.startswith("│ demo")]
    shown = [max((lab for lab in labels.values() if lab in line), key=len) for line in rows]
    assert sorted(shown) == sorted(labels.values())  # each row shows its whole, distinct label
    for model in models[:2]:  # the legend spells the shortened ones out
        assert f"{labels[model]} = {model}" in text


def test_report_tables_use_the_same_labels():
    import pandas as pd

    models = ["sim-vlm:text_prior=0.1,strictness_gain=0.5", "sim-vlm:text_prior=0.9,strictness_gain=0.5"]
    console = Console(width=90, record=True)
    console.print(to_rich(pd.DataFrame({"model": models, "n": [3, 3]}), "t"))
    text = console.export_text()
    for model, label in short_labels(models).items():
        assert label in text and f"{label} = {model}" in text


def test_rate_is_measured_over_the_whole_task():
    done = SimpleNamespace(finished=True, finished_time=40.0, elapsed=40.0, completed=6480)
    assert run_rate(done) == pytest.approx(162.0)
    running = SimpleNamespace(finished=False, finished_time=None, elapsed=10.0, completed=500)
    assert run_rate(running) == pytest.approx(50.0)
    assert run_rate(SimpleNamespace(finished=False, finished_time=None, elapsed=0.2, completed=5)) is None


def test_demo_command_says_what_it_is_doing(module_home, tmp_path):
    from mmrag.cli import _quiet_libraries, app

    _quiet_libraries()
    out = tmp_path / "demo-run"
    res = CliRunner().invoke(app, ["demo", "--limit", "12", "--out", str(out)])
    assert res.exit_code == 0, res.output
    err = res.stderr
    lines = [line.strip() for line in err.splitlines()]
    assert lines[0] == f"run directory: {out}", lines[:3]  # named before any slow step
    for said in (
        "loading benchmark demo",
        "generating the demo world (seed 0",
        "building the text index over",
        "building the visual index over",
        "building the multimodal index over",
        "loading the judge",
    ):
        assert any(said in line for line in lines), (said, err[-2000:])
    first = {
        said: next(i for i, line in enumerate(lines) if said in line)
        for said in ("run directory", "generating the demo world", "building the text index", "loading the judge")
    }
    assert list(first.values()) == sorted(first.values())  # in the order the steps happen
    bar = next(line for line in lines if "cells (2 models)" in line)
    assert "96 cells (2 models)" in bar and "model(s)" not in err and " x 2" not in err
    # the rate on the bar is the run's: cells over the elapsed time the bar shows; a run that
    # took under a second (a warm world) shows no rate rather than a noisy one
    h, m, s = map(int, re.search(r"(\d+):(\d\d):(\d\d) elapsed", bar).groups())
    elapsed = 3600 * h + 60 * m + s
    shown = re.search(r"(\d+\.\d)/s", bar)
    assert shown or elapsed <= 1, bar
    if elapsed >= 2:  # the clock shows whole seconds
        assert shown is not None
        assert 96 / (elapsed + 1) <= float(shown.group(1)) <= 96 / (elapsed - 1)
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
    assert f"run directory: {out}" in res.stdout  # and again in the closing line
