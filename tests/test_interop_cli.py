"""Small frictions met by a researcher coming from lmms-eval or Inspect: their flag spellings, a
retriever config that cannot be built, help text that names the files a run really holds."""

from __future__ import annotations

import json

import yaml

from mmrag.cli import main


def test_lmms_eval_flag_spellings_are_aliases(tmp_path, module_home):
    out = tmp_path / "run"
    argv = ["run", "-b", "demo", "-m", "always-deflect", "--scenarios", "parametric", "--limit", "2"]
    assert (
        main([*argv, "--gen_kwargs", "num_beams=1", "--max_new_tokens", "16", "--top_p", "0.9", "--out", str(out)]) == 0
    )
    (model,) = json.loads((out / "manifest.json").read_text())["config"]["models"]
    assert model["settings"]["max_new_tokens"] == 16 and model["settings"]["top_p"] == 0.9
    assert model["settings"]["extra"] == {"num_beams": 1}


def test_lmms_eval_max_tokens_is_refused_with_what_it_means(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "-b", "demo", "--max_tokens", "64", "--out", str(out)]) != 0
    err = capsys.readouterr().err
    assert "budget of all tokens" in err and "--max-new-tokens" in err and "Traceback" not in err
    assert not out.exists()


def test_a_retriever_missing_its_index_is_one_line(tmp_path, module_home, capsys):
    cfg = tmp_path / "run.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "benchmarks": [{"name": "demo"}],
                "models": ["always-deflect"],
                "limit": 2,
                "scenarios": [{"kind": "realistic", "n_distractors": 1}],
                "retrieval": {"retrievers": {"text": {"name": "dense"}}},
            }
        )
    )
    out = tmp_path / "run"
    assert main(["run", "--config", str(cfg), "--out", str(out)]) != 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "error" in ln]
    assert len(lines) == 1 and "retriever 'dense'" in lines[0] and "'index'" in lines[0], err[-2000:]
    assert "Traceback" not in err and "TypeError" not in err and not out.exists()


def test_report_help_names_what_a_run_directory_holds(capsys):
    try:
        main(["report", "--help"])
    except SystemExit:
        pass
    text = capsys.readouterr().out
    assert "samples.jsonl" not in text and "--by" in text
