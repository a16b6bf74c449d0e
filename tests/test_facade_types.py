"""The facade's names are typed for editors and type checkers: ``import mmrag`` loads them lazily,
and ``mmrag/__init__.py`` names them under ``TYPE_CHECKING`` so mypy (and an editor) sees what each
returns instead of ``Any``.  mypy runs here over a notebook-like snippet, with the project's
config, and what it reveals is checked."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SNIPPET = """
import mmrag

result = mmrag.run(benchmarks=[{"name": "demo"}], models=["context-reader"], limit=2)
reveal_type(result)
reveal_type(result.summary)
reveal_type(mmrag.load)
rep = mmrag.report(result.run_dir, write=False)
reveal_type(rep)
reveal_type(rep.labels)
reveal_type(mmrag.judge(result.run_dir))
reveal_type(mmrag.judge([]))
reveal_type(mmrag.RunConfig(benchmarks=[], models=[]))
"""


@pytest.fixture(scope="module")
def revealed(tmp_path_factory) -> list[str]:
    api = pytest.importorskip("mypy.api")
    snippet = tmp_path_factory.mktemp("types") / "notebook.py"
    snippet.write_text(SNIPPET, encoding="utf-8")
    out, err, code = api.run(["--config-file", str(ROOT / "pyproject.toml"), str(snippet)])
    assert code == 0, out + err  # the snippet itself type-checks
    return re.findall(r'Revealed type is "(.*)"', out)


def test_run_load_report_and_judge_are_not_any(revealed):
    (result, summary, load, rep, labels, judged_run, judged_items, config) = revealed
    assert result == "mmrag.runs.engine.RunResult"
    assert summary == "dict[str, Any]"
    # load's rows are a pandas DataFrame: without pandas-stubs pandas is untyped, so its signature is
    # what an editor shows; the function itself is typed, never Any
    assert load.startswith("def (run_dir:") and "contexts: bool" in load
    assert rep == "mmrag.labels.view.LabelledReport" and labels == "mmrag.labels.view.Labels"
    # one return type per call form: a run directory gives its summary, items give verdicts
    assert judged_run == "dict[str, Any]"
    assert judged_items == "list[mmrag.schema.Verdict]"
    assert config == "mmrag.runs.config.RunConfig"


def test_the_package_says_it_is_typed():
    """``py.typed`` (PEP 561) is in the package and in its package data, so an installed mmrag is
    read with its annotations by the user's type checker."""
    assert (ROOT / "mmrag" / "py.typed").is_file()
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    package_data = re.search(r'^"mmrag" = \[(.*)\]$', text.split("[tool.setuptools.package-data]")[1], re.M)
    assert package_data is not None and '"py.typed"' in package_data.group(1)
