"""CLI-v0 speed on the real Docker daemon, against `docker exec` measured in the same run.

Figures (issue 9's targets):
- `reset_median_ms`: `env.reset` onto a task whose workspace differs from the previous episode's, in a warm
  sandbox: the pool's reset (every process killed, the work dir emptied) and the fixture's tar streamed in. At
  most 50 ms. The shell itself starts on the episode's first command (`first_step_after_reset_ms`, reported).
- `run_shell_ls_step_median_ms`: one `env.step` calling `run_shell("ls")` (parse, validate, the persistent shell in
  the container, render). At most 5 ms.
- `ls_speedup_vs_docker_exec`: SDK `container.exec_run(["ls"])` on the same warm container divided by that step.
  At least 10x.

Prints one JSON object. Run: `python bench/cli.py` (needs the daemon and the image: `bash .ci/setup-docker.sh`).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from _timing import figure, median_ms

logging.disable(logging.WARNING)


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
    largest = max(len(fixture_for(task).tar) for task in cycle)
    env.close()
    speedup = exec_ms / step_ms
    figures = {
        "reset_median_ms": figure(reset_ms, "<= 50", reset_ms <= 50),
        "run_shell_ls_step_median_ms": figure(step_ms, "<= 5", step_ms <= 5),
        "ls_speedup_vs_docker_exec": figure(speedup, ">= 10", speedup >= 10, 1),
    }
    print(json.dumps({
        "bench": "cli", "figures": figures,
        "reference": {"docker_exec_ls_median_ms": round(exec_ms, 3),
                      "docker_exec_how": "SDK container.exec_run(['ls']) on the episode's warm container",
                      "sandbox_run_ls_median_ms": round(sandbox_ms, 3),
                      "first_step_after_reset_ms": round(first_step_ms, 3)},
        "workspaces_cycled": len(cycle), "largest_fixture_tar_bytes": largest,
        "ok": all(item["ok"] for item in figures.values()),
    }, indent=1))


if __name__ == "__main__":
    main()
