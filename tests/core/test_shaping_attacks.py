"""Shaping cannot be farmed into a win on the real envs: with every shaping weight on, a policy that makes many
cheap valid calls and then submits a wrong constant keeps less than a correct answer, and never succeeds.
(The never-submit variant is a red-team attack: tests/redteam/attacks_core.py.)"""

from __future__ import annotations

import gymnasium as gym
import pytest

import agentgym  # noqa: F401  (registers the envs)
from agentgym.agents import OracleAgent
from agentgym.rewards import SHAPING_CAP
from agentgym.rollout import run_episode

WEIGHTS = {"format": 1.0, "schema": 1.0, "execution": 1.0, "process": 1.0}
CASES = [
    ("SQL-v0", {}, {"name": "list_tables", "arguments": {}},
     [{"name": "submit", "arguments": {"sql": "SELECT 'none'"}},
      {"name": "submit_answer", "arguments": {"value": "none"}}]),
    ("FHIR-v0", {"knowledge": False}, {"name": "lookup_code", "arguments": {"text": "potassium"}},
     [{"name": "submit", "arguments": {"answer": "none"}}]),
]


@pytest.mark.parametrize("env_id, extra, cheap_call, wrong_submits", CASES, ids=[case[0] for case in CASES])
def test_farmed_calls_then_a_wrong_answer_stay_below_a_correct_one(env_id: str, extra: dict[str, object],
                                                                   cheap_call: dict[str, object],
                                                                   wrong_submits: list[dict[str, object]]) -> None:
    env = gym.make(env_id, reward_weights=WEIGHTS, max_turns=12, **extra)
    try:
        task_ids = sorted(task.id for task in env.unwrapped.task_set)[:3]
        for task_id in task_ids:
            env.reset(seed=0, options={"task_id": task_id})
            for _ in range(10):
                env.step(cheap_call)
            for wrong_submit in wrong_submits:  # a SQL task takes a query or a value, and refuses the other
                _, reward, terminated, _, info = env.step(wrong_submit)
                if terminated:
                    break
            breakdown = info["reward_breakdown"]
            assert terminated
            if breakdown["answer"] >= 1.0:  # "none" happened to be this task's answer: not a farmed win
                continue
            assert reward <= SHAPING_CAP < 1.0, (task_id, reward, breakdown)
            solved = run_episode(env, OracleAgent(), seed=0, task_id=task_id)
            assert solved.success and solved.reward >= 1.0 > reward
    finally:
        env.close()
