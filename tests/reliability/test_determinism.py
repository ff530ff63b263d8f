"""Determinism (invariant 6): the same seeds give the same trajectories, timings aside, for the oracle and the
random agent on SQL-v0, FHIR-v0 and CLI-v0: across two runs in this process, and across worker counts (one
serial worker against two worker processes of `agentgym.parallel`).

Local against Ray rollouts is covered by tests/eval/test_ray.py::test_ray_results_equal_local_and_a_dead_actor_is_replaced.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from reliability_support import docker_client

import agentgym
from agentgym.parallel import EnvSpec, EpisodeResult, EpisodeSpec, RolloutConfig, run_rollouts
from agentgym.tasks import load_tasks

EPISODES = {"SQL-v0": 24, "FHIR-v0": 12, "CLI-v0": 8}


def _env_specs(fhir_store_path: Path, cli_tasks_path: Path, cli_backend: str) -> tuple[EnvSpec, ...]:
    records = {record.id: record for record in agentgym.registered()}
    kwargs: dict[str, dict[str, Any]] = {
        "SQL-v0": {},
        "FHIR-v0": {"store": str(fhir_store_path), "knowledge": False},
        "CLI-v0": {"tasks": str(cli_tasks_path), "backend": cli_backend},
    }
    return tuple(EnvSpec(env_id, records[env_id].entry_point, records[env_id].kwargs, kwargs[env_id])
                 for env_id in EPISODES)


def _plan(fhir_store_path: Path, cli_tasks_path: Path) -> list[EpisodeSpec]:
    """A seeded choice of tasks per env, each played once with its own reset seed."""
    import gymnasium as gym

    task_ids = {
        "SQL-v0": [task.id for task in gym.make("SQL-v0").unwrapped.task_set],
        "FHIR-v0": [task.id for task in gym.make("FHIR-v0", store=str(fhir_store_path),
                                                 knowledge=False).unwrapped.task_set],
        "CLI-v0": [task.id for task in load_tasks(cli_tasks_path)],
    }
    rng = np.random.default_rng(7)
    plan = []
    for env_id, count in EPISODES.items():
        for index, position in enumerate(rng.choice(len(task_ids[env_id]), count, replace=False)):
            plan.append(EpisodeSpec(env_id, task_ids[env_id][int(position)], 0, seed=1000 + index))
    return plan


def _play(config: RolloutConfig, plan: list[EpisodeSpec], workers: int, backend: str) -> dict[Any, dict[str, Any]]:
    results: dict[Any, dict[str, Any]] = {}

    def keep(result: EpisodeResult) -> None:
        assert result.trajectory is not None, result.unavailable
        trajectory = dict(result.trajectory)
        trajectory.pop("timings")
        results[result.spec.key] = trajectory

    used = run_rollouts(config, plan, keep, workers=workers, backend=backend)
    assert used == backend
    assert len(results) == len(plan)
    return results


def _first_difference(first: dict[Any, dict[str, Any]], second: dict[Any, dict[str, Any]]) -> str:
    for key, trajectory in first.items():
        if trajectory != second.get(key):
            other = second.get(key) or {}
            fields = [name for name in trajectory if trajectory[name] != other.get(name)]
            detail = ""
            if "messages" in fields:
                pairs = zip(trajectory["messages"], other.get("messages", []))
                detail = next((f"; first differing message: {a!r} vs {b!r}" for a, b in pairs if a != b), "")
            return f"{key}: fields {fields}{detail}"[:3000]
    return "none"


def _orphans(since: float) -> list[str]:
    """Containers labelled agentgym whose owner process is gone and that were made after `since`."""
    from datetime import datetime

    from agentgym.sandbox.backends import docker_problem
    from agentgym.sandbox.docker_backend import OWNER_LABEL

    if docker_problem() is not None:
        return []
    left = []
    for container in docker_client().containers.list(all=True, filters={"label": "agentgym"}):
        owner = int(container.labels.get(OWNER_LABEL, "0") or 0)
        created = datetime.fromisoformat(container.attrs["Created"][:26].rstrip("Z") + "+00:00").timestamp()
        if owner and created >= since - 1 and not os.path.exists(f"/proc/{owner}"):
            left.append(f"{container.short_id} (owner {owner}, {container.status})")
    return left


@pytest.mark.timeout(600)
@pytest.mark.parametrize("agent", ["oracle", "random"])
def test_same_seeds_same_trajectories_across_runs_and_worker_counts(
        agent: str, fhir_store_path: Path, cli_tasks_path: Path, cli_backend: str) -> None:
    started = time.time()
    config = RolloutConfig(envs=_env_specs(fhir_store_path, cli_tasks_path, cli_backend), agent=agent)
    plan = _plan(fhir_store_path, cli_tasks_path)
    first = _play(config, plan, workers=1, backend="serial")
    second = _play(config, plan, workers=1, backend="serial")
    assert first == second, f"two runs differ: {_first_difference(first, second)}"
    parallel = _play(config, plan, workers=2, backend="process")
    assert first == parallel, f"1 and 2 workers differ: {_first_difference(first, parallel)}"
    if agent == "oracle":
        failed = [key for key, trajectory in first.items() if trajectory["reward"] != 1.0]
        assert not failed, f"the oracle failed {failed}"
    else:  # the random agent really explored: errors, several turns, some tool calls
        assert sum(t["tool_errors"] + t["format_errors"] for t in first.values()) > len(plan)
    # worker processes have exited: every container they made is gone with them
    deadline = time.monotonic() + 20
    while _orphans(started) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _orphans(started) == []
