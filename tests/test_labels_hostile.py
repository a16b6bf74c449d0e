"""Hostile input to the labelling side: a request body nested too deeply or holding a key twice
(HTTP 400, nothing written), an imported label line with a time that is not a time (refused with
file, line and field), and a second ``mmrag label`` for a labeller whose page is open (refused
while the first runs; free again once it is killed with SIGKILL)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import httpx
import pytest
from runfactory import build_run

import mmrag.labels as L
from mmrag.cli import main
from mmrag.labels.server import LabelServer
from mmrag.runs import load


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return build_run(tmp_path_factory.mktemp("hostile_labels"), full=False)


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "error" in ln]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_a_deep_or_duplicate_key_body_is_a_400_and_writes_nothing(small):
    session = L.open_session(small, "deep", n=6)
    key = session.sample.keys[0]
    json_h = {"Content-Type": "application/json"}
    with LabelServer(session) as srv, httpx.Client() as c:
        deep = '{"key": ' + "[" * 200_000 + "]" * 200_000 + ', "label": "correct"}'
        r = c.post(srv.url + "api/label", content=deep, headers=json_h)
        assert r.status_code == 400 and "nested too deeply" in r.json()["error"]
        twice = '{"key": ' + json.dumps(key) + ', "label": "correct", "label": "hallucination"}'
        r = c.post(srv.url + "api/label", content=twice, headers=json_h)
        assert r.status_code == 400 and "duplicate key 'label'" in r.json()["error"]
        for bad in ("[1, 2]", "not json", '{"key": NaN, "label": "correct"}', '"\\ud800"'):
            assert c.post(srv.url + "api/label", content=bad, headers=json_h).status_code == 400, bad
        assert c.post(srv.url + "api/label", json={"key": key, "label": "correct"}).status_code == 200
    assert L.load(small)[["key", "label"]].values.tolist() == [[key, "correct"]]  # only the good one


def test_import_refuses_a_time_that_is_not_a_time_naming_file_line_and_field(small, tmp_path, capsys):
    keys = L.ensure_sample(small, load(small), n=6).keys
    good = {"key": keys[0], "label": "correct", "labeller": "importer", "at": "2026-01-31T12:00:00Z"}
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "key": keys[1], "at": "not-a-date"}) + "\n")
    assert main(["label", str(small), "--import", str(path)]) != 0
    line = _one_error_line(capsys)
    assert "labels.jsonl:2" in line and "'at'" in line and "not-a-date" in line
    assert not (small / "labels" / "importer.jsonl").exists()  # nothing half-imported
    for at in (12, "2026-13-01", ""):
        path.write_text(json.dumps({**good, "at": at}) + "\n")
        assert main(["label", str(small), "--import", str(path)]) != 0
        assert "labels.jsonl:1" in _one_error_line(capsys)
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "key": keys[1], "at": "2026-01-31"}) + "\n")
    assert main(["label", str(small), "--import", str(path)]) == 0, capsys.readouterr().err


def _start_label_process(run_dir, labeller: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "400"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mmrag", "label", str(run_dir), "--labeller", labeller, "--n", "6"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 60
    seen = []
    while time.monotonic() < deadline:
        ln = proc.stdout.readline()
        seen.append(ln)
        if "open" in ln and "http://127.0.0.1" in ln:
            return proc
        if not ln and proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError("the labelling page did not start:\n" + "".join(seen))


def test_a_second_label_page_for_one_labeller_is_refused_until_the_first_ends(tmp_path, capsys):
    run = build_run(tmp_path, full=False)
    first = _start_label_process(run, "ann")
    try:
        second = subprocess.run(  # a process of its own, bounded: without the lock it would serve forever
            [sys.executable, "-m", "mmrag", "label", str(run), "--labeller", "ann", "--n", "6"],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "COLUMNS": "400"},
        )
        lines = [ln for ln in second.stderr.splitlines() if "error" in ln]
        assert second.returncode != 0 and len(lines) == 1, second.stderr
        assert "'ann'" in lines[0] and "already labelling" in lines[0] and f"pid {first.pid}" in lines[0]
        sample = L.read_sample(run)
        imp = tmp_path / "imp.jsonl"
        imp.write_text(json.dumps({"key": sample.keys[0], "label": "correct", "labeller": "ann"}) + "\n")
        assert main(["label", str(run), "--import", str(imp)]) != 0  # not beside the open page either
        assert "already labelling" in _one_error_line(capsys)
        with LabelServer(L.open_session(run, "bob")):  # another labeller is free to label
            pass
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    with LabelServer(L.open_session(run, "ann")) as srv:  # the kernel dropped the lock with the process
        assert httpx.get(srv.url + "api/state").json()["labeller"] == "ann"
    with LabelServer(L.open_session(run, "ann")):  # and stop() released it again
        pass
