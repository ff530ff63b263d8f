"""The viewer in a real headless Chromium (Debian's package, driven by Playwright): load runs, filter, open an
episode, compare two runs, check that hostile strings stay inert, and work through a 10,000-episode run
(its timing is bench/viewer.py's)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentgym.viewer.page import static_report
from agentgym.viewer.runs import load_runs
from agentgym.viewer.server import ViewerServer

CHROMIUM = "/usr/bin/chromium"
if shutil.which(CHROMIUM) is None:
    pytest.skip("needs Chromium: apt-get install -y chromium", allow_module_level=True)
playwright_sync = pytest.importorskip("playwright.sync_api",
                                      reason="needs Playwright: .venv/bin/python -m pip install playwright")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_sync.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


def _serve(paths: list[Path]) -> ViewerServer:
    server = ViewerServer(load_runs(paths), 0)
    server.start_in_thread()
    return server


def _open(browser: Any, url: str) -> tuple[Any, list[str]]:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    problems: list[str] = []
    page.on("dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on("request", lambda request: None if request.url.startswith(("http://127.0.0.1", "file:", "data:"))
            else problems.append(f"network: {request.url}"))
    page.goto(url)
    page.wait_for_selector("body[data-ready=true]", timeout=10_000)
    return page, problems


def test_filter_open_and_compare(browser: Any, oracle_run: Path, random_run: Path, tmp_path: Path) -> None:
    server = _serve([oracle_run, random_run])
    try:
        page, problems = _open(browser, server.url)
        assert page.locator("#count").inner_text() == "16 of 16 episodes"
        page.select_option("#filter-run", label="oracle")
        page.select_option("#filter-success", "true")
        assert page.locator("#count").inner_text() == "8 of 16 episodes"
        families = page.locator("#filter-family option").all_inner_texts()
        family = families[1]
        page.select_option("#filter-family", label=family)
        rows = page.locator("#episodes tbody tr")
        assert rows.count() >= 1 and family in rows.first.inner_text()
        rows.first.click()
        view = page.locator(".episode-view").first
        view.wait_for()
        text = view.inner_text()
        assert "success" in text and "→ submit" in text  # the tool call with its name
        assert "the verifier's score" in text  # the breakdown term explained
        # the gold, looked up in SQL-v0's task set (the record holds none), beside the agent's submission
        side = view.locator(".side").inner_text().lower()  # the role labels are shown upper-case
        assert "gold answer" in side and "gold solution" in side and "from sql-v0's task set" in side
        assert side.index("agent's submission") < side.index("gold solution")
        submitted = view.locator(".side pre.json").first.inner_text()  # the oracle submits the gold solution
        assert submitted.split(" ", 1)[0] in view.locator(".gold").inner_text()
        page.screenshot(path=str(tmp_path / "episode.png"), full_page=True)
        # the same task in the other run, side by side
        page.locator(".compare-button").first.click()
        page.locator(".pair .episode-view").nth(1).wait_for()
        pair = page.locator(".pair").inner_text()
        assert "oracle:" in pair and "random:" in pair
        page.screenshot(path=str(tmp_path / "compare.png"), full_page=True)
        page.click("nav button[data-view=plots]")
        plots = page.frame_locator("section.plots:not([hidden]) iframe")
        plots.locator("svg.chart").first.wait_for()
        assert plots.locator("svg.chart").count() >= 6
        assert "Success per family" in plots.locator("body").inner_text()
        assert "8 tasks" in plots.locator("body").inner_text()
        page.screenshot(path=str(tmp_path / "plots.png"), full_page=True)
        assert (tmp_path / "episode.png").stat().st_size > 10_000
        assert problems == []
    finally:
        server.shutdown()
        server.server_close()


def test_sql_results_render_as_tables(browser: Any, explored_run: Path) -> None:
    server = _serve([explored_run])
    try:
        page, problems = _open(browser, server.url)
        page.locator("#episodes tbody tr").first.click()
        table = page.locator(".msg.tool table.result").first
        table.wait_for()
        assert table.locator("th").all_inner_texts() == ["a", "b"]
        assert table.locator("tbody tr").nth(1).locator("td").all_inner_texts() == ["2", "NULL"]
        assert "(2 rows)" in page.locator(".msg.tool").first.inner_text()
        assert '"sql": "SELECT 1 AS a' in page.locator(".call pre").first.inner_text()  # arguments pretty-printed
        assert problems == []
    finally:
        server.shutdown()
        server.server_close()


def _visit_every_episode(page: Any) -> None:
    rows = page.locator("#episodes tbody tr")
    for number in range(rows.count()):
        rows.nth(number).click()
        page.locator(".episode-view").first.wait_for()


def test_hostile_strings_stay_inert(browser: Any, hostile_run: Path, oracle_run: Path, tmp_path: Path) -> None:
    server = _serve([hostile_run, oracle_run])
    report = tmp_path / "report.html"
    report.write_text(static_report(load_runs([hostile_run, oracle_run])), encoding="utf-8")
    try:
        for url in (server.url, report.as_uri()):
            page, problems = _open(browser, url)
            page.select_option("#filter-run", "0")  # the hostile run
            _visit_every_episode(page)
            text = page.locator(".episode-view").first.inner_text()
            assert "window.__pwned" in text  # the payload is shown, as text
            page.click("nav button[data-view=compare]")
            page.click("#compare-go")
            page.click("nav button[data-view=plots]")
            assert page.evaluate("window.__pwned") is None
            assert page.locator("a[href^='javascript']").count() == 0
            assert page.locator("img, iframe:not(.plots-frame), object, embed, script:not([nonce]):not([type])").count() == 0
            if url == server.url:  # the plots (family names are payloads) in their script-less frame
                plots = page.frame_locator("section.plots:not([hidden]) iframe")
                plots.locator("svg.chart").first.wait_for()
                assert "window.__pwned" in plots.locator("body").inner_text()
                assert plots.locator("img, script, [onerror], [onload]").count() == 0
            assert [problem for problem in problems if "pwned" in problem or "dialog" in problem] == []
            page.screenshot(path=str(tmp_path / "hostile.png"), full_page=True)
    finally:
        server.shutdown()
        server.server_close()


def test_ten_thousand_episodes_list_paginate_filter_and_open(browser: Any, big_run: Path, tmp_path: Path) -> None:
    """What a reader does with a big run; how long it takes is measured by bench/viewer.py, not asserted here."""
    server = _serve([big_run])
    try:
        page, problems = _open(browser, server.url)
        assert page.locator("#count").inner_text() == "10000 of 10000 episodes"
        assert page.locator("#episodes tbody tr").count() == 100  # paginated
        page.fill("#filter-text", "sql-big-00042")
        assert page.locator("#count").inner_text() == "4 of 10000 episodes"
        page.locator("#episodes tbody tr").first.click()
        page.locator(".episode-view").wait_for()
        page.screenshot(path=str(tmp_path / "big.png"))
        assert problems == []
    finally:
        server.shutdown()
        server.server_close()


def test_diagnosis_labels_and_missing_gold(browser: Any, diagnosed_run: Path, tmp_path: Path) -> None:
    import json

    from agentgym.viewer.runs import diagnosis_label

    records = [json.loads(line) for line in
               (diagnosed_run / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()]
    record, label = records[0], diagnosis_label(records[0]["diagnosis"])
    server = _serve([diagnosed_run])
    try:
        page, problems = _open(browser, server.url)
        first = page.locator("#episodes tbody tr").first
        assert record["diagnosis"]["episode"] in first.inner_text()  # the episode label in the table
        page.select_option("#filter-diagnosis", label=label)
        same = sum(diagnosis_label(other.get("diagnosis")) == label for other in records)
        assert page.locator("#count").inner_text() == f"{same} of 2 episodes"
        first.click()
        page.locator(".episode-view").wait_for()
        labels = page.locator(".msg.assistant .turn-label").all_inner_texts()
        assert labels == [f"turn {number}: {label}" for number, label in
                          enumerate(record["diagnosis"]["turns"], start=1)]
        page.screenshot(path=str(tmp_path / "diagnosed.png"), full_page=True)
        page.select_option("#filter-diagnosis", "")
        page.locator("#episodes tbody tr").nth(1).click()
        page.locator(".gold-missing").wait_for()
        assert "gold not available: Nowhere-v0 is not installed here" in page.locator(".gold").inner_text()
        assert problems == []
    finally:
        server.shutdown()
        server.server_close()
