"""The lmms-eval export against lmms-eval's own writer: lmms-eval 0.7.3 (wheel from the registry,
no dependencies, into a cache folder made once) saves the same in-memory samples and results
through its ``EvaluationTracker``, and our files must have its keys, in its order, with its value
types (and its values, except the clock)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mmrag.cli import main
from mmrag.export.lmms import model_logs, read_samples
from mmrag.runs import load, read_records

#: lmms-eval's writer and the two small packages its utils import that mmrag does not have
WHEELS = ("lmms-eval==0.7.3", "loguru==0.7.3", "pytz==2026.6")
#: values that come from a clock (lmms-eval's perf_counter, today's date)
CLOCK = {"date", "start_time", "end_time", "total_evaluation_time_seconds"}

WRITER = """
import json, sys
from lmms_eval.loggers.evaluation_tracker import EvaluationTracker
job = json.load(open(sys.argv[1]))
t = EvaluationTracker(output_path=sys.argv[2])
t.general_config_tracker.log_experiment_args(
    model_source="mmrag", model_args=job["results"]["config"]["model_args"],
    system_instruction=job["system"], chat_template=None, fewshot_as_multiturn=False)
t.save_results_aggregated(results=job["results"], samples=job["samples"], datetime_str=job["date"])
for task in job["results"]["configs"]:
    t.save_results_samples(task_name=task, samples=job["samples"][task])
"""


def _cache_root() -> Path:
    """``MMRAG_TEST_CACHE``, else a folder inside the environment running the tests (so CI installs once)."""
    return Path(os.environ.get("MMRAG_TEST_CACHE") or Path(sys.prefix) / "mmrag-test-cache")


@pytest.fixture(scope="session")
def lmms_eval_dir() -> Path:
    root = _cache_root() / "lmms-eval-0.7.3"
    if (root / "lmms_eval" / "loggers" / "evaluation_tracker.py").is_file():
        return root
    tmp = root.with_name(f"{root.name}.tmp{os.getpid()}")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile", "--target", str(tmp), *WHEELS],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, f"installing {' '.join(WHEELS)} failed:\n{res.stderr[-2000:]}"
    os.replace(tmp, root)
    return root


@pytest.fixture(scope="module")
def run(tmp_path_factory, module_home) -> Path:
    out = tmp_path_factory.mktemp("lmms") / "run"
    argv = ["run", "-b", "demo", "-m", "context-reader,always-deflect", "--scenarios", "parametric,oracle"]
    assert main([*argv, "--limit", "4", "--no-cache", "--out", str(out)]) == 0
    return out


def _lmms_write(lmms_dir: Path, ml, date: str, out: Path, tmp: Path) -> None:
    job = tmp / f"job-{ml.folder}.json"
    job.write_text(json.dumps({"results": ml.results, "samples": ml.samples, "system": ml.system, "date": date}))
    env = {**os.environ, "PYTHONPATH": str(lmms_dir)}
    res = subprocess.run(
        [sys.executable, "-c", WRITER, str(job), str(out)], env=env, capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, res.stderr[-3000:]


def _same_shape(ours, theirs, where: str) -> None:
    """Same keys in the same order, same value types, recursively."""
    assert type(ours) is type(theirs), f"{where}: {type(ours).__name__} != {type(theirs).__name__}"
    if isinstance(ours, dict):
        assert list(ours) == list(theirs), f"{where}: keys {list(ours)} != {list(theirs)}"
        for k in ours:
            _same_shape(ours[k], theirs[k], f"{where}.{k}")
    elif isinstance(ours, list) and ours and theirs:
        _same_shape(ours[0], theirs[0], f"{where}[0]")


def test_files_match_what_lmms_eval_0_7_3_writes_from_the_same_samples(run, lmms_eval_dir, tmp_path):
    ours = tmp_path / "ours"
    assert main(["export", str(run), "--format", "lmms-eval", "--out", str(ours)]) == 0
    manifest = {**json.loads((run / "manifest.json").read_text()), "run_dir": str(run)}
    logs = model_logs(read_records(run), manifest, "20260101_000000")
    assert len(logs) == 2
    for ml in logs:
        theirs = tmp_path / "theirs"
        _lmms_write(lmms_eval_dir, ml, "20260101_000000", theirs, tmp_path)
        their_dir, our_dir = theirs / ml.folder, ours / ml.folder
        assert our_dir.is_dir(), f"lmms-eval writes into {ml.folder}/"
        their_res = json.loads((their_dir / "20260101_000000_results.json").read_text())
        (our_file,) = our_dir.glob("*_results.json")
        our_res = json.loads(our_file.read_text())
        _same_shape(our_res, their_res, "results.json")
        for k in their_res:
            if k not in CLOCK:
                assert our_res[k] == their_res[k], k
        for task in their_res["configs"]:
            their_lines = read_samples(their_dir / f"20260101_000000_samples_{task}.jsonl")
            (our_samples,) = our_dir.glob(f"*_samples_{task}.jsonl")
            our_lines = read_samples(our_samples)
            assert our_lines == their_lines  # the same keys, order, types and values
            assert all("doc" not in x and "arguments" not in x and isinstance(x["target"], str) for x in our_lines)


def test_samples_carry_the_reply_the_prompt_and_the_verdict(run, tmp_path):
    """``input`` is the user turn (the question in it), ``filtered_resps`` the judged answer, and
    ``configs[task].metadata.doc_ids`` maps each ``doc_id`` back to the run's sample and record."""
    out = tmp_path / "lmms"
    assert main(["export", str(run), "--format", "lmms-eval", "--out", str(out)]) == 0
    df = load(run).set_index("key")
    seen = 0
    for res_file in out.glob("*/*_results.json"):
        res = json.loads(res_file.read_text())
        assert res["model_name"] and res["model_name_sanitized"] == res_file.parent.name
        assert float(res["total_evaluation_time_seconds"]) >= 0 and set(res["task_hashes"]) == set(res["configs"])
        for task, conf in res["configs"].items():
            (f,) = res_file.parent.glob(f"*_samples_{task}.jsonl")
            lines = read_samples(f)
            ids = conf["metadata"]["doc_ids"]
            assert [x["doc_id"] for x in lines] == list(range(len(ids)))
            for x in lines:
                row = df.loc[ids[x["doc_id"]]["key"]]
                assert row["question"] in x["input"]
                assert x["correct"] == int(row["correct"]) and x["deflection"] == int(row["deflection"])
                reply = x.get("resps", [x["filtered_resps"]])[0]
                assert reply == row["response"]
                seen += 1
            assert res["n-samples"][task] == {"original": len(lines), "effective": len(lines)}
            assert res["results"][task]["correct,none"] == pytest.approx(sum(x["correct"] for x in lines) / len(lines))
    assert seen == len(df)
