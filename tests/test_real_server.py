"""`mmrag run` against a real llama.cpp server (Gemma 3 270M, tests/real_server.py): records and
token usage as the server reports them, the response cache, replies cut at the token limit, the
request window, a server killed mid-run and the resume, and the Inspect export of such a run.

The model is a small base model: its answers are poor and nobody here wrote them.  What is tested
is the protocol, never the quality.  Few cells and small token limits keep this module fast (the
server generates about 13 tokens/s on two cores).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from real_server import ALIAS, LlamaServer, RecordingProxy, llm_venv

from mmrag.cli import main
from mmrag.runs.frame import read_records

pytestmark = pytest.mark.real_server
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def proxy(llama_server):
    with RecordingProxy(llama_server.port) as p:
        yield p


def run_cli(args: list[str], capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(args)
    out = capsys.readouterr()
    return rc, out.out, out.err


def gemma_run(url: str, out: Path, cache: Path, *extra: str, limit: int = 2) -> list[str]:
    """`mmrag run` of the model on the demo's first samples, parametric and oracle with text gold
    (the model reads no images; llama.cpp's gemma template drops a turn that holds one)."""
    return [
        "run",
        "-b",
        "demo",
        "-m",
        f"openai:{ALIAS}",
        "--base-url",
        url,
        "--limit",
        str(limit),
        "--scenarios",
        "parametric,oracle",
        "--positive-modality",
        "text",
        "--cache-path",
        str(cache),
        *extra,
        "--out",
        str(out),
    ]


@pytest.fixture(scope="module")
def first_run(proxy, tmp_path_factory):
    """A few cells through the proxy.  The stop string ends the replies that echo the question
    (``finish_reason: stop``, cacheable); the others run to the token limit (``length``)."""
    root = tmp_path_factory.mktemp("gemma_run")
    proxy.reset()
    args = gemma_run(proxy.url, root / "run", root / "cache.sqlite", "--max-new-tokens", "24", "--gen-kwargs", "stop=?")
    assert main(args) == 0
    return root, args, [(ex.body, ex.reply) for ex in proxy.chat()]


def test_run_records_are_complete_with_the_servers_usage(first_run):
    root, _, exchanges = first_run
    records = read_records(root / "run")
    assert len(records) == len(exchanges) >= 3 and len({r.key for r in records}) == len(records)
    by_text = {}
    for body, reply in exchanges:
        assert body["model"] == ALIAS and body["max_tokens"] == 24 and body["temperature"] == 0.0
        assert body["stop"] == ["?"]
        by_text[reply["choices"][0]["message"]["content"]] = reply
    for r in records:
        assert r.response.error is None and r.response.model.startswith(f"openai:{ALIAS}@127.0.0.1:")
        reply = by_text[r.response.text]
        assert r.response.finish_reason == reply["choices"][0]["finish_reason"]
        assert r.response.usage.prompt_tokens == reply["usage"]["prompt_tokens"] > 0
        assert r.response.usage.completion_tokens == reply["usage"]["completion_tokens"] > 0
        assert r.verdict.outcome in ("correct", "deflection", "hallucination", "unparseable")
    finishes = {r.response.finish_reason for r in records}
    assert finishes == {"stop", "length"}  # both kinds of ending came back from the server
    summary = json.loads((root / "run" / "summary.json").read_text())
    assert summary["incomplete_replies"] == sum(r.response.incomplete for r in records)


def test_rerun_is_served_from_the_response_cache(first_run, proxy, capsys):
    root, args, _ = first_run
    complete = [r for r in read_records(root / "run") if not r.response.incomplete]
    proxy.reset()
    rerun = args[:-1] + [str(root / "rerun")]
    rc, out, _ = run_cli(rerun, capsys)
    assert rc == 0
    sent = len(proxy.chat())
    assert complete and sent == len(read_records(root / "run")) - len(complete)  # cut-off replies are never cached
    assert f"model calls: {sent}" in out
    again = {r.key: r for r in read_records(root / "rerun")}
    for r in complete:
        assert again[r.key].response.cached and again[r.key].response.text == r.response.text


def test_replies_cut_at_the_token_limit_are_kept_and_not_scored(proxy, tmp_path, capsys):
    proxy.reset()
    args = gemma_run(proxy.url, tmp_path / "run", tmp_path / "c.sqlite", "--max-new-tokens", "4")
    rc, _, err = run_cli(args, capsys)
    assert rc == 0 and "Traceback" not in err
    sent = proxy.chat()
    records = read_records(tmp_path / "run")
    assert len(sent) == len(records) >= 3 and all(ex.body["max_tokens"] == 4 for ex in sent)
    assert all(ex.reply["choices"][0]["finish_reason"] == "length" for ex in sent)
    for r in records:
        assert r.response.finish_reason == "length" and r.response.usage.completion_tokens == 4
        assert r.response.text  # kept, not dropped
        assert r.verdict.outcome == "unparseable" and r.verdict.judge_id == "engine"
        assert r.verdict.reason == "reply incomplete (finish_reason=length); not scored"
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["incomplete_replies"] == len(records)
    proxy.reset()  # never cached: the same run again asks the server again
    assert main(args[:-1] + [str(tmp_path / "again")]) == 0
    assert len(proxy.chat()) == len(records)


def test_a_window_of_four_is_kept_and_every_request_answered(proxy, tmp_path, capsys):
    proxy.reset()
    args = gemma_run(
        proxy.url, tmp_path / "run", tmp_path / "c.sqlite", "--max-new-tokens", "6", "--max-concurrency", "4", limit=4
    )
    t0 = time.monotonic()
    rc, _, _ = run_cli(args, capsys)
    wall = time.monotonic() - t0
    assert rc == 0
    sent = proxy.chat()
    records = read_records(tmp_path / "run")
    assert len(sent) == len(records) >= 6
    assert all(ex.status == 200 for ex in sent) and all(r.response.error is None for r in records)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert list(summary["windows"].values()) == [4]
    with capsys.disabled():
        print(f"\nreal_server window: {proxy.max_open} requests open at once (cap 4), {len(sent)} cells in {wall:.1f}s")
    assert proxy.max_open == 4  # measured at the wire: the window was full, never over


def test_inspect_export_of_a_real_server_run_opens(first_run, tmp_path):
    log_api = pytest.importorskip("inspect_ai.log")
    root, _, _ = first_run
    assert main(["export", str(root / "run"), "--format", "inspect", "--out", str(tmp_path / "inspect")]) == 0
    [path] = sorted((tmp_path / "inspect").glob("*.eval"))
    log = log_api.read_eval_log(str(path))
    records = {r.key: r for r in read_records(root / "run")}
    assert log.status == "success" and log.eval.model.startswith(f"openai:{ALIAS}")
    assert sorted(s.id for s in log.samples) == sorted(records)
    for s in log.samples:
        r = records[s.id]
        assert s.output.completion == r.response.text
        assert s.output.usage.input_tokens == r.response.usage.prompt_tokens
        assert s.output.choices[0].stop_reason == ("max_tokens" if r.response.finish_reason == "length" else "stop")


def _completed(log: Path) -> int:
    """Chat requests the server has answered, from its access log."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return 0
    return text.count('"POST /v1/chat/completions HTTP/1.1" 200')


def test_server_killed_mid_run_fails_in_one_line_then_resume_completes(tmp_path, capsys):
    server = LlamaServer(llm_venv(), tmp_path).start()
    try:
        run_dir = tmp_path / "run"
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        args = gemma_run(
            server.url, run_dir, tmp_path / "c.sqlite", "--max-new-tokens", "16", "--max-concurrency", "1", limit=3
        )  # 6 cells, one at a time
        proc = subprocess.Popen(
            [sys.executable, "-m", "mmrag", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 120
        while _completed(server.log) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        answered_before = _completed(server.log)
        assert proc.poll() is None and answered_before >= 2, "the run ended before the server could be killed"
        server.kill()
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 1
        lines = [ln for ln in err.splitlines() if ln.startswith("mmrag:")]
        assert len(lines) == 1 and "Traceback" not in err
        assert f"127.0.0.1:{server.port}" in lines[0] and "connection" in lines[0]
        partial = read_records(run_dir)
        done = {r.key for r in partial if r.response.error is None}
        assert len(done) >= 2

        server.start()  # same port: same base URL, same model fingerprint
        log_mark = _completed(server.log)
        resumed = subprocess.run(
            [sys.executable, "-m", "mmrag", "run", "--resume", str(run_dir)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert resumed.returncode == 0, resumed.stderr[-800:]
        records = read_records(run_dir)
        manifest = json.loads((run_dir / "manifest.json").read_text())
        planned = 3 * 2 - manifest["counts"]["not_applicable"]  # 3 samples x 2 scenarios, less n/a cells
        assert manifest["status"] == "complete"
        assert len(records) == planned and len({r.key for r in records}) == planned  # nothing lost, nothing twice
        assert all(r.response.error is None for r in records)
        assert done <= {r.key for r in records}
        # answered cells were not sent again: only the ones missing went to the restarted server
        assert _completed(server.log) - log_mark == planned - len(done)
        with capsys.disabled():
            print(f"\nreal_server kill: {lines[0]}")
    finally:
        server.stop()
