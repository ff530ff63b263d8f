"""Viewer benchmark: how long `agentgym view` takes to open a 10,000-episode run.

    python bench/viewer.py [--episodes 10000]

A real SQL-v0 oracle eval (8 episodes) is the template; the run is those records repeated with varied tasks,
families and outcomes, as a 2,500-task x 4-sample eval would write them. Figures, all in one run:
- `index_s`: `load_runs` (what the server does before it answers), against `raw_read_s`, reading the same file and
  parsing every line with `json.loads`, the least any viewer must do (`index_ratio`).
- `page_ready_s`: from starting the server to the page's table being ready in headless Chromium (Debian's
  package, driven by Playwright), target 2 s as the viewer issue asks; `episode_open_s`: until one episode,
  found through the filter, is shown. Skipped with a reason where Chromium or Playwright is missing.
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agentgym.evaluate import evaluate
from agentgym.viewer.runs import load_runs
from agentgym.viewer.server import ViewerServer

CHROMIUM = "/usr/bin/chromium"
TARGET_PAGE_S = 2.0
FAMILIES = ("select", "join", "group_having", "windows", "nested", "nulls")


def make_run(root: Path, episodes: int) -> Path:
    """A run of `episodes` records shaped like a real oracle eval's (see the module docstring)."""
    template_run = root / "template"
    evaluate(["SQL-v0"], "oracle", template_run, n=8, progress=False, plots=False, bootstrap=50)
    templates = [json.loads(line) for line in (template_run / "trajectories.jsonl").read_text().splitlines()]
    out = root / "big"
    out.mkdir()
    shutil.copy(template_run / "run.json", out / "run.json")
    rng = random.Random(0)
    tasks = max(1, episodes // 4)
    with (out / "trajectories.jsonl").open("w", encoding="utf-8") as handle:
        for number in range(episodes):
            template = templates[number % len(templates)]
            solved = rng.random() < 0.6
            task = number % tasks
            record = {**template, "task_id": f"sql-big-{task:05d}", "family": FAMILIES[task % len(FAMILIES)],
                      "sample": number // tasks, "success": solved,
                      "reward": 1.0 if solved else rng.random() * 0.3}
            handle.write(json.dumps(record) + "\n")
    return out


def time_index(run: Path, repeats: int = 5) -> dict[str, float]:
    raw, indexed = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        with (run / "trajectories.jsonl").open(encoding="utf-8") as handle:
            rows = [json.loads(line) for line in handle]
        raw.append(time.perf_counter() - started)
        started = time.perf_counter()
        [loaded] = load_runs([run])
        indexed.append(time.perf_counter() - started)
        assert len(loaded.rows) == len(rows)
    raw_s, index_s = statistics.median(raw), statistics.median(indexed)
    return {"raw_read_s": round(raw_s, 3), "index_s": round(index_s, 3), "index_ratio": round(index_s / raw_s, 2)}


def time_page(run: Path, episodes: int) -> dict[str, Any]:
    if shutil.which(CHROMIUM) is None:
        return {"page": "skipped: needs Chromium (apt-get install -y chromium)"}
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return {"page": "skipped: needs Playwright (pip install playwright)"}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            started = time.perf_counter()
            server = ViewerServer(load_runs([run]), 0)
            server.start_in_thread()
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(server.url)
                page.wait_for_selector("body[data-ready=true]", timeout=60_000)
                ready = time.perf_counter() - started
                shown = page.locator("#count").inner_text()
                page.fill("#filter-text", "sql-big-00042")
                page.locator("#episodes tbody tr").first.click()
                page.locator(".episode-view").wait_for()
                opened = time.perf_counter() - started
            finally:
                server.shutdown()
                server.server_close()
        finally:
            browser.close()
    return {"page_ready_s": round(ready, 3), "page_target_s": TARGET_PAGE_S, "page_ok": ready <= TARGET_PAGE_S,
            "episode_open_s": round(opened, 3), "count_shown": shown,
            "all_listed": shown == f"{episodes} of {episodes} episodes"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=10_000)
    options = parser.parse_args(argv)
    if options.episodes < 1:
        parser.error("--episodes must be at least 1")
    with tempfile.TemporaryDirectory(prefix="bench-viewer-") as folder:
        run = make_run(Path(folder), options.episodes)
        result: dict[str, Any] = {"episodes": options.episodes, **time_index(run), **time_page(run, options.episodes)}
    result["ok"] = bool(result.get("page_ok", False) and result.get("all_listed", False))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
