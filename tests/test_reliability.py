"""Runs survive SIGKILL at random points, count every injected server failure by class, leak no secret."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loopback_server import Action, LoopbackServer

ROOT = Path(__file__).resolve().parents[1]


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"MMRAG_HOME": str(home), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                "HF_DATASETS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}, **extra)
    return env


def _run_cmd(url: str, out: Path, limit: int = 10, extra: tuple[str, ...] = ()) -> list[str]:
    return [sys.executable, "-m", "mmrag.cli", "run", "--benchmark", "demo", "--model", "openai:echo-model",
            "--base-url", url, "--limit", str(limit), "--batch-size", "2", "--no-cache", "--out", str(out), *extra]


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _essence(run_dir: Path) -> dict[str, tuple]:
    """What must be identical between an interrupted-and-resumed run and an uninterrupted one."""
    out = {}
    for line in (run_dir / "samples.jsonl").read_text().splitlines():
        r = json.loads(line)
        assert r["key"] not in out, "duplicate record after resume"
        out[r["key"]] = (r["prompt"]["id"], r["response"]["text"], r["response"]["error"], r["verdict"]["outcome"],
                         r["verdict"]["extracted"])
    return out


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("rel_home")


def test_sigkill_at_random_points_then_resume_is_identical(tmp_path, home):
    with LoopbackServer(latency=0.02, echo=True) as srv:
        ref = tmp_path / "ref"
        res = subprocess.run(_run_cmd(srv.url, ref), env=_env(home), capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr[-2000:]
        expected = _essence(ref)
        total = len(expected)
        assert total == 40  # 10 samples x 4 scenarios

        rng = random.Random(1234)
        run = tmp_path / "killed"
        kills = 0
        for attempt in range(30):
            if kills >= 10:
                break
            # kill points spread over the whole run: a few records past where the last attempt died
            # (0 = during start-up, before anything is written)
            target = min(total - 1, _lines(run / "samples.jsonl") + rng.randrange(0, 4))
            proc = subprocess.Popen(_run_cmd(srv.url, run), env=_env(home), stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            deadline = time.time() + 120
            while proc.poll() is None and _lines(run / "samples.jsonl") < target and time.time() < deadline:
                time.sleep(0.005)
            time.sleep(rng.random() * 0.05)
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
            proc.wait()
            if _lines(run / "samples.jsonl") >= total:
                break
        assert kills >= 10
        res = subprocess.run([sys.executable, "-m", "mmrag.cli", "run", "--resume", str(run)], env=_env(home),
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr[-2000:]
        assert _essence(run) == expected
        assert json.loads((run / "manifest.json").read_text())["status"] == "complete"


def test_fault_injected_server_run_finishes_and_counts_failures(tmp_path, home):
    with LoopbackServer(latency=0.0, echo=True) as srv:
        srv.script(Action.status(500), Action.status(500), Action.status(500), Action.status(500),
                   Action.malformed(), Action.malformed(), Action.malformed(), Action.malformed(),
                   Action.status(429, retry_after=0), Action.answer("Sorry, I cannot answer this question."))
        out = tmp_path / "faulty"
        res = subprocess.run(_run_cmd(srv.url, out, limit=5, extra=("--scenarios", "oracle")), env=_env(home),
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    recs = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len(recs) == 5
    errors = {r["response"]["error"] for r in recs if r["response"]["error"]}
    assert errors, "injected failures must surface as error classes"
    assert sum(summary["errors"].values()) == sum(1 for r in recs if r["response"]["error"])
    for r in recs:
        if r["response"]["error"]:
            assert r["verdict"]["outcome"] == "unparseable" and r["response"]["text"] == ""
    assert "Failed requests by class" in (out / "summary.md").read_text()


def test_no_secret_from_environment_in_run_files(tmp_path, home):
    secret = "sk-test-SECRET-value-0123456789"
    with LoopbackServer(latency=0.0, echo=True) as srv:
        out = tmp_path / "secret"
        cmd = _run_cmd(srv.url, out, limit=3, extra=("--scenarios", "oracle", "--api-key-env", "MY_PROVIDER_API_KEY"))
        res = subprocess.run(cmd, env=_env(home, MY_PROVIDER_API_KEY=secret), capture_output=True, text=True,
                             timeout=300)
        assert res.returncode == 0, res.stderr[-2000:]
        auth = {r.headers.get("authorization") for r in srv.records if r.path.endswith("/chat/completions")}
        assert auth == {f"Bearer {secret}"}
    for f in out.rglob("*"):
        if f.is_file():
            assert secret not in f.read_text(errors="ignore"), f"secret leaked into {f}"
    for f in Path(home).rglob("*"):
        if f.is_file() and f.stat().st_size < 50_000_000:
            assert secret.encode() not in f.read_bytes(), f"secret leaked into {f}"
