"""The HTML sample browser, checked in a real headless Chromium (Debian's) driven by Playwright.

Chromium is a system package, not a pip one: install it with ``apt-get install -y chromium``
(the CI script does).  Never ``playwright install``: the tests drive /usr/bin/chromium.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
from runfactory import XSS, build_run

from mmrag.reports.browser import browser_html, write_browser
from mmrag.runs.frame import read_records
from mmrag.scenarios.kinds import scenario_label
from mmrag.schema import sha256_file

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


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("browser")
    d = build_run(root, full=False, xss=True)
    return d, read_records(d), write_browser(d)


@pytest.fixture()
def page(browser, run):
    page = browser.new_page()
    page.set_default_timeout(10_000)
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(run[2].as_uri())
    page.wait_for_selector("tr.row")
    page.errors, page.requests = errors, requests  # type: ignore[attr-defined]
    yield page
    page.close()


def visible_keys(page) -> list[str]:
    return page.eval_on_selector_all("tr.row", "rows => rows.map(r => r.dataset.key)")


def test_loads_without_errors_or_network(page, run):
    _, records, path = run
    assert path == path.parent / "browser.html"
    assert len(visible_keys(page)) == len(records)
    assert page.errors == []
    # everything is inside the file: no request other than the page itself (data: URIs are not requests)
    assert [u for u in page.requests if not u.startswith(("file:", "data:"))] == []
    assert f"{len(records)} of {len(records)} shown" in page.inner_text("#tally")


def test_filters_change_the_visible_rows(page, run):
    _, records, _ = run
    by_outcome = Counter(r.verdict.outcome for r in records)
    for outcome, n in by_outcome.items():
        page.select_option("#f-outcome", outcome)
        keys = visible_keys(page)
        assert len(keys) == n
        assert set(page.eval_on_selector_all("tr.row", "rs => rs.map(r => r.dataset.outcome)")) == {outcome}
    page.select_option("#f-outcome", "")
    scen = records[0].scenario_id
    model = records[1].model
    page.select_option("#f-scenario", scen)
    expected = {r.key for r in records if r.scenario_id == scen}
    assert set(visible_keys(page)) == expected
    page.select_option("#f-model", model)
    expected = {r.key for r in records if r.scenario_id == scen and r.model == model}
    assert set(visible_keys(page)) == expected and 0 < len(expected) < len(records)
    # the scenario selector shows readable labels, not hashes
    label = page.eval_on_selector(f"#f-scenario option[value='{scen}']", "o => o.textContent")
    assert label == scenario_label(records[0].scenario) and not re.search(r"-[0-9a-f]{8}$", label)
    page.select_option("#f-scenario", "")
    page.select_option("#f-model", "")
    page.fill("#f-search", "kh-1-negative")
    assert set(visible_keys(page)) == {r.key for r in records if r.sample.id == "kh-1-negative"}
    page.fill("#f-search", "")
    assert len(visible_keys(page)) == len(records)
    assert page.errors == []


def test_clicking_a_row_shows_its_detail_with_rendered_images(page, run):
    _, records, _ = run
    rec = next(
        r for r in records if r.scenario.get("kind") == "realistic" and r.scenario.get("positive_modality") == "image"
    )
    page.click(f"tr.row[data-key='{rec.key}']")
    page.wait_for_selector(f"#detail[data-key='{rec.key}']")
    assert "selected" in page.get_attribute(f"tr.row[data-key='{rec.key}']", "class")
    assert rec.sample.question in page.inner_text("#d-question")
    roles = page.eval_on_selector_all("#d-contexts .ctx", "cs => cs.map(c => c.dataset.role)")
    assert roles == [c.role for c in rec.prompt.contexts] and "gold" in roles
    assert rec.response.text in page.inner_text("#d-response")
    assert rec.verdict.outcome in page.inner_text("#d-verdict")
    # the query image, the gold image context and every image part of the prompt actually decode
    widths = page.eval_on_selector_all(
        "#detail img", "ims => Promise.all(ims.map(i => i.decode().then(() => i.naturalWidth, () => 0)))"
    )
    n_expected = (
        len(rec.sample.images)
        + sum(c.document.image is not None for c in rec.prompt.contexts)
        + len(rec.prompt.images())
    )
    assert len(widths) == n_expected and all(w > 0 for w in widths)
    assert page.eval_on_selector("#d-question img.query-image", "i => i.naturalWidth") == 48
    # the hash of the URL selects the sample on reload (a shareable link to one sample)
    page.reload()
    page.wait_for_selector(f"#detail[data-key='{rec.key}']")
    assert page.errors == []


def test_response_with_script_is_shown_as_text_and_never_runs(page, run):
    _, records, path = run
    rec = next(r for r in records if r.response.text == XSS)
    page.click(f"tr.row[data-key='{rec.key}']")
    assert page.inner_text("#d-response .response-text") == XSS
    assert XSS in page.inner_text("#d-verdict")
    assert page.evaluate("window.__pwned") is None
    assert page.eval_on_selector_all("#detail script, #detail img:not(.thumb)", "n => n.length") == 0
    raw = path.read_text(encoding="utf-8")
    assert "<script>window.__pwned" not in raw and raw.count("</script>") == 2
    assert page.errors == []


def test_images_are_deduplicated_and_the_size_guard_omits_the_rest(run, browser, tmp_path):
    d, records, path = run
    data = json.loads(
        re.search(
            r'<script id="mmrag-data" type="application/json">(.*?)</script>', path.read_text(encoding="utf-8"), re.S
        ).group(1)
    )
    used = {im.path for r in records for im in (*r.sample.images, *r.prompt.images())}
    used |= {c.document.image.path for r in records for c in r.prompt.contexts if c.document.image}
    # de-duplicated by content: identical pixels under two file names are stored once
    assert len(data["images"]) == len({sha256_file(p) for p in used}) < len(used)
    assert len(used) < sum(len(r.prompt.images()) for r in records)
    assert all(u.startswith("data:image/") for u in data["images"].values())
    # a tiny budget: the first images fit, the rest are left out and announced
    small = tmp_path / "small.html"
    small.write_text(browser_html(records, "budget", max_image_bytes=3000), encoding="utf-8")
    page = browser.new_page()
    try:
        page.goto(small.as_uri())
        page.wait_for_selector("tr.row")
        assert "omitted by the size budget" in page.inner_text("#notice")
        page.click("tr.row >> nth=0")
        page.wait_for_selector("#detail h2")
        n_omitted = page.eval_on_selector_all(
            ".noimg", "n => n.filter(x => x.textContent.includes('size budget')).length"
        )
        assert n_omitted + page.eval_on_selector_all("#detail img", "n => n.length") > 0
    finally:
        page.close()
    assert len(small.read_bytes()) < len(path.read_bytes())


def test_missing_image_file_shows_a_placeholder(browser, tmp_path):
    d = build_run(tmp_path, name="gone", full=False)
    for f in (tmp_path / "images").glob("kh_*.png"):
        f.unlink()
    out = write_browser(d, out=tmp_path / "gone.html")
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(out.as_uri())
        page.fill("#f-search", "kh-0-positive")
        page.click("tr.row >> nth=0")
        page.wait_for_selector("#d-question .noimg")
        assert "image missing" in page.inner_text("#d-question")
        assert "missing when the page was written" in page.inner_text("#notice")
    finally:
        page.close()
    assert errors == []


def test_list_shows_responses_scrolls_to_the_selection_and_tables_metadata(page, run):
    _, records, _ = run
    # every row shows its own response (or says it is empty / failed)
    cells = dict(zip(visible_keys(page), page.eval_on_selector_all("tr.row td.resp", "cs => cs.map(c => c.title)")))
    for r in records:
        want = f"(failed: {r.response.error})" if r.response.error else (r.response.text or "(empty)")
        assert cells[r.key] == want
    # selecting the last record (a deep link, or ↓ from the top) brings its row into the list's view
    page.set_viewport_size({"width": 1100, "height": 400})
    last = visible_keys(page)[-1]
    page.goto(page.url.split("#")[0] + "#" + last)
    page.reload()
    page.wait_for_selector(f"#detail[data-key='{last}']")
    inside = page.eval_on_selector(
        f"tr.row[data-key='{last}']",
        "tr => { const l = document.getElementById('list').getBoundingClientRect(), r = tr.getBoundingClientRect();"
        " return r.top >= l.top - 1 && r.bottom <= l.bottom + 1 && document.getElementById('list').scrollTop > 0; }",
    )
    assert inside
    # metadata and verdict details are tables with one row per key, not a JSON line
    rec = next(r for r in records if r.sample.metadata)
    page.click(f"tr.row[data-key='{rec.key}']")
    page.wait_for_selector(f"#detail[data-key='{rec.key}']")
    heads = page.eval_on_selector_all("#d-question table.meta th", "hs => hs.map(h => h.textContent)")
    assert heads == sorted(rec.sample.metadata)
    assert page.errors == []


@pytest.mark.parametrize("width", [1280, 1920])
def test_the_list_pane_shows_every_column_at_common_widths(browser, run, width):
    """No horizontal scrolling in the list: the outcome badge of every row is in view (long ids and
    names wrap, the reply is cut with an ellipsis)."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        page.goto(run[2].as_uri())
        page.wait_for_selector("tr.row")
        box = page.evaluate(
            """() => { const l = document.getElementById('list');
              const rights = [...document.querySelectorAll('tr.row')].map(
                tr => tr.lastElementChild.getBoundingClientRect().right);
              return {right: l.getBoundingClientRect().right, outcome: Math.max(...rights),
                      scroll: l.scrollWidth, client: l.clientWidth}; }"""
        )
        assert box["outcome"] <= box["right"] + 1 and box["scroll"] <= box["client"] + 1, box
    finally:
        page.close()


def test_the_header_counts_in_words(browser, tmp_path):
    recs = [r for r in read_records(build_run(tmp_path, full=False)) if r.model == "good-vlm"]
    from runfactory import write_run

    one = write_browser(write_run(tmp_path / "one", recs))
    page = browser.new_page()
    try:
        page.goto(one.as_uri())
        page.wait_for_selector("tr.row")
        stats = page.inner_text("#stats")
        assert "1 model ·" in stats and "1 models" not in stats and f"{len(recs)} records" in stats
    finally:
        page.close()
