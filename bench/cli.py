"""CLI-v0 speed on the real Docker daemon, against `docker exec` measured in the same run.

Figures (issue 9's targets):
- `reset_median_ms`: `env.reset` onto a task whose workspace differs from the previous episode's, in a warm
  sandbox: the pool's reset (every process killed, the work dir emptied) and the fixture's tar streamed in. At
  most 50 ms. The shell itself starts on the episode's first command (`first_step_after_reset_ms`, reported).
- `run_shell_ls_step_median_ms`: one `env.step` calling `run_shell("ls")` (parse, validate, the persistent shell in
  the container, render). At most 5 ms.
- `ls_speedup_vs_docker_exec`: SDK `container.exec_run(["ls"])` on the same warm container divided by that step.
  At least 10x.
- Small, fast calls, where the env's own per-step work shows: `run_shell("pwd")`, `read_file` of a file of a few
  bytes and `list_dir(".")`, each as an `env.step` and as the bare sandbox call it makes, measured interleaved
  (pairs in turn, so a busy moment slows both); `*_overhead_ms` is step minus sandbox call at the median of the
  pairs. At most 0.5 ms each (the env parses, validates, renders and records; the sandbox does the rest).

Prints one JSON object. Run: `python bench/cli.py` (needs the daemon and the image: `bash .ci/setup-docker.sh`).
"""

from __future__ import annotations

import json
import logging
import statistics
import time
from collections.abc import Callable
from typing import Any

from _timing import figure, median_ms

logging.disable(logging.WARNING)

SMALL_CALLS = 300  # pairs (step, bare sandbox call) per small call


def paired_ms(step: Callable[[], object], bare: Callable[[], object], pairs: int) -> dict[str, float]:
    """Medians of `step`, of `bare` and of their per-pair difference, run in turn (after 5 untimed pairs)."""
    steps, bares, gaps = [], [], []
    for index in range(pairs + 5):
        began = time.perf_counter()
        step()
        step_s = time.perf_counter() - began
        began = time.perf_counter()
        bare()
        bare_s = time.perf_counter() - began
        if index >= 5:
            steps.append(step_s)
            bares.append(bare_s)
            gaps.append(step_s - bare_s)
    return {"step_ms": round(statistics.median(steps) * 1000, 4), "sandbox_ms": round(statistics.median(bares) * 1000, 4),
            "overhead_ms": round(statistics.median(gaps) * 1000, 4)}


def main() -> None:
    from agentgym_cli.env import fixture_for, make_env
    from agentgym_cli.tasks import generate

    tasks = generate(0, fixtures=5, backend="docker")
    # One task per workspace, visited in turn: every reset streams in a different fixture than the last one.
    by_fixture: dict[str, Any] = {}
    for task in tasks:
        by_fixture.setdefault(task.metadata["fixture"], task)
    cycle = list(by_fixture.values())
    env = make_env(tasks, backend="docker", pool_size=1, max_turns=100_000)
    for task in cycle:  # warm-up: the first load of each workspace also takes its baseline snapshot
        env.reset(options={"task_id": task.id})
    position = [0]

    def reset_next() -> None:
        position[0] += 1
        env.reset(options={"task_id": cycle[position[0] % len(cycle)].id})

    reset_ms = median_ms(reset_next, 60, warmup=0)
    ls = {"name": "run_shell", "arguments": {"command": "ls"}}
    # For context: the shell starts on the first command, so an episode's first step costs more than the rest.
    first_step_ms = median_ms(lambda: (reset_next(), env.step(ls)), 30, warmup=0) - reset_ms
    env.reset(options={"task_id": cycle[0].id})
    step_ms = median_ms(lambda: env.step(ls), 300)
    workspace = env.unwrapped.state
    container = workspace.sandbox.container
    exec_ms = median_ms(lambda: container.exec_run(["ls"], workdir=workspace.root), 30, warmup=2)
    sandbox_ms = median_ms(lambda: workspace.sandbox.run("ls"), 300)
    # Small, fast calls: the step and the sandbox call it makes, in turn. A tiny file written once for read_file.
    sandbox = workspace.sandbox
    env.step({"name": "write_file", "arguments": {"path": "bench-tiny.txt", "content": "hello\n"}})
    small = {
        "pwd": paired_ms(lambda: env.step({"name": "run_shell", "arguments": {"command": "pwd"}}),
                         lambda: sandbox.run("pwd", timeout=workspace.command_timeout), SMALL_CALLS),
        "read_file_tiny": paired_ms(lambda: env.step({"name": "read_file", "arguments": {"path": "bench-tiny.txt"}}),
                                    lambda: sandbox.get_file("bench-tiny.txt", max_bytes=1 << 20), SMALL_CALLS),
        "list_dir": paired_ms(lambda: env.step({"name": "list_dir", "arguments": {"path": "."}}),
                              lambda: sandbox.run_python("print(1)", timeout=30), SMALL_CALLS),
    }
    largest = max(len(fixture_for(task).tar) for task in cycle)
    env.close()
    speedup = exec_ms / step_ms
    figures = {
        "reset_median_ms": figure(reset_ms, "<= 50", reset_ms <= 50),
        "run_shell_ls_step_median_ms": figure(step_ms, "<= 5", step_ms <= 5),
        "ls_speedup_vs_docker_exec": figure(speedup, ">= 10", speedup >= 10, 1),
    }
    for name, timing in small.items():
        figures[f"{name}_overhead_ms"] = figure(timing["overhead_ms"], "<= 0.5", timing["overhead_ms"] <= 0.5, 4)
    print(json.dumps({
        "bench": "cli", "figures": figures,
        "reference": {"docker_exec_ls_median_ms": round(exec_ms, 3),
                      "docker_exec_how": "SDK container.exec_run(['ls']) on the episode's warm container",
                      "sandbox_run_ls_median_ms": round(sandbox_ms, 3),
                      "first_step_after_reset_ms": round(first_step_ms, 3),
                      "small_calls": small,
                      "small_calls_how": "env.step vs the bare sandbox call, interleaved pairs; list_dir's bare "
                                         "call is run_python('print(1)'), the round trip it makes"},
        "workspaces_cycled": len(cycle), "largest_fixture_tar_bytes": largest,
        "ok": all(item["ok"] for item in figures.values()),
    }, indent=1))


if __name__ == "__main__":
    main()
