"""Hostile files and a failing disk are refused clearly, with one line and a non-zero exit: a YAML
alias bomb, a model or benchmark named twice, a line without end, a file-size limit, a full disk, a
folder of other files as ``--out``, a key twice in a JSON line.  Faults of servers are
tests/test_faults.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fault_helpers import one_stderr_line, write_yaml

from mmrag.cli import main
from mmrag.runs import read_records


# -- a YAML alias bomb -------------------------------------------------------------------------------
def _bomb() -> str:
    """Nine levels of nine aliases: 9^9 (387 million) values when expanded."""
    lines = ['a0: &a0 ["lol"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_yaml_alias_bomb_is_refused_by_every_config_reader(tmp_path, capsys):
    import time

    from mmrag.errors import InputError
    from mmrag.scenarios.templates import load_template
    from mmrag.util import invalid_value

    bomb = _bomb()
    run_cfg = tmp_path / "run.yaml"
    run_cfg.write_text("benchmarks: [{name: demo}]\nmodels: [{backend: always-deflect}]\n" + bomb)
    sweep_cfg = tmp_path / "sweep.yaml"
    sweep_cfg.write_text("name: s\nbase: {kind: oracle}\naxes: {}\n" + bomb)
    curate_cfg = tmp_path / "curate.yaml"
    curate_cfg.write_text("benchmark: {name: demo}\ngating_models: [{backend: always-deflect}]\n" + bomb)
    template = tmp_path / "t.yaml"
    template.write_text("id: t\nversion: '1'\n" + bomb)
    t0 = time.monotonic()
    for argv in (
        ["run", "--config", str(run_cfg), "--out", str(tmp_path / "r")],
        ["sweep", "--config", str(sweep_cfg), "--out", str(tmp_path / "s")],
        ["curate", "--config", str(curate_cfg), "--out", str(tmp_path / "c")],
    ):
        assert main(argv) != 0
        line = one_stderr_line(capsys, "error")
        assert "aliases" in line and "not allowed" in line and re.search(r"\.yaml:\d+: ", line), line
    with pytest.raises(InputError, match="aliases"):
        load_template(template)
    assert time.monotonic() - t0 < 60
    # the validator walks a shared subtree once (a bomb built in Python, not from YAML)
    leaf: list = ["lol"]
    for _ in range(9):
        leaf = [leaf] * 9
    t0 = time.monotonic()
    assert invalid_value({"a": leaf}) is None
    assert invalid_value({"a": leaf, "b": [float("nan")]}) == (
        "b.0",
        "non-finite number (NaN or Infinity) is not allowed",
    )
    assert time.monotonic() - t0 < 1
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    assert invalid_value(deep) is None  # no recursion limit either


# -- the same model or benchmark twice ---------------------------------------------------------------
def test_a_model_or_benchmark_named_twice_is_refused(tmp_path, capsys):
    for argv, what in (
        (["-b", "demo,demo", "-m", "always-deflect"], "benchmark 'demo'"),
        (["-b", "demo", "-m", "always-deflect,always-deflect"], "model 'always-deflect'"),
        (
            ["-b", "demo", "-m", "sim-vlm:text_prior=0.5", "-m", "sim-vlm:text_prior=0.5"],
            "model 'sim-vlm:text_prior=0.5'",
        ),
    ):
        out = tmp_path / "r"
        assert main(["run", *argv, "--out", str(out)]) != 0
        line = one_stderr_line(capsys, "error")
        assert what in line and "named twice" in line
        assert not out.exists()
    cfg = write_yaml(
        tmp_path / "c.yaml",
        {"benchmarks": [{"name": "demo"}], "models": [{"backend": "always-deflect"}, {"backend": "always-deflect"}]},
    )
    assert main(["run", "--config", str(cfg), "--out", str(tmp_path / "r")]) != 0
    assert "named twice" in one_stderr_line(capsys, "error")
    assert (
        main(
            [
                "sweep",
                "--config",
                "distractor-curve",
                "-m",
                "context-reader,context-reader",
                "--out",
                str(tmp_path / "s"),
            ]
        )
        != 0
    )
    assert "named twice" in one_stderr_line(capsys, "error")


# -- unbounded lines ---------------------------------------------------------------------------------
def test_a_line_without_end_is_refused_after_a_bounded_read(tmp_path, monkeypatch):
    import gzip
    import tracemalloc

    from mmrag.benchmarks.deflection import load_kb
    from mmrag.benchmarks.sources.tables import iter_jsonl_any
    from mmrag.distributed.kb_blocks import plan_blocks
    from mmrag.errors import InputError
    from mmrag.util import iter_jsonl

    monkeypatch.setenv("MMRAG_MAX_LINE_BYTES", str(1 << 20))
    bomb = tmp_path / "kb-part.jsonl.gz"
    with gzip.open(bomb, "wb", compresslevel=1) as fh:  # 2 lines, then 160 MB of NULs without a newline
        fh.write(b'{"id": "d1", "modality": "text", "text": "a"}\n\n')
        block = b"\0" * (1 << 20)
        for _ in range(160):
            fh.write(block)
    assert bomb.stat().st_size < 5_000_000
    tracemalloc.start()
    with pytest.raises(InputError) as info:
        list(iter_jsonl_any(bomb))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert info.value.path == str(bomb) and info.value.line == 3 and "longer than 1048576 bytes" in str(info.value)
    assert peak < 40_000_000, peak
    plain = tmp_path / "kb.jsonl"
    plain.write_bytes(b'{"id": "d1", "modality": "text", "text": "a"}\n' + b"x" * (3 << 20))
    for read in (lambda p: list(iter_jsonl(p)), load_kb, lambda p: plan_blocks(p, 10)):
        with pytest.raises(InputError) as info:
            read(plain)
        assert info.value.path == str(plain) and info.value.line == 2 and "longer than" in info.value.message
    ok = tmp_path / "ok.jsonl"  # a long line under the bound is read as before
    ok.write_text(json.dumps({"id": "d1", "modality": "text", "text": "y" * 900_000}) + "\n")
    assert [ln for ln, _ in iter_jsonl(ok)] == [1]


# -- a file-size limit, a full disk ------------------------------------------------------------------
def _env(home: Path) -> dict:
    import os

    root = Path(__file__).resolve().parents[1]
    return {
        **os.environ,
        "MMRAG_HOME": str(home),
        "PYTHONPATH": str(root),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }


def _flushing_run_config(tmp_path: Path, limit: int) -> Path:
    """A small uncached run that commits a segment every 4 records, so a write fails mid-run."""
    return write_yaml(
        tmp_path / "run.yaml",
        {
            "benchmarks": [{"name": "demo"}],
            "models": [{"backend": "always-deflect"}],
            "scenarios": [{"kind": "parametric"}],
            "limit": limit,
            "flush_every": 4,
            "flush_seconds": 0.01,
            "cache": {"enabled": False},
        },
    )


def test_efbig_is_the_clear_disk_full_line_and_the_manifest_says_failed(tmp_path, module_home):
    import resource
    import subprocess
    import sys

    cfg = _flushing_run_config(tmp_path, limit=200)
    run = tmp_path / "run"
    assert main(["run", "--config", str(cfg), "--out", str(tmp_path / "warm")]) == 0  # the demo world, built once

    def limit_file_size() -> None:  # 12 KB per file: the manifest fits, the record segments do not
        resource.setrlimit(resource.RLIMIT_FSIZE, (12 << 10, 12 << 10))

    res = subprocess.run(
        [sys.executable, "-m", "mmrag.cli", "run", "--config", str(cfg), "--out", str(run)],
        env=_env(module_home),
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limit_file_size,
    )
    assert res.returncode != 0 and "Traceback" not in res.stderr, res.stderr[-3000:]
    line = [ln for ln in res.stderr.splitlines() if "mmrag: error" in ln]
    assert len(line) == 1 and "file too large" in line[0] and "mmrag run --resume" in line[0], res.stderr[-2000:]
    assert json.loads((run / "manifest.json").read_text())["status"] == "failed"
    assert main(["run", "--resume", str(run)]) == 0
    assert len(read_records(run)) == 200
    assert json.loads((run / "manifest.json").read_text())["status"] == "complete"


def test_a_full_disk_leaves_the_manifest_failed(tmp_path, capsys, monkeypatch, module_home):
    import errno
    import os

    cfg = _flushing_run_config(tmp_path, limit=60)
    run = tmp_path / "run"
    calls = {"n": 0}
    real_fsync = os.fsync

    def fsync(fd):  # from the 6th fsync on, the disk is full
        calls["n"] += 1
        if calls["n"] >= 6:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    assert main(["run", "--config", str(cfg), "--out", str(run)]) != 0
    assert "no space left on device" in one_stderr_line(capsys, "error")
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert json.loads((run / "manifest.json").read_text())["status"] == "failed"


# -- smaller ones -------------------------------------------------------------------------------------
def test_out_into_a_folder_of_other_files_is_refused(tmp_path, capsys, module_home):
    foreign = tmp_path / "docs"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    argv = ["run", "-b", "demo", "-m", "always-deflect", "--scenarios", "parametric", "--limit", "2"]
    assert main([*argv, "--out", str(foreign)]) != 0
    line = one_stderr_line(capsys, "error")
    assert "not empty and holds no run" in line and "notes.txt" in line and str(foreign) in line
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]  # nothing written there
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main([*argv, "--out", str(empty)]) == 0  # an empty folder is fine
    assert main([*argv, "--out", str(empty)]) == 0  # and so is a run's own
    assert main(["run", "--resume", str(empty)]) == 0


def test_the_distractors_error_names_the_real_flag(tmp_path, capsys):
    assert main(["run", "-b", "demo", "-m", "always-deflect", "--distractors", "99", "--out", str(tmp_path / "r")]) != 0
    line = one_stderr_line(capsys, "error")
    assert "'--distractors'" in line and "--n-distractors" not in line


def test_a_key_given_twice_in_a_json_line_is_refused(tmp_path):
    from mmrag.benchmarks.deflection import load_kb
    from mmrag.errors import InputError

    kb = tmp_path / "kb.jsonl"
    kb.write_text(
        '{"id": "d1", "modality": "text", "text": "a"}\n{"id": "d2", "modality": "text", "text": "b", "text": "c"}\n'
    )
    with pytest.raises(InputError) as info:
        load_kb(kb)
    assert info.value.path == str(kb) and info.value.line == 2 and info.value.field == "text"
    assert "duplicate key 'text'" in info.value.message
