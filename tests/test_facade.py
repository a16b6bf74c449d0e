"""The public API: ``import mmrag`` is cheap, and its documented names run a demo end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version

import pytest

import mmrag

PUBLIC = {
    "run",
    "RunConfig",
    "ScenarioSpec",
    "run_dir",
    "load",
    "report",
    "judge",
    "create_model",
    "load_benchmark",
    "export",
    "__version__",
}


def test_import_is_lazy_and_the_version_comes_from_the_package_metadata():
    code = (
        "import sys, mmrag; heavy = [m for m in ('torch', 'pandas', 'faiss', 'pydantic', 'mmrag.runs') "
        "if m in sys.modules]; print(heavy, mmrag.__version__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "[]" and out[1] == version("mmrag")
    assert set(mmrag.__all__) == PUBLIC and PUBLIC <= set(dir(mmrag))
    with pytest.raises(AttributeError):
        mmrag.no_such_name  # noqa: B018


def test_the_facade_names_run_a_demo_end_to_end(tmp_path, module_home):
    bench = mmrag.load_benchmark("demo")
    first = list(bench.samples())[0]
    model = mmrag.create_model("context-reader", cache=None)
    assert model.fingerprint.startswith("baseline:context-reader")

    config = mmrag.RunConfig(
        benchmarks=[{"name": "demo"}],
        models=["context-reader", "always-deflect"],
        scenarios=[mmrag.ScenarioSpec(kind="parametric"), mmrag.ScenarioSpec(kind="oracle")],
        limit=3,
    )
    where = mmrag.run_dir(config, "facade", root=tmp_path)
    assert where.parent == tmp_path and where.name.startswith("facade-")
    assert mmrag.run_dir(config.model_copy(update={"limit": 4}), "facade", root=tmp_path) != where
    result = mmrag.run(config, where)
    assert result.failure is None and result.new_records == 12
    assert mmrag.run(config, where).new_records == 0  # the same directory resumes: nothing left to do

    df = mmrag.load(where)
    assert len(df) == 12 and set(df["model"]) == {"context-reader", "always-deflect"}
    assert first.id in set(df["sample_id"])
    assert df[df["model"] == "always-deflect"]["deflection"].all()

    files = mmrag.report(where, n_boot=100, browser=False)
    assert any(p.name == "report.md" for p in files)
    summary = mmrag.judge(where, "rule")
    assert summary["changed_outcomes"] == 0  # the same judge again: the same verdicts

    [log] = [
        p
        for p in mmrag.export(where, "lmms-eval", tmp_path / "lmms")
        if p.name.endswith("_results.json") and "context-reader" in str(p)
    ]
    assert json.loads(log.read_text())["config"]["model"] == "context-reader"


def test_keyword_form_and_model_strings_in_configs(tmp_path, module_home):
    result = mmrag.run(
        benchmarks=[{"name": "demo"}],
        models=["always-deflect"],
        scenarios=[{"kind": "parametric"}],
        limit=2,
        out=str(tmp_path / "kw"),
    )
    assert result.run_dir == tmp_path / "kw" and result.new_records == 2
    with pytest.raises(ValueError, match="unknown model backend"):
        mmrag.RunConfig(benchmarks=[{"name": "demo"}], models=["no-such-model"])
