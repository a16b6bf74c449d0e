"""``inspect view`` shows an exported run as one of its own: Inspect's viewer, served on loopback,
driven in a real headless Chromium (Debian's, as tests/test_browser.py), lists the sample by its
question and shows the model's reply as the assistant turn on the sample page."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from mmrag.cli import main
from mmrag.runs import load

CHROMIUM = os.environ.get("MMRAG_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def logs(tmp_path_factory, module_home) -> tuple[Path, Path]:
    pytest.importorskip("inspect_ai.log")
    root = tmp_path_factory.mktemp("inspect_view")
    run = root / "run"
    argv = ["run", "-b", "demo", "-m", "context-reader", "--scenarios", "oracle", "--limit", "3", "--no-cache"]
    assert main([*argv, "--out", str(run)]) == 0
    assert main(["export", str(run), "--format", "inspect", "--out", str(root / "logs")]) == 0
    return run, root / "logs"


@pytest.fixture(scope="module")
def viewer(logs):
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "inspect_ai",
            "view",
            "--log-dir",
            str(logs[1]),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.time() + 60
        while True:
            try:
                with urllib.request.urlopen(url, timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert proc.poll() is None and time.time() < deadline, "inspect view did not start"
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def page(viewer, tmp_path_factory):
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        pytest.fail(f"Chromium not found at {CHROMIUM}: `apt-get install -y chromium`, or set MMRAG_CHROMIUM")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=CHROMIUM,
            args=ARGS,
            headless=True,
            viewport={"width": 1400, "height": 900},
        )
        p = ctx.new_page()
        p.set_default_timeout(30_000)
        p.goto(viewer)
        yield p
        ctx.close()


def test_the_list_shows_each_question_and_the_sample_page_the_reply(page, logs, tmp_path):
    df = load(logs[0])
    row = df[df["outcome"] == "correct"].iloc[0] if (df["outcome"] == "correct").any() else df.iloc[0]
    question, reply = row["question"], row["response"]
    for q in df["question"]:  # the list previews the question (the system prompt is not the input)
        page.get_by_text(q, exact=True).first.wait_for()
    page.screenshot(path=str(tmp_path / "list.png"))
    page.get_by_text(question, exact=True).first.click()
    page.wait_for_url("**/samples/sample/**")
    body = page.locator("body")
    body.get_by_text("ASSISTANT", exact=False).first.wait_for()
    page.screenshot(path=str(tmp_path / "sample.png"), full_page=True)
    text = body.inner_text()
    assert reply in text.split("ASSISTANT", 1)[1]  # the reply is the assistant turn of the transcript
    assert row["sample_id"] in page.url  # a readable sample id, not a hash
