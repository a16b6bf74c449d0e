"""A benchmark family and a scenario kind from a package outside mmrag, run end to end.

The package (tests/plugins/mmrag_toy_family) is made importable the way an installed wheel is: its
files on a path entry next to a real ``*.dist-info`` folder whose ``entry_points.txt`` names the
loader (``mmrag.benchmarks``), the family (``mmrag.benchmark_families``) and the kind
(``mmrag.scenario_kinds``), so ``importlib.metadata`` finds them.  The run happens in a fresh
``mmrag`` process; nothing in mmrag names the plug-in.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mmrag.scenarios.kinds import SCENARIO_KINDS

PLUGIN = Path(__file__).parent / "plugins" / "mmrag_toy_family"
ROOT = Path(__file__).resolve().parents[1]


def _site(tmp: Path) -> Path:
    """A site directory holding the package and its dist-info, as pip would lay it out."""
    site = tmp / "site"
    shutil.copytree(PLUGIN / "mmrag_toy_family", site / "mmrag_toy_family")
    info = site / "mmrag_toy_family-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mmrag-toy-family\nVersion: 0.1.0\n")
    import tomllib

    groups = tomllib.loads((PLUGIN / "pyproject.toml").read_text())["project"]["entry-points"]
    (info / "entry_points.txt").write_text(
        "".join(f"[{g}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n" for g, eps in groups.items())
    )
    return site


def _mmrag(args: list[str], site: Path, home: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(site)]),
        "MMRAG_HOME": str(home),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "COLUMNS": "200",
    }
    return subprocess.run(
        [sys.executable, "-m", "mmrag.cli", *args], env=env, capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def plugin_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plugin")
    site, home, out = _site(tmp), tmp / "home", tmp / "run"
    proc = _mmrag(
        ["run", "-b", "toy-notes", "-m", "context-reader", "--scenarios", "note,parametric", "--out", str(out)],
        site,
        home,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return site, home, out, proc


def test_the_plugin_is_not_part_of_mmrag():
    assert "note" not in SCENARIO_KINDS  # only the subprocess, with the dist-info on its path, sees it
    assert not any("toy" in p for p in map(str, Path(ROOT / "mmrag").rglob("*.py")))


def test_family_and_kind_run_end_to_end(plugin_run):
    site, home, out, proc = plugin_run
    summary = json.loads((out / "summary.json").read_text())
    groups = {g["scenario"]["kind"]: g for g in summary["groups"]}
    assert set(groups) == {"note", "parametric"}
    assert {g["benchmark_kind"] for g in groups.values()} == {"notes"}
    note = groups["note"]
    # the reader answers two notes right and is misled by the third ("Osric" for "Marta": a rival
    # name no rule can check, so the rule judge leaves it undecided); the kind's applicability rule
    # skipped the fourth sample (no note), and the run counted it
    assert note["n"] == 3 and note["rates"]["correct"] == pytest.approx(200 / 3)
    assert note["rates"]["hallucination"] == 0.0 and note["rates"]["unparseable"] == pytest.approx(100 / 3)
    assert summary["not_applicable"] == {note["scenario_id"]: 1}
    assert groups["parametric"]["n"] == 4 and groups["parametric"]["rates"]["deflection"] == 100.0
    # the family's own metric function (named by dotted path in the family) computed the metrics
    assert note["metrics"]["overall"]["correct"] == pytest.approx(200 / 3)
    assert note["metrics"]["quotes_answer"] == pytest.approx(200 / 3)
    # the kind's label is the one name the console and summary.md print
    assert "note card" in proc.stdout and "| note card |" in (out / "summary.md").read_text()
    from mmrag.runs import read_records

    records = [r.model_dump(mode="json") for r in read_records(out)]
    assert {r["verdict"]["judge_id"].split("@")[0] for r in records} == {"rule"}  # the family says "rule"; one id (12b)
    assert all(
        r["prompt"]["contexts"][0]["document"]["title"] == "note" for r in records if r["scenario"]["kind"] == "note"
    )


def test_frame_and_report_read_the_plugin_run(plugin_run, tmp_path):
    site, home, out, _ = plugin_run
    code = (
        "import json, sys; from mmrag.runs.frame import load; df = load(sys.argv[1]); "
        "print(json.dumps(sorted(df.groupby('scenario')['correct'].mean().mul(100).round(1).items())))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(site)]), "MMRAG_HOME": str(home)}
    res = subprocess.run([sys.executable, "-c", code, str(out)], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert json.loads(res.stdout) == [["note card", 66.7], ["parametric", 0.0]]
    rep = _mmrag(["report", str(out), "-o", str(tmp_path / "rep"), "--no-browser"], site, home)
    assert rep.returncode == 0, rep.stderr[-2000:]
    md = (tmp_path / "rep" / "tables" / "scenario.md").read_text()
    # paper order: the built-in parametric kind (order 0) before the plug-in kind (order 20)
    assert md.index("parametric") < md.index("note card")


def test_an_unknown_kind_names_the_plugin_kinds(plugin_run):
    site, home, out, _ = plugin_run
    proc = _mmrag(
        ["run", "-b", "toy-notes", "-m", "context-reader", "--scenarios", "notes", "--out", str(out.parent / "bad")],
        site,
        home,
    )
    assert proc.returncode != 0 and "unknown scenario 'notes'" in proc.stderr and "note" in proc.stderr
