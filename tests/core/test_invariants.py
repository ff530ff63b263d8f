"""Invariants from docs/invariants.md that are not covered elsewhere."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest
from zoo import ZooEnv

from agentgym import Task
from agentgym.agents import Agent, OracleAgent
from agentgym.rollout import run_episode


class Spy(Agent):
    """A model-like agent that records everything it is given."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def reset(self, task: Task | None = None, *, seed: int | None = None) -> None:
        self.seen.append(task)

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        self.seen.append((messages, tools))
        return {"name": "submit", "arguments": {"answer": 0}}


def test_model_agents_never_receive_the_task() -> None:
    env = ZooEnv()
    spy = Spy()
    run_episode(env, spy, seed=0, task_id="zoo-1")
    assert spy.seen[0] is None
    assert "solution" not in repr(spy.seen[1:]) and "7" not in repr(spy.seen[1:])
    oracle = OracleAgent()
    assert run_episode(env, oracle, seed=0, task_id="zoo-1").reward == 1.0


def test_agent_cannot_call_env_internals() -> None:
    env = ZooEnv()
    env.reset(options={"task_id": "zoo-0"})
    for name in ("reset", "verify", "begin_episode", "step", "__init__"):
        observation = env.step({"name": name, "arguments": {}})[0]
        assert observation.startswith(f"Error: unknown tool '{name}'")
    assert env.task is not None and env.task.id == "zoo-0"


def test_tasks_are_immutable() -> None:
    env = ZooEnv()
    task = env.task_set[0]
    with pytest.raises(pydantic.ValidationError):
        task.answer = 99  # type: ignore[misc]
    before = [t.model_dump_json() for t in env.task_set]
    for seed in range(10):
        run_episode(env, OracleAgent(), seed=seed)
    assert [t.model_dump_json() for t in env.task_set] == before
