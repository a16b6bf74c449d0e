"""Bad input: one clear error naming the file, line, field or option; a non-zero exit; nothing half-written.

Each case is a command line plus what the error must name, listed BY NAME in :data:`CASES` (a
dropped case must fail, not skip — ``test_every_case_is_defined`` checks that each named case
exists).  Cases run in-process through ``mmrag.cli.main`` (the console script's code path).
The cases are built by ``tests/bad_inputs.py``; the fixture writers are ``tests/bad_input_files.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from bad_inputs import build_cases

from mmrag.cli import main

#: every bad input the suite guarantees a clear error for
CASES = (
    # configs and flags
    "config misspelt field",
    "config invalid yaml",
    "config missing",
    "config wrong type",
    "config not utf-8",
    "config duplicate key",
    "config limit true",
    "config temperature negative",
    "config max_new_tokens zero",
    "config oracle with distractors",
    "config benchmark option wrongly typed",
    "config retriever path names a non-class",
    "config retriever path without allow-code",
    "config ftp base url",
    "config negative timeout",
    "unknown benchmark",
    "unknown model backend",
    "unknown baseline",
    "unknown scenario",
    "distractors not ints",
    "distractors negative",
    "unknown strictness",
    "unknown negative modality",
    "max-new-tokens negative",
    "max-new-tokens zero",
    "resume without manifest",
    "resume with damaged manifest",
    "api key env unset",
    "gen-kwargs api key",
    "gen-kwargs bearer value",
    "config settings extra token",
    "base url with userinfo",
    "one model under two spellings",
    # run --source
    "source file missing",
    "deflection invalid json",
    "deflection missing field",
    "deflection missing image",
    "deflection corrupt image",
    "deflection unknown source",
    "deflection not utf-8",
    "deflection parquet as jsonl",
    "deflection NaN in numeric_ranges",
    "deflection Infinity in metadata",
    "deflection empty file",
    "deflection TIFF image for an openai model",
    "deflection decompression bomb",
    "knowhal bad dimension",
    "knowhal not utf-8",
    "humblebench bad label",
    "humblebench jsonl as parquet",
    "humblebench parquet with non-image bytes",
    # response cache
    "cache file is not sqlite",
    "cache path is a folder",
    # benchmark validate
    "validate reports line and field",
    "validate deflection not utf-8",
    "validate kb not utf-8",
    "validate knowhal not utf-8",
    "validate humblebench not utf-8",
    "validate deflection parquet",
    "validate kb parquet",
    "validate knowhal parquet",
    "validate kb on a folder",
    "validate NaN",
    "validate empty file",
    # index, judge, score
    "kb record missing text",
    "empty kb",
    "kb not utf-8",
    "kb parquet as jsonl",
    "index shard size negative",
    "index dir missing",
    "judge input missing field",
    "judge input not utf-8",
    "judge input parquet",
    "judge-agreement not utf-8",
    "judge-agreement parquet",
    "judge-agreement id twice",
    "judge-agreement two empty files",
    "report out into a folder of other files",
    "export out into a folder of other files",
    "label import at not a date",
    "score predictions malformed",
    "score predictions not utf-8",
    "score predictions parquet",
    "sweep bad field",
    "sweep duplicate key",
    "curate bad field",
)


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return build_cases(tmp_path_factory.mktemp("bad_inputs"))


def test_every_case_is_defined(cases):
    assert set(CASES) <= set(cases), f"cases named but not defined: {sorted(set(CASES) - set(cases))}"
    assert len(CASES) == len(set(CASES))


@pytest.mark.parametrize("name", CASES)
def test_bad_input(name, cases, capsys, monkeypatch, module_home):
    monkeypatch.delenv("MMRAG_TEST_UNSET_KEY", raising=False)
    argv, needles, must_not_exist = cases[name]
    code = main(argv)
    captured = capsys.readouterr()
    err = captured.err
    assert code != 0, f"{name}: exit code 0"
    assert [ln for ln in err.splitlines() if ln.strip()], f"{name}: no error printed"
    assert "Traceback" not in err, f"{name}: traceback instead of a clear error:\n{err}"
    for needle in needles:  # `validate` lists its problems on stdout and the count on stderr
        assert needle in err + captured.out, f"{name}: error does not name {needle!r}:\n{err}{captured.out}"
    if must_not_exist is not None:
        assert not must_not_exist.exists(), f"{name}: left {must_not_exist} behind"


def test_unwritable_output_directory(tmp_path, capsys):
    if os.geteuid() == 0:
        target = Path("/proc/mmrag-cannot-write-here")
    else:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        target = ro / "run"
    code = main(
        [
            "run",
            "--benchmark",
            "demo",
            "--model",
            "always-deflect",
            "--limit",
            "2",
            "--scenarios",
            "parametric",
            "--out",
            str(target),
        ]
    )
    err = capsys.readouterr().err
    assert code != 0 and str(target) in err and "not writable" in err


def test_model_config_errors_come_before_any_index_is_built(tmp_path, capsys, monkeypatch):
    """A realistic scenario needs indices; the bad timeout must be reported first."""
    home = tmp_path / "home"
    monkeypatch.setenv("MMRAG_HOME", str(home))
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "benchmarks: [{name: demo}]\nscenarios: [{kind: realistic, n_distractors: 2}]\n"
        "models: [{backend: openai, model: m, base_url: 'http://127.0.0.1:9/v1', options: {timeout: -1}}]\n"
    )
    assert main(["run", "--config", str(cfg), "--out", str(tmp_path / "run")]) != 0
    assert "models.0.options.timeout" in capsys.readouterr().err
    assert not (home / "indices").exists() and not (tmp_path / "run").exists()


def test_validate_accepts_every_layout_the_loader_reads_and_counts_records(tmp_path, capsys):
    from bad_input_files import humblebench_parquet, png_bytes

    pq_file = humblebench_parquet(tmp_path / "hb.parquet", [png_bytes(), png_bytes("blue")])
    assert main(["benchmark", "validate", str(pq_file), "--benchmark", "humblebench"]) == 0
    assert "2 record(s)" in capsys.readouterr().out
    assert main(["benchmark", "validate", str(tmp_path), "--benchmark", "humblebench"]) == 0  # a folder of parquet
    assert "2 record(s)" in capsys.readouterr().out
