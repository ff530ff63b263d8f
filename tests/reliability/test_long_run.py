"""Long runs (see longrun.py): flat memory and no leaked file descriptors, threads, temp dirs or containers.

`make test` plays 2,000 episodes cycling through 60 tasks per env, so leaks show up on every run in well under
a minute; the slow suite plays 100,000 over every task. Both print the counts as one JSON line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import longrun
import pytest
from reliability_support import os_threads


def _check(report: longrun.Report) -> None:
    summary = report.to_json()
    print(json.dumps(summary))
    assert not report.oracle_failures, f"the oracle failed: {report.oracle_failures[:5]}"
    assert report.memory_growth < 0.05, (
        f"RSS grew {report.memory_growth:.1%} after warm-up ({summary['rss_after_warmup_mb']} -> "
        f"{summary['rss_end_mb']} MB)")
    assert report.fds["end"] <= report.fds["after_warmup"], f"file descriptors leaked: {report.fds}"
    assert report.threads["end"] <= report.threads["after_warmup"], f"threads leaked: {report.threads}"
    assert not report.temp_entries_left, f"temp dirs left behind: {report.temp_entries_left[:5]}"
    assert not report.containers_left, f"containers left behind: {report.containers_left}"
    assert report.faults_injected.get("transient_error", 0) > 0 and report.faults_injected.get("timeout", 0) > 0
    assert summary["ok"]


@pytest.mark.timeout(300)
def test_2000_episodes_flat_memory_and_nothing_leaked(fhir_store_path: Path, cli_tasks_path: Path,
                                                      cli_backend: str) -> None:
    # A short run first: it starts the threads a process starts once and keeps (native BLAS or I/O pools, first
    # used by some env), so the count below measures what the long run leaves, not what an earlier test's first
    # use of a library happened to start late.
    longrun.run(40, fhir_store=fhir_store_path, cli_tasks=cli_tasks_path, cli_backend=cli_backend, rounds=2,
                task_limit=5, kill_every=0)
    threads_before = os_threads()
    report = longrun.run(2000, fhir_store=fhir_store_path, cli_tasks=cli_tasks_path, cli_backend=cli_backend,
                         rounds=10, task_limit=60, kill_every=0)
    assert sum(report.episodes.values()) >= 2000
    assert report.actions_fuzzed > 5000
    _check(report)
    assert os_threads() <= threads_before, "threads left running after every env was closed"


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_100000_episodes_flat_memory_and_nothing_leaked(fhir_store_path: Path, cli_tasks_path: Path,
                                                        cli_backend: str) -> None:
    report = longrun.run(100_000, fhir_store=fhir_store_path, cli_tasks=cli_tasks_path, cli_backend=cli_backend,
                         rounds=20, kill_every=int(os.environ.get("AGENTGYM_LONGRUN_KILL_EVERY", "0")))
    assert sum(report.episodes.values()) >= 100_000
    _check(report)
