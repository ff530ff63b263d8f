"""Session-wide test hooks: one short summary at the end of the run of what was skipped, and how to enable it.

A newcomer should not have to dig skip reasons out of the log: skips are grouped by the service or data they
wanted, one line per group with the one command that provides it and one example reason (pytest's own
per-test SKIPPED lines are off: `-r fEX` in pyproject.toml, so fifty tests that want Docker read as one line).
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import pytest

# The suite's agents are trusted (the oracle, scripted attackers that name their backend, tiny models in smoke
# runs), so on a machine without Docker `auto` may fall back to the local sandbox here. Tests of the refusal
# itself remove the variable.
os.environ.setdefault("AGENTGYM_ALLOW_WEAK_ISOLATION", "1")

# CLI-v0's default world is 100 workspaces (minutes to build on first use, longer than one test may take). Tests
# that make it with its defaults (the red team, training, serving) use its first 20 (5 test workspaces), the same
# tasks as the full set's; the CLI tests and benches that measure the full split name their size themselves.
# Export AGENTGYM_CLI_FIXTURES=100 to run them on the whole world.
os.environ.setdefault("AGENTGYM_CLI_FIXTURES", "20")

# (words that identify a skip reason, what was missing, the command that provides it)
_WANTS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("docker",), "a Docker daemon and the sandbox image", "make services  (or: sudo bash .ci/setup-docker.sh)"),
    (("postgres",), "the PostgreSQL server binaries", "make services  (or: sudo apt-get install -y postgresql)"),
    (("sample", "synthea", "spider", "intercode"), "the public data samples beside the clone",
     "put the samples at ../shared/data/samples (README, section Tests)"),
    (("chromium",), "a headless browser (Debian's chromium)", "make services  (or: sudo apt-get install -y chromium)"),
    (("openenv", "mcp sdk", "serve extra"), "the serving packages", "pip install -e '.[serve]'  (make install does)"),
    (("root", "per user id"), "root (the local sandbox drops to its own uid)", "run the tests as root"),
    (("namespace",), "a kernel that allows new PID/net namespaces", "(a kernel setting; nothing to install)"),
)


# Skip reasons that mean "something make install / make services provides is missing". CI installs all of it,
# so there such a skip hides a broken install: it fails instead. (Missing public samples still skip: a CI clone
# has none beside it.)
_INSTALLABLE = ("could not import", "is not installed", "pip install", "apt-get install", "make install")


def _reason(report: Any) -> str:
    longrepr = report.longrepr
    return str(longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else longrepr)


def _fail_installable_skip_under_ci(report: Any) -> None:
    if os.environ.get("CI") and report.skipped and not hasattr(report, "wasxfail"):
        reason = _reason(report)
        if any(words in reason.lower() for words in _INSTALLABLE) and "sample" not in reason.lower():
            report.outcome = "failed"
            report.longrepr = f"CI installs every dependency, but this test skipped: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Any:
    outcome = yield
    _fail_installable_skip_under_ci(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Any:
    outcome = yield
    _fail_installable_skip_under_ci(outcome.get_result())


def _category(reason: str) -> tuple[str, str]:
    lowered = reason.lower()
    for words, wanted, command in _WANTS:
        if any(word in lowered for word in words):
            return wanted, command
    return "", ""


def _one_line(reason: str, limit: int = 160) -> str:
    text = " ".join(reason.removeprefix("Skipped: ").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if config.option.collectonly:
        return
    reports = terminalreporter.stats
    passed = len(reports.get("passed", []))
    failed = len(reports.get("failed", [])) + len(reports.get("error", []))
    skipped = reports.get("skipped", [])
    # A known want groups its skips whatever each one's wording; any other skip is grouped by its own reason.
    groups: Counter[tuple[str, str, str]] = Counter()
    example: dict[tuple[str, str, str], str] = {}
    for report in skipped:
        reason = _one_line(_reason(report))
        wanted, command = _category(reason)
        key = (wanted, command, "" if wanted else reason)
        groups[key] += 1
        example.setdefault(key, reason)
    write = terminalreporter.write_line
    terminalreporter.section("agentgym test summary", sep="=")
    write(f"ran: {passed} passed, {failed} failed, {len(skipped)} skipped")
    if not skipped:
        write("nothing was skipped: every service the tests use was available")
    for key, count in groups.most_common():
        wanted, command, reason = key
        if wanted:
            hint = f"; to run them: {command}" if command else ""
            write(f"skipped {count} for want of {wanted} (e.g. {example[key]!r}){hint}")
        else:
            write(f"skipped {count}: {reason}")
