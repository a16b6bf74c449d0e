"""The run store's own guarantees: torn segments ignored, failed attempts replaced by retries, one
writer per directory, objects stored once, verdict generations, old run directories, config errors
that name the field, no secrets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from runfactory import build_run

from mmrag.errors import InputError
from mmrag.runs import load, read_records
from mmrag.runs.config import RunConfig, load_run_config
from mmrag.runs.engine import execute
from mmrag.runs.frame import COLUMNS
from mmrag.runs.legacy import convert
from mmrag.runs.manifest import RunManifest, scrub
from mmrag.runs.records import RunRecord, record_key
from mmrag.runs.store import RunStore
from mmrag.schema import ContentPart, Message, Prompt, Response, Sample, Verdict

ROOT = Path(__file__).resolve().parents[1]


def _record(i: int, model: str = "m", error: str | None = None, text: str = "a") -> RunRecord:
    s = Sample(id=f"s{i}", benchmark="t", question=f"q{i}?", answers=["a"])
    p = Prompt(sample_id=s.id, messages=[Message(role="user", content=[ContentPart(type="text", text=s.question)])])
    resp = Response(prompt_id=p.id, text="" if error else text, error=error)
    return RunRecord(
        key=record_key(s.id, "scen", model),
        benchmark="t",
        benchmark_kind="deflection",
        scenario_id="scen",
        scenario={"kind": "oracle"},
        model=model,
        model_fingerprint=model,
        sample=s,
        prompt=p,
        response=resp,
        verdict=Verdict(outcome="unparseable" if error else "correct"),
    )


def _rows(folder: Path) -> int:
    return sum(pq.ParquetFile(p).metadata.num_rows for p in folder.glob("*.parquet"))


def test_torn_segment_is_ignored_and_reopen_knows_the_keys(tmp_path):
    with RunStore(tmp_path) as store:
        store.append([_record(0), _record(1)])
        store.append([_record(2)])
    # a kill while a segment was being written leaves only a .tmp (the rename is the commit)
    (tmp_path / "records" / "seg-00000009-00000009.parquet.tmp").write_bytes(b"PAR1 torn half a segment")
    with RunStore(tmp_path) as store:
        assert store.done == {_record(i).key for i in range(3)} and not store.failed
        assert not list((tmp_path / "records").glob("*.tmp"))
    assert [r.sample.id for r in read_records(tmp_path)] == ["s0", "s1", "s2"]


def test_each_sample_and_prompt_stored_once_across_models(tmp_path):
    with RunStore(tmp_path) as store:
        store.append([_record(0, model=m) for m in ("m1", "m2", "m3")])
    objs = pq.read_table(tmp_path / "objects").to_pydict()
    assert sorted(objs["obj"]) == ["prompt", "sample", "scenario"]
    assert _rows(tmp_path / "records") == 3


def test_failed_attempt_is_not_finished_and_a_retry_replaces_it(tmp_path):
    with RunStore(tmp_path) as store:
        store.append([_record(0), _record(1, error="connection")])
    with RunStore(tmp_path) as store:
        assert store.failed == {_record(1).key} and _record(1).key not in store
        store.append([_record(1, text="retried")])
    recs = {r.sample.id: r for r in read_records(tmp_path)}
    assert recs["s1"].response.text == "retried" and recs["s1"].response.error is None
    assert _rows(tmp_path / "records") == 3  # the failed attempt stays on disk as history
    df = load(tmp_path)
    assert len(df) == 2 and df.error.isna().all()
    attempts = pq.read_table(tmp_path / "records", columns=["key", "attempt"]).to_pydict()
    assert sorted(attempts["attempt"]) == [1, 1, 2]


def test_compaction_interrupted_before_cleanup_does_not_duplicate(tmp_path):
    with RunStore(tmp_path) as store:
        for i in range(4):
            store.append([_record(i)])
    segs = sorted((tmp_path / "records").glob("*.parquet"))
    saved = {p.name: p.read_bytes() for p in segs}
    with RunStore(tmp_path) as store:
        store.compact()
    for name, data in saved.items():  # as if killed after the merged file was committed
        (tmp_path / "records" / name).write_bytes(data)
    assert len(load(tmp_path)) == 4 and len(read_records(tmp_path)) == 4


def test_second_writer_is_refused_and_a_killed_writer_leaves_no_stale_lock(tmp_path):
    store = RunStore(tmp_path)
    with pytest.raises(InputError, match="in use by another mmrag process"):
        RunStore(tmp_path)
    store.close()
    RunStore(tmp_path).close()
    code = (
        "import sys, time; from mmrag.runs.store import RunStore; s = RunStore(sys.argv[1]); "
        "print('locked', flush=True); time.sleep(60)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdout.readline().strip() == "locked"
    with pytest.raises(InputError, match="pid"):
        RunStore(tmp_path)
    proc.kill()
    proc.wait()
    RunStore(tmp_path).close()


def test_old_samples_jsonl_run_loads_and_converts_to_the_same_frame(tmp_path):
    old = build_run(tmp_path, "old")
    before = load(old)
    assert list(before.columns) == list(COLUMNS)
    cfg = RunConfig.model_validate({"benchmarks": [{"name": "demo"}], "models": [{"backend": "always-deflect"}]})
    with pytest.raises(InputError, match="python -m mmrag.runs.legacy"):
        execute(cfg, old)
    n = convert(old)
    assert n == len(before) and not (old / "samples.jsonl").exists()
    after = load(old)
    assert list(after.columns) == list(COLUMNS)
    a = before.drop(columns="run").sort_values("key").reset_index(drop=True)
    b = after.drop(columns="run").sort_values("key").reset_index(drop=True)
    for col in a.columns:
        same = (a[col] == b[col]) | (a[col].isna() & b[col].isna())
        assert same.all(), col
    assert [r.model_dump() for r in read_records(old)] == [r.model_dump() for r in read_records(tmp_path / "old")]


def test_rescore_appends_a_verdict_generation_and_keeps_records(tmp_path):
    from mmrag.runs.config import JudgeConfig
    from mmrag.runs.rescore import rescore

    old = build_run(tmp_path, "run", full=False)
    (old / "manifest.json").write_text(
        json.dumps(
            RunManifest.start(
                RunConfig.model_validate(
                    {"benchmarks": [{"name": "demo"}], "models": [{"backend": "always-deflect"}]}
                ).model_dump(mode="json"),
                argv=[],
            ).model_dump(mode="json")
        )
    )
    convert(old)
    records_before = {p.name: p.read_bytes() for p in (old / "records").iterdir()}
    rescore(old, JudgeConfig(mode="rule"))
    rescore(old, JudgeConfig(mode="rule"))
    assert {p.name: p.read_bytes() for p in (old / "records").iterdir()} == records_before
    gens = pq.read_table(old / "verdicts", columns=["generation"]).column("generation").to_pylist()
    assert set(gens) == {1, 2}
    df = load(old)
    assert len(df) == len(read_records(old)) and set(df.judge_id) != {"rule-v1"}


def test_lazy_dataset_reads_the_same_rows(tmp_path):
    from mmrag.runs import dataset

    with RunStore(tmp_path) as store:
        store.append([_record(i) for i in range(5)])
    t = dataset(tmp_path).to_table(columns=["key", "outcome"])
    assert sorted(t.column("key").to_pylist()) == sorted(load(tmp_path).key)


def test_config_misspelt_field_is_named(tmp_path):
    cfg = tmp_path / "run.yaml"
    cfg.write_text("benchmarks: [{name: demo}]\nmodels: [{backend: always-deflect}]\nbatch_sise: 3\n")
    with pytest.raises(InputError) as exc:
        load_run_config(cfg)
    assert "run.yaml" in str(exc.value) and "batch_sise" in str(exc.value)


def test_config_bad_yaml_names_line(tmp_path):
    cfg = tmp_path / "run.yaml"
    cfg.write_text("benchmarks: [{name: demo}\nmodels: x\n")
    with pytest.raises(InputError) as exc:
        load_run_config(cfg)
    assert "run.yaml" in str(exc.value) and "YAML" in str(exc.value)


def test_manifest_scrubs_secret_env_values(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_API_KEY", "sk-very-secret-123")
    man = RunManifest.start({"x": "--key sk-very-secret-123"}, argv=["mmrag", "--api-key", "sk-very-secret-123"])
    man.write(tmp_path)
    text = (tmp_path / "manifest.json").read_text()
    assert "sk-very-secret-123" not in text and "***" in text
    assert scrub(["a sk-very-secret-123 b"]) == ["a *** b"]
    assert json.loads(text)["status"] == "running"
    time.sleep(0)


def test_paired_tests_leave_failed_cells_out_and_count_them(tmp_path):
    from mmrag.reports.paired import model_differences

    df = load(build_run(tmp_path, "run", full=False))
    df = df[df.benchmark == "demo"].copy()
    df.loc[(df.model == "weak-vlm") & (df.sample_id == "demo-q0-s0"), "error"] = "connection"
    got = model_differences(df)
    ok = df[df.error.isna()]
    both = ok.groupby(["scenario_id", "sample_id"]).model.nunique()
    assert got["n_pairs"].sum() == int((both == 2).sum())
    assert got["n_failed_a"].sum() + got["n_failed_b"].sum() == int(df.error.notna().sum()) > 0
