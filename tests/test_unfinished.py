"""A run that did not finish says so in every reader: a real ``mmrag run`` subprocess is stopped by
an error (a dead server: the error budget) and then, resumed against a live one, killed with
SIGKILL mid-way; the summary, ``mmrag report``, the HTML browser, the Inspect logs and the lmms-eval
results each say ``incomplete: X of Y cells`` (and what is missing) instead of passing for a
finished run with a scenario simply absent."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from loopback_server import LoopbackServer

from mmrag.runs.segments import live_segments

ROOT = Path(__file__).resolve().parents[1]
SAMPLES, SCENARIOS = 8, ("parametric", "oracle")
PLANNED = SAMPLES * len(SCENARIOS)


def _env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "MMRAG_HOME": str(home),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "PYTHONUNBUFFERED": "1",
        "PYTHONPATH": str(ROOT),
    }


def _mmrag(*args: str, home: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mmrag.cli", *args], env=_env(home), capture_output=True, text=True, timeout=timeout
    )


def _committed(run_dir: Path) -> int:
    return sum(pq.ParquetFile(p).metadata.num_rows for p in live_segments(run_dir / "records"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    """A run stopped by an error, then resumed and SIGKILLed with some cells done (not all)."""
    tmp = tmp_path_factory.mktemp("unfinished")
    home = tmp / "home"
    port = _free_port()
    cfg = {
        "benchmarks": [{"name": "demo"}],
        "limit": SAMPLES,
        "cache": {"enabled": False},
        "scenarios": [{"kind": k} for k in SCENARIOS],
        "flush_every": 1,
        "flush_seconds": 0.05,
        "models": [
            {
                "backend": "openai",
                "model": "echo-model",
                "base_url": f"http://127.0.0.1:{port}/v1",
                "max_concurrency": 1,
                "options": {"max_retries": 1, "backoff_initial": 0.01, "backoff_max": 0.05},
            }
        ],
    }
    config = tmp / "run.yaml"
    config.write_text(yaml.safe_dump(cfg))
    run = tmp / "run"
    res = _mmrag("run", "--config", str(config), "--out", str(run), home=home)  # nothing listens: every cell fails
    assert res.returncode != 0 and "error budget" in res.stderr, res.stderr[-2000:]
    stopped = {
        "manifest": json.loads((run / "manifest.json").read_text()),
        "summary": json.loads((run / "summary.json").read_text()),
        "summary_md": (run / "summary.md").read_text(),
    }
    with LoopbackServer(port=port, latency=0.3, echo=True, record_bodies=False):
        proc = subprocess.Popen(
            [sys.executable, "-m", "mmrag.cli", "run", "--resume", str(run)],
            env=_env(home),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.time() + 240
        ok = lambda: sum(1 for r in _ok_rows(run))  # noqa: E731
        while proc.poll() is None and ok() < 3 and time.time() < deadline:
            time.sleep(0.02)
        assert proc.poll() is None, "the resumed run ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    done = ok()
    assert 3 <= done < PLANNED
    return {"run": run, "home": home, "tmp": tmp, "done": done, "stopped": stopped}


def _ok_rows(run: Path) -> list[str]:
    """Keys whose latest committed row is a reply (not a failure)."""
    latest: dict[str, str] = {}
    for p in live_segments(run / "records"):
        t = pq.read_table(p, columns=["key", "status"]).to_pydict()
        latest.update(zip(t["key"], t["status"]))
    return [k for k, s in latest.items() if s == "ok"]


def test_a_run_stopped_by_an_error_says_so_in_its_summary(killed):
    st = killed["stopped"]
    assert st["manifest"]["status"] == "failed" and st["manifest"]["counts"]["planned"] == PLANNED
    state = st["summary"]["state"]
    assert state["complete"] is False and state["planned"] == PLANNED and state["done"] == 0 and state["failed"] >= 1
    want = f"incomplete: 0 of {PLANNED} cells, {state['failed']} failed (an error stopped the run"
    assert want in st["summary_md"]


def test_the_killed_runs_manifest_and_summary_say_incomplete(killed):
    run = killed["run"]
    man = json.loads((run / "manifest.json").read_text())
    assert man["status"] == "running" and man["counts"]["planned"] == PLANNED
    assert sum(p["cells"] for p in man["planned"]) == PLANNED
    assert {p["scenario"] for p in man["planned"]} == set(SCENARIOS)
    md = (run / "summary.md").read_text()  # the summary from before the resume must not pass for current
    assert "incomplete:" in md and f"of {PLANNED} cells" in md and "predates" in md


def test_report_says_incomplete_and_names_what_is_missing(killed):
    run, out = killed["run"], killed["tmp"] / "report"
    res = _mmrag("report", str(run), "--out", str(out), "--n-boot", "100", home=killed["home"])
    assert res.returncode == 0, res.stderr[-2000:]
    notice = f"incomplete: {killed['done']} of {PLANNED} cells"
    assert notice in " ".join(res.stdout.split())
    md = (out / "report.md").read_text()
    assert notice in md and "was stopped before it finished" in md and f"mmrag run --resume {run}" in md
    head = md.split("## Tables")[0]
    assert "| benchmark | scenario | model | cells done | planned |" in head
    missing = [ln for ln in head.splitlines() if ln.startswith("| demo |")]
    assert missing and sum(int(ln.split("|")[4]) for ln in missing) < sum(int(ln.split("|")[5]) for ln in missing)
    html = (out / "browser.html").read_text()
    assert notice in html  # the browser's header shows the same notice


def test_inspect_logs_of_a_killed_run_are_not_success(killed):
    log_api = pytest.importorskip("inspect_ai.log")
    out = killed["tmp"] / "inspect"
    res = _mmrag("export", str(killed["run"]), "--format", "inspect", "--out", str(out), home=killed["home"])
    assert res.returncode == 0, res.stderr[-2000:]
    assert f"incomplete: {killed['done']} of {PLANNED} cells" in " ".join(res.stdout.split())
    logs = [log_api.read_eval_log(str(p)) for p in sorted(out.glob("*.eval"))]
    assert len(logs) == len(SCENARIOS)  # a scenario with no cell yet still gets its (empty) log
    assert sum(lg.eval.dataset.samples for lg in logs) == PLANNED
    assert sum(lg.results.completed_samples for lg in logs) == killed["done"]
    for lg in logs:
        assert lg.status == "cancelled" and "incomplete:" in lg.error.message
        assert lg.results.total_samples == lg.eval.dataset.samples
    usage = [u for lg in logs for u in lg.stats.model_usage.values()]
    assert sum(u.total_tokens for u in usage) > 0


def test_lmms_eval_results_of_a_killed_run_count_planned_and_done(killed):
    out = killed["tmp"] / "lmms"
    res = _mmrag("export", str(killed["run"]), "--format", "lmms-eval", "--out", str(out), home=killed["home"])
    assert res.returncode == 0, res.stderr[-2000:]
    (path,) = out.glob("*/*_results.json")
    doc = json.loads(path.read_text())
    n = doc["n-samples"]
    assert sum(v["effective"] for v in n.values()) == killed["done"]
    assert all(v["original"] == SAMPLES for v in n.values()) and any(v["effective"] < SAMPLES for v in n.values())
    assert all("incomplete:" in c["metadata"]["mmrag_state"] for c in doc["configs"].values())
