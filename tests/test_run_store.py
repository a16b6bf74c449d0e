"""The run layer's own guarantees: crash-safe appends, config errors that name the field, no secrets."""

from __future__ import annotations

import json

import pytest

from mmrag.errors import InputError
from mmrag.runs.config import load_run_config
from mmrag.runs.manifest import RunManifest, scrub
from mmrag.runs.records import RunRecord, record_key
from mmrag.runs.store import ResultStore
from mmrag.schema import Message, ContentPart, Prompt, Response, Sample, Verdict


def _record(i: int) -> RunRecord:
    s = Sample(id=f"s{i}", benchmark="t", question=f"q{i}?", answers=["a"])
    p = Prompt(sample_id=s.id, messages=[Message(role="user", content=[ContentPart(type="text", text=s.question)])])
    return RunRecord(key=record_key(s.id, "scen", "m"), benchmark="t", benchmark_kind="deflection", scenario_id="scen",
                     scenario={"kind": "oracle"}, model="m", model_fingerprint="m", sample=s, prompt=p,
                     response=Response(prompt_id=p.id, text="a"), verdict=Verdict(outcome="correct"))


def test_append_skips_known_keys_and_survives_partial_tail(tmp_path):
    path = tmp_path / "samples.jsonl"
    store = ResultStore(path)
    assert store.append([_record(0), _record(1)]) == 2
    assert store.append([_record(1), _record(2)]) == 1
    # simulate a SIGKILL in the middle of writing a line
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(_record(3).model_dump_json()[:57])
    reopened = ResultStore(path)
    assert len(reopened) == 3
    assert path.read_text().endswith("\n")
    assert [r.sample.id for r in reopened.records()] == ["s0", "s1", "s2"]
    assert reopened.append([_record(3)]) == 1
    assert len(ResultStore(path).records()) == 4


def test_corrupt_middle_line_names_file_and_line(tmp_path):
    path = tmp_path / "samples.jsonl"
    ResultStore(path).append([_record(0)])
    with open(path, "a") as fh:
        fh.write("{not json}\n")
        fh.write(_record(1).model_dump_json() + "\n")
    with pytest.raises(InputError) as exc:
        ResultStore(path)
    assert "samples.jsonl:2" in str(exc.value)


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
