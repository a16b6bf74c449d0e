"""No fault becomes a measurement: a dead judge, gating model or cluster fails the command with one
line and a non-zero exit; ``--resume`` redoes exactly the failed work; hostile bytes from a server
are made valid.  Hostile files and a failing disk are tests/test_faults_files.py."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from fault_helpers import one_stderr_line, write_yaml
from loopback_server import LoopbackServer

from mmrag.cli import main
from mmrag.runs import read_records


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _openai(url: str, name: str = "m") -> dict:
    return {
        "backend": "openai",
        "model": name,
        "base_url": url,
        "options": {"max_retries": 0, "backoff_initial": 0.01, "backoff_max": 0.02},
    }


# -- a dead LLM judge ------------------------------------------------------------------------------
def test_dead_llm_judge_fails_the_run_and_resume_rejudges_exactly_those(tmp_path, capsys, module_home):
    judge_port = _free_port()
    with LoopbackServer(answer="Quellmar") as model_srv:
        cfg = write_yaml(
            tmp_path / "run.yaml",
            {
                "benchmarks": [{"name": "demo"}],
                "limit": 6,
                "scenarios": [{"kind": "parametric"}],
                "cache": {"enabled": False},
                "models": [_openai(model_srv.url)],
                "judge": {"mode": "llm", "model": _openai(f"http://127.0.0.1:{judge_port}/v1", "j")},
            },
        )
        run = tmp_path / "run"
        assert main(["run", "--config", str(cfg), "--out", str(run)]) == 1
        line = one_stderr_line(capsys, "run failed")
        assert "judge_connection" in line and "error budget" in line
        manifest = json.loads((run / "manifest.json").read_text())
        assert manifest["status"] == "failed" and manifest["counts"]["failed"] >= 1
        assert manifest["counts"]["judge_failed"] == manifest["counts"]["failed"]
        recs = read_records(run)
        assert recs and all(r.error == "judge_connection" and r.response.error is None for r in recs)
        summary = json.loads((run / "summary.json").read_text())
        assert summary["judge_errors"] == {"connection": len(recs)}
        assert all(g["n"] == 0 for g in summary["groups"])  # nothing measured, no rates
        assert "Failed judge calls by class" in (run / "summary.md").read_text()
        from mmrag.runs import load

        assert set(load(run)["error"]) == {"judge_connection"}  # the frame (reports) leaves them out too
        asked = model_srv.stats()["requests"]
        assert asked == len(recs)
        with LoopbackServer(port=judge_port, answer="A") as judge_srv:
            assert main(["run", "--resume", str(run)]) == 0, capsys.readouterr().err
            assert judge_srv.stats()["requests"] == 6  # every cell judged once, now
        # the stored replies were judged again: the model was asked only for cells never sent
        assert model_srv.stats()["requests"] == 6
    recs = read_records(run)
    assert len(recs) == 6 and all(r.error is None and r.verdict.outcome == "correct" for r in recs)
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["counts"]["failed"] == 0


def test_score_with_a_dead_llm_judge_exits_non_zero_and_writes_nothing(tmp_path, capsys, module_home):
    run = tmp_path / "run"
    assert (
        main(["run", "-b", "demo", "-m", "context-reader", "--scenarios", "oracle", "--limit", "3", "--out", str(run)])
        == 0
    )
    before = sorted(p.name for p in (run / "verdicts").glob("*")) if (run / "verdicts").exists() else []
    manifest = (run / "manifest.json").read_text()
    capsys.readouterr()
    code = main(
        [
            "score",
            str(run),
            "--judge",
            "llm",
            "--judge-model",
            "openai:j",
            "--judge-base-url",
            f"http://127.0.0.1:{_free_port()}/v1",
        ]
    )
    assert code != 0
    line = one_stderr_line(capsys, "error")
    assert "LLM judge failed on 3 of 3" in line and "connection" in line
    after = sorted(p.name for p in (run / "verdicts").glob("*")) if (run / "verdicts").exists() else []
    assert after == before and (run / "manifest.json").read_text() == manifest


def test_judge_command_with_a_dead_llm_judge_exits_non_zero_and_writes_nothing(tmp_path, capsys):
    records = tmp_path / "in.jsonl"
    records.write_text(
        "".join(
            json.dumps({"id": f"r{i}", "question": "Who designed it?", "answers": ["Gustave Eiffel"], "response": r})
            + "\n"
            for i, r in enumerate(["Gustave Eiffel.", "It was Maurice Koechlin."])
        )
    )
    out = tmp_path / "out.jsonl"
    code = main(
        [
            "judge",
            "--input",
            str(records),
            "--output",
            str(out),
            "--judge",
            "llm",
            "--judge-model",
            "openai:j",
            "--judge-base-url",
            f"http://127.0.0.1:{_free_port()}/v1",
        ]
    )
    assert code != 0
    line = one_stderr_line(capsys, "error")
    assert "LLM judge failed on 2 of 2 records" in line and "connection" in line
    assert not out.exists()


def test_llm_judge_marks_every_failure_and_never_grades_it():
    from mmrag.judging.llm import LLMJudge, judge_failure
    from mmrag.schema import Response, Sample

    class Dead:
        fingerprint = "dead"

        def generate(self, prompts, settings):
            return [
                Response(prompt_id=p.id, error=e, error_detail="x")
                for p, e in zip(prompts, ["connection", "timeout", "server_error", "bad_response"])
            ]

    class Raising:
        fingerprint = "raising"

        def generate(self, prompts, settings):
            raise RuntimeError("backend bug")

    items = [
        (
            Sample(id=f"s{i}", benchmark="t", question="Capital?", answers=["Paris"]),
            None,
            Response(prompt_id=f"p{i}", text="Paris"),
        )
        for i in range(4)
    ]
    for model, classes in (
        (Dead(), ["connection", "timeout", "server_error", "bad_response"]),
        (Raising(), ["other"] * 4),
    ):
        verdicts = LLMJudge(model).judge_many(items)
        assert [judge_failure(v) for v in verdicts] == classes
        assert all(v.outcome == "unparseable" and v.score is None for v in verdicts)


# -- curation: a dead gating model, secrets in its files -------------------------------------------
URL_SECRET = "curate-urlpass-0001"
HDR_SECRET = "curate-hdr-secret-0002"


def _curate_cfg(tmp: Path, url: str, **extra) -> Path:
    gate = {
        "backend": "openai",
        "model": "gate",
        "base_url": f"{url}?api_key={URL_SECRET}",
        "options": {"max_retries": 0, "headers": {"X-Api-Key": HDR_SECRET}},
    }
    return write_yaml(
        tmp / "curate.yaml",
        {
            "benchmark": {"name": "demo"},
            "gating_models": [gate],
            "limit": 4,
            "modalities": ["text"],
            "negatives_per_modality": 2,
            "k_min": 1,
            "cache": {"enabled": False},
            **extra,
        },
    )


def _no_secret_in(folder: Path) -> None:
    for f in folder.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            for s in (URL_SECRET, HDR_SECRET):
                assert s.encode() not in data, f"{s} leaked into {f}"


def test_dead_gating_model_fails_curation_and_decides_nothing(tmp_path, capsys, module_home):
    out = tmp_path / "cur"
    cfg = _curate_cfg(tmp_path, f"http://127.0.0.1:{_free_port()}/v1")
    assert main(["curate", "--config", str(cfg), "--out", str(out)]) == 1
    line = one_stderr_line(capsys, "error")
    assert "gating model openai:gate" in line and "connection" in line
    assert not list(out.glob("stage*_*.jsonl")) and not (out / "curated.jsonl").exists()
    _no_secret_in(out)
    assert (out / "config.json").is_file() and (out / "manifest.json").is_file()


def test_curation_files_hold_no_secret_and_a_rerun_is_accepted(tmp_path, capsys, module_home):
    out = tmp_path / "cur"
    with LoopbackServer(answer="I cannot answer this question.") as srv:
        cfg = _curate_cfg(tmp_path, srv.url)
        assert main(["curate", "--config", str(cfg), "--out", str(out)]) == 0, capsys.readouterr().err
        sent = json.dumps([r.headers for r in srv.records])
        assert HDR_SECRET in sent  # the header did travel
        assert main(["curate", "--config", str(cfg), "--out", str(out)]) == 0, capsys.readouterr().err
    _no_secret_in(out)
    config = json.loads((out / "config.json").read_text())
    assert config["gating_models"][0]["options"]["headers"]["X-Api-Key"] == "***"
    assert config["gating_models"][0]["base_url"].endswith("?api_key=***")


def test_dead_llm_judge_in_curation_is_an_error_not_a_verdict(tmp_path, capsys, module_home):
    out = tmp_path / "cur"
    cfg = write_yaml(
        tmp_path / "c.yaml",
        {
            "benchmark": {"name": "demo"},
            "gating_models": [{"backend": "context-reader"}],
            "limit": 3,
            "cache": {"enabled": False},
            "judge": {"mode": "llm", "model": _openai(f"http://127.0.0.1:{_free_port()}/v1")},
        },
    )
    assert main(["curate", "--config", str(cfg), "--out", str(out)]) == 1
    line = one_stderr_line(capsys, "error")
    assert "LLM judge failed" in line and "connection" in line
    assert not list(out.glob("stage*_*.jsonl"))


# -- hostile text from a server --------------------------------------------------------------------
@pytest.mark.parametrize("cache", [False, True])
def test_a_lone_surrogate_from_the_model_or_the_judge_is_made_valid(tmp_path, capsys, module_home, cache):
    with LoopbackServer(answer="Paris \ud800 and \udfff") as model_srv, LoopbackServer(answer="A \ud800") as judge_srv:
        cfg = write_yaml(
            tmp_path / "run.yaml",
            {
                "benchmarks": [{"name": "demo"}],
                "limit": 3,
                "scenarios": [{"kind": "oracle"}],
                "cache": {"enabled": cache, "path": str(tmp_path / "cache.sqlite")},
                "models": [_openai(model_srv.url)],
                "judge": {"mode": "rule+llm", "model": _openai(judge_srv.url, "j")},
            },
        )
        run = tmp_path / "run"
        assert main(["run", "--config", str(cfg), "--out", str(run)]) == 0, capsys.readouterr().err
        assert (
            main(
                [
                    "run",
                    "-b",
                    "demo",
                    "-m",
                    "openai:m",
                    "--base-url",
                    model_srv.url,
                    "--scenarios",
                    "oracle",
                    "--limit",
                    "3",
                    "--judge",
                    "llm",
                    "--judge-model",
                    "openai:j",
                    "--judge-base-url",
                    judge_srv.url,
                    "--out",
                    str(tmp_path / "flags"),
                ]
                + ([] if cache else ["--no-cache"])
            )
            == 0
        ), capsys.readouterr().err
    for d in (run, tmp_path / "flags"):
        recs = read_records(d)
        assert len(recs) == 3 and all(r.error is None for r in recs)
        assert all(r.response.text == "Paris \ufffd and \ufffd" for r in recs)
        assert json.loads((d / "manifest.json").read_text())["status"] == "complete"
