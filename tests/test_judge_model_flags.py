"""``--judge-model BACKEND:MODEL`` (with ``--judge-base-url`` and ``--judge-api-key-env``) on every
command that judges — judge, run, sweep, score, curate — against a real HTTP grader on loopback.
Judge calls go through the model layer: cached (a second pass sends nothing) and failures counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from cli_runs import cli_run
from loopback_core import Action, last_user_text
from loopback_server import LoopbackServer

import mmrag
from mmrag.cli import main

SWEEP = Path(mmrag.__file__).parent / "configs" / "sweeps" / "distractor-curve.yaml"
KEY = "MMRAG_TEST_JUDGE_KEY"
GRADER = ["--judge-model", "openai:grader", "--judge-api-key-env", KEY]


@pytest.fixture(scope="module")
def home(module_home):
    return module_home


@pytest.fixture()
def key(monkeypatch):
    monkeypatch.setenv(KEY, "sk-judge-secret")
    return "sk-judge-secret"


def graded(srv: LoopbackServer) -> list:
    return [r for r in srv.records if r.path.endswith("/chat/completions")]


def records(run_dir: Path) -> list[dict]:
    from mmrag.runs import read_records

    return [r.model_dump(mode="json") for r in read_records(run_dir)]


def test_judge_command_rule_plus_llm_caches_and_fails_on_a_failed_judge_call(home, tmp_path, key, capsys):
    rows = [
        {
            "id": "a",
            "source": "viquae",
            "question": "Who designed the tower?",
            "answers": ["Gustave Eiffel"],
            "response": "It was designed by Eiffel.",
        },  # undecided by the rules: sent
        {"id": "b", "source": "viquae", "question": "Which city is this?", "answers": ["Lyon"], "response": "Lyon"},
        {
            "id": "c",
            "source": "viquae",
            "question": "In which year was this tower built?",
            "answers": ["1887"],
            "response": "1902.",
        },  # decided (another year): kept
        {
            "id": "d",
            "source": "viquae",
            "question": "Which city is this?",
            "answers": ["Lyon"],
            "response": "The passages do not say.",
        },
    ]  # decided (a refusal): kept
    f = tmp_path / "in.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with LoopbackServer(answer="B") as srv:
        args = [
            "judge",
            "--input",
            str(f),
            "--output",
            str(tmp_path / "o.jsonl"),
            "--judge",
            "rule+llm",
            *GRADER,
            "--judge-base-url",
            srv.url,
        ]
        assert main(args) == 0
        first = json.loads(capsys.readouterr().out)
        assert first["judged_by_llm"] == 1
        assert first["counts"] == {"hallucination": 2, "correct": 1, "deflection": 1}
        sent = graded(srv)
        assert len(sent) == 1 and sent[0].headers["authorization"] == f"Bearer {key}"
        assert "Predicted answer: It was designed by Eiffel." in last_user_text(sent[0].body)
        assert main(args) == 0  # second pass: served from the cache
        again = json.loads(capsys.readouterr().out)
        assert len(graded(srv)) == 1 and again["judge_cached"] == 1
    with LoopbackServer(answer="B") as bad:
        bad.script(Action.bad_shape())
        assert (
            main(
                [
                    "judge",
                    "--input",
                    str(f),
                    "--output",
                    str(tmp_path / "o2.jsonl"),
                    "--judge",
                    "llm",
                    "--no-cache",
                    *GRADER,
                    "--judge-base-url",
                    bad.url,
                ]
            )
            == 1
        )
        # a failed judge call is not a verdict: one line, and no output file
        err = capsys.readouterr().err
        assert "LLM judge failed on 1 of 4 records" in err and "bad_response" in err
        assert not (tmp_path / "o2.jsonl").exists()
    assert main(["judge", "--input", str(f), "--output", str(tmp_path / "o3.jsonl"), "--judge", "llm"]) == 2


def test_run_command_takes_the_judge_model(home, tmp_path, key):
    with LoopbackServer(answer="C") as srv:
        out = tmp_path / "run"
        cli_run(out, "--judge", "llm", *GRADER, "--judge-base-url", srv.url)
        recs = records(out)
        assert len(recs) == 2 and len(graded(srv)) >= 1
        assert all(
            r["verdict"]["outcome"] == "deflection" and r["verdict"]["judge_id"].startswith("llm-") for r in recs
        )
        cfg = json.loads((out / "manifest.json").read_text())["config"]["judge"]
        assert cfg["mode"] == "llm" and cfg["model"]["api_key_env"] == KEY
        assert key not in (out / "manifest.json").read_text()


def test_sweep_command_takes_the_judge_model(home, tmp_path, key):
    with LoopbackServer(answer="C") as srv:
        assert (
            main(
                [
                    "sweep",
                    "--config",
                    str(SWEEP),
                    "--benchmark",
                    "demo",
                    "--model",
                    "always-deflect",
                    "--limit",
                    "1",
                    "--judge",
                    "llm",
                    *GRADER,
                    "--judge-base-url",
                    srv.url,
                    "--out",
                    str(tmp_path / "sweep"),
                ]
            )
            == 0
        )
        assert len(graded(srv)) >= 1
        assert {r["verdict"]["outcome"] for r in records(tmp_path / "sweep")} == {"deflection"}


def test_score_command_takes_the_judge_model(home, tmp_path, key, capsys):
    out = cli_run(tmp_path / "run")
    with LoopbackServer(answer="B") as srv:
        assert main(["score", str(out), "--judge", "llm", *GRADER, "--judge-base-url", srv.url]) == 0
        assert "outcomes changed: 2" in capsys.readouterr().out
        assert all(r.headers["authorization"] == f"Bearer {key}" for r in graded(srv))


def test_curate_command_takes_the_judge_model(home, tmp_path, key):
    cfg = {
        "benchmark": {"name": "demo"},
        "modalities": ["text"],
        "negatives_per_modality": 1,
        "k_min": 0,
        "gating_models": [{"backend": "always-deflect"}],
        "limit": 2,
        "cache": {"enabled": False},
    }
    path = tmp_path / "curate.yaml"
    path.write_text(yaml.safe_dump(cfg))
    with LoopbackServer(answer="B") as srv:
        assert (
            main(
                [
                    "curate",
                    "--config",
                    str(path),
                    "--out",
                    str(tmp_path / "cur"),
                    "--judge",
                    "llm",
                    *GRADER,
                    "--judge-base-url",
                    srv.url,
                ]
            )
            == 0
        )
        assert len(graded(srv)) >= 1
    saved = json.loads((tmp_path / "cur" / "config.json").read_text())
    assert saved["judge"]["mode"] == "llm" and saved["judge"]["model"]["base_url"] == srv.url
