"""The labelling page in a real headless Chromium (Debian's, driven by Playwright, as the sample
browser's tests do) against the real Starlette/uvicorn server on loopback: label with the keyboard,
undo, reload and continue, find every label on disk; data shown as text; the verdict hidden.

``MMRAG_LABEL_TIMING=1`` also prints how long the page takes to label 50 items when keys are
pressed as fast as it answers (no human thinking), the figure docs/labelling.md quotes.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from runfactory import XSS, build_run

import mmrag.labels as L
from mmrag.labels.server import LabelServer

CHROMIUM = os.environ.get("MMRAG_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SEQUENCE = "cdhcdhcchd"  # ten labels


@pytest.fixture(scope="module")
def browser():
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        pytest.fail(
            f"Chromium not found at {CHROMIUM}: install Debian's package with "
            "`apt-get update && apt-get install -y chromium` (do not run `playwright install`), "
            "or point MMRAG_CHROMIUM at a Chromium binary"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


def open_page(browser, url):
    page = browser.new_page()
    page.set_default_timeout(10_000)
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(url)
    page.wait_for_selector("body[data-ready='1'] #item[data-index]")
    page.errors, page.requests = errors, requests  # type: ignore[attr-defined]
    return page


def labelled(page) -> int:
    return int(page.get_attribute("body", "data-labelled") or 0)


def press_and_wait(page, key: str, want_labelled: int) -> None:
    page.keyboard.press(key)
    page.wait_for_function(f"() => document.body.dataset.labelled === '{want_labelled}'")


def test_label_ten_with_the_keyboard_reload_and_continue(browser, tmp_path):
    d = build_run(tmp_path, full=False, xss=True)
    session = L.open_session(d, "ann", n=40, seed=2)
    keys = session.sample.keys
    with LabelServer(session) as srv:
        page = open_page(browser, srv.url)
        assert page.get_attribute("#item", "data-key") == keys[0]
        assert "0 / 40 labelled" in page.inner_text("#progress")
        assert page.is_hidden("#judge") and page.is_hidden("#contexts")
        given: dict[str, str] = {}
        for n, k in enumerate(SEQUENCE[:6], start=1):
            given[page.get_attribute("#item", "data-key")] = {"c": "correct", "d": "deflection", "h": "hallucination"}[
                k
            ]
            press_and_wait(page, k, n)
        # skip one, undo the skip and the last label, then label on
        skipped = page.get_attribute("#item", "data-key")
        page.keyboard.press("s")
        page.wait_for_function(f"() => document.getElementById('item').dataset.key !== '{skipped}'")
        page.keyboard.press("u")  # retracts the skip
        page.wait_for_function(f"() => document.getElementById('item').dataset.key === '{skipped}'")
        page.keyboard.press("u")  # retracts the sixth label
        page.wait_for_function("() => document.body.dataset.labelled === '5'")
        back = page.get_attribute("#item", "data-key")
        assert back == keys[5] and page.inner_text("#current-label") == "—"
        given.pop(back)
        for n, k in enumerate(SEQUENCE[5:], start=6):
            given[page.get_attribute("#item", "data-key")] = {"c": "correct", "d": "deflection", "h": "hallucination"}[
                k
            ]
            press_and_wait(page, k, n)
        assert "10 / 40 labelled" in page.inner_text("#progress") and "per label" in page.inner_text("#timing")
        # ← shows the previous item and its label
        page.keyboard.press("ArrowLeft")
        page.wait_for_function(f"() => document.getElementById('item').dataset.key === '{keys[9]}'")
        assert page.inner_text("#current-label") == given[keys[9]]
        page.reload()
        page.wait_for_selector("body[data-ready='1'] #item[data-index]")
        # continues at the first item without a label
        assert page.get_attribute("#item", "data-key") == keys[10]
        assert "10 / 40 labelled" in page.inner_text("#progress")
        press_and_wait(page, "h", 11)
        given[keys[10]] = "hallucination"
        assert page.errors == []
        assert {u.split("/")[2] for u in page.requests} == {f"127.0.0.1:{srv.port}"}
        page.close()
    lines = [json.loads(x) for x in (d / "labels" / "ann.jsonl").read_text().splitlines()]
    assert all(set(x) == {"key", "label", "labeller", "at"} for x in lines)
    got = L.load(d)
    assert dict(zip(got["key"], got["label"])) == given and set(got["labeller"]) == {"ann"}


def test_reply_with_markup_is_text_and_show_judge_shows_the_verdict(browser, tmp_path):
    d = build_run(tmp_path, full=False, xss=True)
    session = L.open_session(d, "bob", n=500, show_judge=True)
    xss_key = next(k for k, r in session.records.items() if r.response.text == XSS)
    with LabelServer(session) as srv:
        page = open_page(browser, srv.url)
        for _ in range(len(session.sample.keys)):
            if page.get_attribute("#item", "data-key") == xss_key:
                break
            before = page.get_attribute("#item", "data-key")
            page.keyboard.press("ArrowRight")
            page.wait_for_function(f"() => document.getElementById('item').dataset.key !== '{before}'")
        assert page.inner_text("#reply") == XSS
        assert page.evaluate("window.__pwned") is None
        assert page.eval_on_selector_all("main script, main img:not(.q):not(.c)", "n => n.length") == 0
        assert page.is_visible("#judge") and session.records[xss_key].verdict.outcome in page.inner_text("#judge")
        page.keyboard.press("t")
        assert page.is_visible("#contexts")
        roles = page.eval_on_selector_all("#contexts .ctx", "cs => cs.map(c => c.dataset.role)")
        assert roles == [c.role for c in session.records[xss_key].prompt.contexts]
        widths = page.eval_on_selector_all(
            "main img", "ims => Promise.all(ims.map(i => i.decode().then(() => i.naturalWidth, () => 0)))"
        )
        assert widths and all(w > 0 for w in widths)
        assert page.errors == []
        page.close()


@pytest.mark.skipif(not os.environ.get("MMRAG_LABEL_TIMING"), reason="timing run: set MMRAG_LABEL_TIMING=1")
def test_time_to_label_50(browser, tmp_path):
    run = (
        Path(os.environ.get("MMRAG_LABEL_RUN", ""))
        if os.environ.get("MMRAG_LABEL_RUN")
        else build_run(tmp_path, full=True)
    )
    if os.environ.get("MMRAG_LABEL_RUN"):
        shutil.copytree(run, tmp_path / "run")
        run = tmp_path / "run"
    session = L.open_session(run, "timer", n=60)
    with LabelServer(session) as srv:
        page = open_page(browser, srv.url)
        t0 = time.perf_counter()
        for n in range(1, 51):
            press_and_wait(page, "cdh"[n % 3], n)
        spent = time.perf_counter() - t0
        page.close()
    print(
        f"LABEL_TIMING 50 items in {spent:.2f} s ({1000 * spent / 50:.0f} ms per item, keys pressed as fast as "
        f"the page answers; each press = POST + fsync + next item fetched and drawn)"
    )
    assert len(L.load(run)) == 50


def goto(page, key: str, n: int) -> None:
    """Move right through the page's items until ``key`` is shown."""
    for _ in range(n):
        if page.get_attribute("#item", "data-key") == key:
            return
        before = page.get_attribute("#item", "data-key")
        page.keyboard.press("ArrowRight")
        page.wait_for_function(f"() => document.getElementById('item').dataset.key !== '{before}'")
    assert page.get_attribute("#item", "data-key") == key


def test_show_judge_shows_the_evidence_with_its_span_highlighted(browser, tmp_path):
    import httpx
    from labelrun import settled_run

    d = settled_run(tmp_path)
    session = L.open_session(d, "eve", n=500, show_judge=True)
    keys = session.keys
    at = next(i for i, k in enumerate(keys) if session.records[k].verdict.evidence is not None)
    plain = next(i for i, k in enumerate(keys) if i > at and session.records[k].verdict.evidence is None)
    key, ev = keys[at], session.records[keys[at]].verdict.evidence
    with LabelServer(session) as srv:
        page = open_page(browser, srv.url)
        goto(page, key, len(keys))
        assert page.inner_text("#reply") == session.records[key].response.text  # the whole reply, as text
        assert page.eval_on_selector_all("#reply mark.evidence", "ms => ms.map(m => m.textContent)") == [ev.span]
        shown = page.inner_text("#judge-evidence")
        assert ev.step in shown and f"reference: {ev.reference}" in shown and ev.rule in shown
        goto(page, keys[plain], len(keys))  # an item without evidence: no mark, no evidence box
        assert page.eval_on_selector_all("#reply mark", "ms => ms.length") == 0
        assert not page.is_visible("#judge-evidence") and page.is_visible("#judge")
        assert page.errors == []
        page.close()
    blind = L.open_session(d, "eve", n=500)  # without --show-judge the page gets no verdict, no evidence
    with LabelServer(blind) as srv:
        item = httpx.get(srv.url + f"api/item/{blind.keys.index(key)}").json()
        assert "judge" not in item and "reference_match" not in json.dumps(item)
