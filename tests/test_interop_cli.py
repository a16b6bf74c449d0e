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


def test_resume_of_a_finished_run_answers_from_the_manifest(tmp_path, module_home):
    """Nothing to do is said from the manifest: no pandas, no engine, no benchmark, about a second."""
    import os
    import subprocess
    import sys
    import time
    from pathlib import Path

    out = tmp_path / "run"
    argv = ["run", "-b", "demo", "-m", "always-deflect", "--scenarios", "parametric", "--limit", "2"]
    assert main([*argv, "--out", str(out)]) == 0
    code = (
        "import sys\nfrom mmrag.cli import main\n"
        f"rc = main(['run', '--resume', {str(out)!r}])\n"
        "heavy = [m for m in ('pandas', 'pyarrow', 'torch', 'mmrag.runs.engine') if m in sys.modules]\n"
        "print('HEAVY', heavy)\nsys.exit(rc)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    wall = time.perf_counter() - t0
    assert res.returncode == 0, res.stderr[-2000:]
    text = " ".join(res.stdout.split())
    assert "nothing to do" in text and "2 of 2 cells" in text
    assert "HEAVY []" in text
    assert wall < 4.0, wall  # about 1.3 s on an idle 2-core machine; the bound leaves room for a busy one


def test_a_named_retriever_is_told_to_fill_only_shortfalls(tmp_path, module_home, capsys):
    """With curated negatives (the default) the run says that the retriever only fills a shortfall;
    with ``negatives: regenerate`` it supplies every negative and nothing is said."""
    for negatives, said in (("curated", True), ("regenerate", False)):
        cfg = tmp_path / f"{negatives}.yaml"
        scenario = {"kind": "realistic", "n_distractors": 1, "negative_modality": "text", "negatives": negatives}
        cfg.write_text(
            yaml.safe_dump(
                {
                    "benchmarks": [{"name": "demo"}],
                    "models": ["always-deflect"],
                    "limit": 2,
                    "scenarios": [scenario],
                    "retrieval": {"retrievers": {"text": "bm25"}},
                }
            )
        )
        assert main(["run", "--config", str(cfg), "--out", str(tmp_path / negatives)]) == 0
        err = " ".join(capsys.readouterr().err.split())
        assert ("curated negatives come first" in err) is said, err[-1500:]


def test_a_baseline_that_cannot_answer_a_dataset_says_so_before_the_run(tmp_path, module_home, capsys):
    """hf: data without contexts: the context reader (reads only contexts) and the simulated VLM
    (knows only the demo world) would deflect on everything; each says so at the start. On the
    demo with an oracle scenario, neither warns."""
    import datasets

    ds = tmp_path / "ds"
    data = {"question": ["What is the capital of France?", "Who wrote Hamlet?"], "answer": ["Paris", "Shakespeare"]}
    datasets.Dataset.from_dict(data).save_to_disk(str(ds))
    argv = ["run", "-b", f"hf:{ds}", "-m", "context-reader,sim-vlm", "--scenarios", "parametric"]
    assert main([*argv, "--out", str(tmp_path / "hf")]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "warning: context-reader reads only the prompt's text contexts" in err
    assert "warning: sim-vlm knows only the demo world" in err and "expect 100 % deflection" in err
    argv = ["run", "-b", "demo", "-m", "context-reader,sim-vlm", "--scenarios", "parametric,oracle", "--limit", "2"]
    assert main([*argv, "--out", str(tmp_path / "demo")]) == 0
    assert "warning:" not in capsys.readouterr().err
