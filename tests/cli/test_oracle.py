"""The oracle scores 1.0 on every task of the full generated set (slow suite; `make test` runs the oracle on every
task of two workspaces, all families, in test_env.py).

Replaying a task's solution in a fresh episode must reproduce the answer, the file-system state and the passing
hidden tests that generation recorded; a task it cannot reproduce is broken.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentgym.agents import OracleAgent
from agentgym.rollout import run_episode


def _failures(env: Any, tasks: list[Any]) -> list[tuple[str, float, dict[str, float]]]:
    failed = []
    for task in tasks:
        trajectory = run_episode(env, OracleAgent(), seed=0, task_id=task.id)
        if trajectory.reward != 1.0:
            failed.append((task.id, trajectory.reward, dict(env.unwrapped._breakdown)))
    return failed


@pytest.fixture(scope="module")
def all_tasks(backend: str) -> list[Any]:
    from agentgym_cli.tasks import generate

    return generate(0, backend=backend)  # 40 workspaces, cached after the first run


@pytest.mark.slow
def test_the_oracle_solves_every_generated_task(make_cli_env: Any, all_tasks: list[Any]) -> None:
    assert len(all_tasks) >= 800
    assert not _failures(make_cli_env(tasks=all_tasks), all_tasks)
