"""`agentgym check` runs the reward-quality bar of environment auto-validation (OpenEnv RFC 008, docs/invariants.md):
every env registered by an installed plugin passes the do-nothing floor, no-gold-at-reset and reward-range checks,
and a deliberately broken plugin env (a verifier that pays 1.0 for an empty answer) is flagged."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest

import agentgym
from agentgym import Task, ToolEnv, verifier
from agentgym.check import (
    check_domain_contracts,
    check_floor,
    check_no_gold_before_end,
    check_reward_range,
    run_checks,
)
from agentgym.registry import installed

PLUGIN_ENVS = [record.id for record in installed()]


@verifier("test-pays-empty")
def pays_empty(task: Task, submission: Any, state: Any) -> float:
    """The motivating bug: an empty (or missing) answer is taken as a match."""
    return 1.0 if not submission or submission == task.answer else 0.0


def _broken_env(**kwargs: Any) -> ToolEnv:
    tasks = [Task(id=f"broken-{index}", domain="broken", family="echo", split="test",
                  prompt=f"Which word comes after 'alpha-{index}'?", answer=f"bravo-{index}-tango",
                  verifier={"name": "test-pays-empty"},
                  solution=[{"name": "submit", "arguments": {"answer": f"bravo-{index}-tango"}}]) for index in range(4)]
    return ToolEnv(tasks=tasks, max_turns=3, **kwargs)


def test_the_broken_plugin_env_is_flagged() -> None:
    # Registered here, not at import: tests that walk the registry at collection must not meet this broken env.
    agentgym.register(id="BrokenEmptyPays-v0", entry_point=_broken_env, description="test: pays an empty answer")
    results = {result.name: result for result in run_checks("BrokenEmptyPays-v0", samples=4)}
    assert results["oracle solves tasks"].ok  # the oracle still scores 1: only the new checks can catch it
    assert not results["do-nothing floor"].ok and "empty submit at once 1.00" in results["do-nothing floor"].detail
    assert not results["rewards finite and in range"].ok
    assert "paid the maximum" in results["rewards finite and in range"].detail


class LeakyPromptEnv(ToolEnv):
    """A reset observation that quotes the gold answer."""

    def reset(self, **kwargs: Any) -> Any:
        observation, info = super().reset(**kwargs)
        assert self.task is not None
        return f"{observation} (hint: {self.task.answer})", info


def test_a_gold_answer_in_the_reset_observation_is_flagged() -> None:
    env = LeakyPromptEnv(tasks=_broken_env().task_set)
    with pytest.raises(AssertionError, match="gold answers appear at reset"):
        check_no_gold_before_end(env, 4, 0)


@pytest.mark.parametrize("env_id", PLUGIN_ENVS)
def test_every_registered_env_meets_the_reward_bar(env_id: str) -> None:
    env = gym.make(env_id)
    try:
        check_floor(env, 3, 0)
        check_no_gold_before_end(env, 20, 0)
        check_reward_range(env, 1, 0)
    finally:
        env.close()


class TaskInStateEnv(ToolEnv):
    """A domain whose episode state carries the task, so any tool could read the gold."""

    def begin_episode(self, task: Task) -> Any:
        return {"records": [], "context": {"current": task}}


def test_a_task_reachable_from_the_episode_state_is_flagged() -> None:
    env = TaskInStateEnv(tasks=_broken_env().task_set)
    with pytest.raises(AssertionError, match=r"holds the Task at state\['context'\]\['current'\]"):
        check_domain_contracts(env, 2, 0)
    clean = ToolEnv(tasks=_broken_env().task_set)
    assert "no Task in the episode state" in check_domain_contracts(clean, 2, 0)


@pytest.mark.parametrize("env_id", PLUGIN_ENVS)
def test_every_installed_env_honours_the_domain_contracts(env_id: str) -> None:
    env = gym.make(env_id)
    try:
        check_domain_contracts(env, 3, 0)
    finally:
        env.close()
