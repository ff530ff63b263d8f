"""Episodes whose grading failed because the infrastructure did (`agentgym.InfrastructureError`) are not the
agent's zeros: `agentgym eval` leaves them out of success and pass@k and reports them apart, overall and per
family, and says so on the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

import agentgym
from agentgym import InfrastructureError, Score, Task, ToolEnv
from agentgym.cli import main

LOST = {"infra-0", "infra-1"}  # the tasks whose grading backend goes away


def _tasks() -> list[Task]:
    return [Task(id=f"infra-{index}", domain="infra", family="add" if index % 2 == 0 else "double", split="test",
                 prompt=f"What is {index} + {index}?", answer=2 * index,
                 solution=[{"name": "submit", "arguments": {"answer": 2 * index}}]) for index in range(6)]


class LostBackendEnv(ToolEnv):
    """Grades with the task's verifier, except that the grading backend is gone for the tasks in `LOST`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(tasks=_tasks(), **kwargs)

    def verify(self, task: Task, submission: Any, state: Any) -> Score:
        if task.id in LOST:
            raise InfrastructureError("the grading database went away")
        return super().verify(task, submission, state)


def test_eval_counts_infra_failed_episodes_apart(tmp_path: Path) -> None:
    # Registered here, not at import: tests that walk the registry at collection must not meet this env.
    agentgym.register(id="InfraLostTest-v0", entry_point=LostBackendEnv, description="test: a grader losing its backend")
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["eval", "InfraLostTest-v0", "--agent", "oracle", "--out", str(out),
                                       "--no-progress", "--no-plots", "--bootstrap", "20"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    # the oracle solved every task it could be judged on: 4 of 4, not 4 of 6
    assert summary["episodes"] == 4 and summary["success_rate"] == 1.0
    assert summary["infra_failed"] == {"episodes": 2, "share": 2 / 6, "task_ids": sorted(LOST)}
    assert summary["by_family"]["add"]["infra_failed"]["episodes"] == 1
    assert summary["by_family"]["add"]["episodes"] == 2
    assert summary["diagnosis"]["episodes"]["infra_error"] == 2
    assert "infra-failed: 2 episodes (33.3%) left out" in result.output
    records = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    failed = sorted(record["task_id"] for record in records if record["diagnosis"]["episode"] == "infra_error")
    assert failed == sorted(LOST)
    assert all(record["reward"] == 0.0 for record in records if record["task_id"] in LOST)
