"""What the run harness skips to stay out of the way, and that skipping it changes no result.

A new run is summarised from the records it just stored: the summary must equal the one computed
from the run read back.  A finished run resumed (``mmrag run --resume``) must not load a model
library or the indices, and keeps its summary only while the records, verdicts and labels
it summarised are unchanged.  The CPU's bf16 answer is kept in MMRAG_HOME, so a later process
knows it without importing torch.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mmrag.cli import main

#: imports a finished run's resume must not pay for (its results table still brings pandas, through
#: mmrag.reports.render)
HEAVY = ("torch", "transformers", "sentence_transformers", "faiss")

_RESUME = (
    "import sys; from mmrag.cli import main; rc = main(['run', '--resume', sys.argv[1]]); "
    f"print('LOADED', [m for m in {HEAVY!r} if m in sys.modules]); sys.exit(rc)"
)


@pytest.fixture(scope="module")
def finished(module_home, tmp_path_factory):
    from mmrag.indices.encoders import cpu_has_native_bf16

    cpu_has_native_bf16.cache_clear()  # as in a new process: the answer is kept in this module's home
    out = tmp_path_factory.mktemp("fast") / "run"
    assert main(["demo", "--out", str(out), "--limit", "30"]) == 0
    return out


def _resume(run_dir: Path) -> list[str]:
    res = subprocess.run([sys.executable, "-c", _RESUME, str(run_dir)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("LOADED"))
    return json.loads(line.split(" ", 1)[1].replace("'", '"'))


def test_a_new_run_is_summarised_exactly_as_its_records_read_back(finished):
    from mmrag.runs import read_records
    from mmrag.runs.summary import build_summary

    written = json.loads((finished / "summary.json").read_text())
    again = json.loads(json.dumps(build_summary(read_records(finished))))
    assert written["n_records"] == 30 * 4 * 2
    for key, value in again.items():
        assert written[key] == value, key


def test_resuming_a_finished_run_loads_no_model_library_and_keeps_its_summary(finished):
    summary = (finished / "summary.json").read_bytes()
    manifest = json.loads((finished / "manifest.json").read_text())
    assert _resume(finished) == []
    assert (finished / "summary.json").read_bytes() == summary
    after = json.loads((finished / "manifest.json").read_text())
    assert after["status"] == "complete" and after["counts"]["records"] == manifest["counts"]["records"]
    assert after["templates"] == manifest["templates"] and after["indices"] == manifest["indices"]
    assert after["summary_state"] == manifest["summary_state"]


def test_a_finished_run_whose_records_changed_is_summarised_again(finished, tmp_path):
    run = tmp_path / "copy"
    shutil.copytree(finished, run)
    path = run / "summary.json"
    tampered = json.loads(path.read_text())
    tampered["groups"][0]["n"] = 999_999
    path.write_text(json.dumps(tampered))
    assert main(["run", "--resume", str(run)]) == 0
    assert json.loads(path.read_text())["groups"][0]["n"] == 999_999  # the same state: kept as it was
    segment = next((run / "records").glob("*.parquet"))
    st = segment.stat()
    os.utime(segment, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # the records are not the same files
    assert main(["run", "--resume", str(run)]) == 0
    assert json.loads(path.read_text()) == json.loads((finished / "summary.json").read_text())


def test_a_kept_summary_says_the_state_of_the_run_that_kept_it(finished, tmp_path):
    """A summary marked running by an invocation that then wrote nothing is kept, but with the
    state that invocation ended in: never a stale running notice, never a missing failure notice."""
    from mmrag.runs.summary import mark_summary_running, results_state, reuse_summary

    run = tmp_path / "kept"
    shutil.copytree(finished, run)
    manifest = json.loads((run / "manifest.json").read_text())
    planned = manifest["counts"]["planned"]
    mark_summary_running(run, planned - 1, planned)
    assert "incomplete" in (run / "summary.md").read_text()
    state = results_state(run, manifest["mmrag_version"], manifest["git_revision"])
    kept = reuse_summary(run, manifest, state, {}, "complete")
    assert kept is not None and kept["state"]["complete"] and kept["state"]["notice"] is None
    assert json.loads((run / "summary.json").read_text()) == json.loads((finished / "summary.json").read_text())
    assert "incomplete" not in (run / "summary.md").read_text()
    failed = reuse_summary(run, manifest, state, {}, "failed")
    assert failed is not None and failed["state"]["notice"].startswith(f"incomplete: {planned} of {planned} cells")
    assert "an error stopped the run" in (run / "summary.md").read_text()
    assert reuse_summary(run, {**manifest, "summary_state": "other"}, state, {}, "complete") is None


@pytest.mark.skipif(
    not Path("/proc/cpuinfo").is_file(), reason="the probe is kept only where /proc/cpuinfo says the CPU"
)
def test_the_cpu_bf16_answer_is_kept_in_the_home_and_read_without_torch(tmp_path):
    code = "import sys; from mmrag.indices.encoders import cpu_has_native_bf16 as f; print(f(), 'torch' in sys.modules)"
    env = {**os.environ, "MMRAG_HOME": str(tmp_path)}

    def ask() -> list[str]:
        res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr[-2000:]
        return res.stdout.split()

    first, second = ask(), ask()
    assert first[1] == "True" and second == [first[0], "False"]
    assert (tmp_path / "cache" / "cpu-bf16.json").is_file()


def test_a_judge_returning_too_few_verdicts_fails_the_run(module_home, tmp_path, monkeypatch):
    """Judging in slices on the event loop must not let a short answer pair verdicts with the
    wrong replies: the run stops and says why."""
    import mmrag.runs.pipeline as pipeline
    from mmrag.commands._run_config import specs_from_flags
    from mmrag.models import parse_model_arg
    from mmrag.runs.config import BenchmarkRef, RunConfig
    from mmrag.runs.engine import execute

    real = pipeline.judge_many
    monkeypatch.setattr(pipeline, "judge_many", lambda judge, items: real(judge, items)[:-1])
    cfg = RunConfig(
        benchmarks=[BenchmarkRef(name="demo", options={"seed": 0})],
        scenarios=specs_from_flags(["parametric"], [2], ["text"], "any", ["none"], 0),
        models=[parse_model_arg("always-deflect")],
        limit=3,
    )
    with pytest.raises(RuntimeError, match="verdicts for"):
        execute(cfg, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["status"] == "failed"
