"""Runs under the streaming engine survive SIGKILL at random points, fail loudly when the server is
dead and are then completed by ``--resume``, refuse a second writer, count every failure by an
honest class, and leak no secret."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from loopback_core import Action
from loopback_server import LoopbackServer

from mmrag.runs import read_records
from mmrag.runs.segments import live_segments

ROOT = Path(__file__).resolve().parents[1]


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "MMRAG_HOME": str(home),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": str(ROOT),
        },
        **extra,
    )
    return env


def _config(
    tmp: Path,
    url: str,
    *,
    limit: int = 10,
    scenarios: list[str] | None = None,
    window: int = 4,
    options: dict | None = None,
    **extra,
) -> Path:
    """A run.yaml: one OpenAI-compatible model, no response cache (every cell is a real request)."""
    cfg = {
        "benchmarks": [{"name": "demo"}],
        "limit": limit,
        "cache": {"enabled": False},
        "models": [
            {
                "backend": "openai",
                "model": "echo-model",
                "base_url": url,
                "max_concurrency": window,
                "options": {"max_retries": 1, "backoff_initial": 0.01, "backoff_max": 0.05, **(options or {})},
            }
        ],
        **extra,
    }
    if scenarios:
        cfg["scenarios"] = [{"kind": k} for k in scenarios]
    path = tmp / f"run-{random.random():.9f}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _run(*args: str, home: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mmrag.cli", "run", *args],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _committed(run_dir: Path) -> int:
    return sum(pq.ParquetFile(p).metadata.num_rows for p in live_segments(run_dir / "records"))


def _essence(run_dir: Path) -> dict[str, tuple]:
    """What must be identical between an interrupted-and-resumed run and an uninterrupted one."""
    out = {}
    for r in read_records(run_dir):
        assert r.key not in out, "duplicate record after resume"
        out[r.key] = (r.prompt.id, r.response.text, r.response.error, r.verdict.outcome, r.verdict.extracted)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("rel_home")


def test_sigkill_at_random_points_then_resume_is_identical(tmp_path, home):
    with LoopbackServer(latency=0.2, latency_sigma=1.0, echo=True, record_bodies=False) as srv:
        # parametric + oracle need no negative mining: start-up stays short, every kill is cheap; 80 cells
        # at a 0.2 s median leave room for ten kills however fast the machine is
        cfg = _config(tmp_path, srv.url, limit=40, scenarios=["parametric", "oracle"], flush_every=3, flush_seconds=0.1)
        ref = tmp_path / "ref"
        res = _run("--config", str(cfg), "--out", str(ref), home=home)
        assert res.returncode == 0, res.stderr[-2000:]
        expected = _essence(ref)
        total = len(expected)
        assert total == 80  # 40 samples x 2 scenarios

        rng = random.Random(1234)
        run = tmp_path / "killed"
        kills = 0
        for _attempt in range(40):
            if kills >= 10:
                break
            # kill points spread over the whole run: a few records past where the last attempt died
            # (0 = during start-up, before anything is written)
            target = min(total - 1, _committed(run) + rng.randrange(0, 4))
            cmd = (
                ["--resume", str(run)]
                if (run / "manifest.json").exists()
                else ["--config", str(cfg), "--out", str(run)]
            )
            proc = subprocess.Popen(
                [sys.executable, "-m", "mmrag.cli", "run", *cmd],
                env=_env(home),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            deadline = time.time() + 120
            while proc.poll() is None and _committed(run) < target and time.time() < deadline:
                time.sleep(0.005)
            time.sleep(rng.random() * 0.02)
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
            proc.wait()
            if _committed(run) >= total:
                break
        assert kills >= 10
        res = _run("--resume", str(run), home=home)
        assert res.returncode == 0, res.stderr[-2000:]
        assert _essence(run) == expected
        assert json.loads((run / "manifest.json").read_text())["status"] == "complete"


def test_dead_server_fails_the_run_then_resume_against_a_live_one_fills_every_cell(tmp_path, home):
    port = _free_port()
    url = f"http://127.0.0.1:{port}/v1"
    cfg = _config(tmp_path, url, limit=6, scenarios=["parametric", "oracle"])
    out = tmp_path / "dead"
    res = _run("--config", str(cfg), "--out", str(out), home=home)
    assert res.returncode != 0
    line = [ln for ln in res.stderr.splitlines() if "run failed" in ln]
    assert len(line) == 1 and "connection" in line[0] and "error budget" in line[0], res.stderr[-2000:]
    recs = read_records(out)
    assert recs and all(r.response.error == "connection" for r in recs)  # refused is not a server error
    assert all(r.verdict.outcome == "unparseable" and r.verdict.judge_id == "engine" for r in recs)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "failed" and manifest["counts"]["failed"] == len(recs)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["failed_by_model"] == {"openai:echo-model": len(recs)}
    assert all(g["n"] == 0 for g in summary["groups"])  # nothing measured, no rates

    with LoopbackServer(port=port, echo=True, record_bodies=False) as srv:
        res = _run("--resume", str(out), home=home)
        assert res.returncode == 0, res.stderr[-2000:]
        assert srv.stats()["requests"] == 12
    recs = read_records(out)
    assert len(recs) == 12 and all(r.response.error is None for r in recs)
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"


def test_second_concurrent_resume_is_refused(tmp_path, home):
    with LoopbackServer(latency=0.0, echo=True, record_bodies=False) as srv:
        # the first run answers one cell, then hangs on the next: it holds the directory until killed
        srv.script(Action.answer("first"), *[Action.hang(300.0) for _ in range(7)])
        cfg = _config(
            tmp_path,
            srv.url,
            limit=8,
            scenarios=["oracle"],
            window=1,
            flush_every=1,
            options={"timeout": 600, "deadline": 600},
        )
        out = tmp_path / "busy"
        first = subprocess.Popen(
            [sys.executable, "-m", "mmrag.cli", "run", "--config", str(cfg), "--out", str(out)],
            env=_env(home),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.time() + 180
        while _committed(out) < 1 and time.time() < deadline and first.poll() is None:
            time.sleep(0.02)
        second = _run("--resume", str(out), home=home)
        assert first.poll() is None, "the first run ended before the second started: nothing was tested"
        assert second.returncode != 0 and "in use by another mmrag process" in second.stderr
        assert _committed(out) == 1  # the refused process wrote nothing
        first.kill()
        first.wait()
        srv.reset()
        res = _run("--resume", str(out), home=home)  # the lock died with its process
        assert res.returncode == 0, res.stderr[-2000:]
    assert len(_essence(out)) == 8
    assert json.loads((out / "summary.json").read_text())["n_records"] == 8


def test_fault_injected_server_run_finishes_and_counts_failures(tmp_path, home):
    with LoopbackServer(latency=0.0, echo=True) as srv:
        srv.script(
            Action.status(500),
            Action.status(500),
            Action.status(500),
            Action.status(500),
            Action.malformed(),
            Action.malformed(),
            Action.answer("cut off here", finish_reason="length"),
            Action.answer("fine", usage={"prompt_tokens": "lots", "completion_tokens": [1]}),
            Action.status(429, retry_after=0),
            Action.answer("Sorry, I cannot answer this question."),
        )
        cfg = _config(tmp_path, srv.url, limit=6, scenarios=["oracle"], window=1, max_failures=1.0)
        out = tmp_path / "faulty"
        res = _run("--config", str(cfg), "--out", str(out), home=home)
        assert res.returncode == 0, res.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    recs = read_records(out)
    assert len(recs) == 6
    by_error = {r.response.error for r in recs if r.response.error}
    assert by_error == {"server_error", "bad_response"}
    assert sum(summary["errors"].values()) == sum(1 for r in recs if r.response.error)
    for r in recs:
        if r.response.error:
            assert r.verdict.outcome == "unparseable" and r.response.text == ""
    cut = [r for r in recs if r.response.finish_reason == "length"]
    assert len(cut) == 1 and cut[0].verdict.outcome == "unparseable" and "not scored" in cut[0].verdict.reason
    fine = [r for r in recs if r.response.text == "fine"]
    assert len(fine) == 1 and fine[0].response.usage.prompt_tokens == 0  # malformed usage: zero, not a stop
    assert "Failed requests by class" in (out / "summary.md").read_text()
    assert summary["incomplete_replies"] == 1


def test_request_deadline_and_reply_size_bound_one_request():
    from mmrag.models import GenerationSettings, OpenAICompatible
    from mmrag.schema import ContentPart, Message, Prompt

    p = Prompt(sample_id="s", messages=[Message(role="user", content=[ContentPart(type="text", text="hi")])])
    with LoopbackServer(echo=True) as srv:
        srv.script(Action.hang(5.0))
        m = OpenAICompatible("m", srv.url, options={"deadline": 0.5, "timeout": 30, "max_retries": 0})
        t0 = time.monotonic()
        [r] = m.generate([p], GenerationSettings())
        assert r.error == "deadline" and time.monotonic() - t0 < 3
        srv.script(Action.answer("x" * 300_000))
        m = OpenAICompatible("m", srv.url, options={"max_reply_bytes": 100_000, "max_retries": 0})
        [r] = m.generate([p], GenerationSettings())
        assert r.error == "reply_too_large"


def test_limiter_ignores_lognormal_latency_and_backs_off_on_overload_honouring_retry_after():
    import asyncio

    from mmrag.models.concurrency import AIMDLimiter

    rng = random.Random(7)
    lim = AIMDLimiter(cap=32, initial=32)

    async def steady() -> None:
        for _ in range(5000):
            t = await lim.acquire()
            lim.release(t, "ok", 0.3 * rng.lognormvariate(0.0, 1.0))

    asyncio.run(steady())
    assert lim.decreases == 0 and lim.allowed == 32

    async def overload() -> float:
        t = await lim.acquire()
        lim.release(t, "overload")
        lim.hold(0.3)
        t0 = time.monotonic()
        t = await lim.acquire()
        lim.release(t, "ok", 0.1)
        return time.monotonic() - t0

    waited = asyncio.run(overload())
    assert lim.decreases == 1 and lim.allowed < 32 and waited >= 0.25


def test_no_secret_from_environment_in_run_files(tmp_path, home):
    secret = "sk-test-SECRET-value-0123456789"
    with LoopbackServer(latency=0.0, echo=True) as srv:
        out = tmp_path / "secret"
        cmd = [
            sys.executable,
            "-m",
            "mmrag.cli",
            "run",
            "--benchmark",
            "demo",
            "--model",
            "openai:echo-model",
            "--base-url",
            srv.url,
            "--limit",
            "3",
            "--scenarios",
            "oracle",
            "--api-key-env",
            "MY_PROVIDER_API_KEY",
            "--out",
            str(out),
        ]
        res = subprocess.run(
            cmd, env=_env(home, MY_PROVIDER_API_KEY=secret), capture_output=True, text=True, timeout=300
        )
        assert res.returncode == 0, res.stderr[-2000:]
        auth = {r.headers.get("authorization") for r in srv.records if r.path.endswith("/chat/completions")}
        assert auth == {f"Bearer {secret}"}
    for f in out.rglob("*"):
        if f.is_file():
            text = f.read_text(errors="ignore")
            if f.suffix == ".parquet":  # compressed: look at the decoded values
                text = json.dumps(pq.read_table(f).to_pylist(), default=str)
            assert secret not in text, f"secret leaked into {f}"
    for f in Path(home).rglob("*"):
        if f.is_file() and f.stat().st_size < 50_000_000:
            assert secret.encode() not in f.read_bytes(), f"secret leaked into {f}"
