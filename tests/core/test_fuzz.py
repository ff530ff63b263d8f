"""Property-based fuzzing of every registered env (and the core test env) with random and malformed actions.

`make test` runs a few hundred actions per env; the slow suite runs 10,000 per env.
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zoo import ZooEnv

import agentgym

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=30)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)


def tool_call(names: list[str]) -> st.SearchStrategy[Any]:
    return st.fixed_dictionaries({
        "name": st.sampled_from(names) | st.text(max_size=12),
        "arguments": st.dictionaries(st.text(max_size=10), json_values, max_size=4) | json_values,
    })


def actions(names: list[str]) -> st.SearchStrategy[Any]:
    call = tool_call(names)
    return st.one_of(
        st.text(max_size=300),
        call,
        st.lists(call, max_size=3),
        call.map(lambda c: "<tool_call>" + json.dumps(c, default=str) + "</tool_call>"),
        call.map(lambda c: json.dumps(c, default=str)[: len(json.dumps(c, default=str)) // 2]),
        st.text(max_size=40).map(lambda t: "```python\n" + t + "\n```"),
        json_values,
    )


def fuzz(env: gym.Env[Any, Any], examples: int) -> None:
    names = [schema["function"]["name"] for schema in env.unwrapped.tool_schemas if
             schema["function"]["name"] != "submit"]  # submitting ends episodes too soon to explore

    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.lists(actions(names), min_size=1, max_size=4), st.integers(0, 1000))
    def episode(steps: list[Any], seed: int) -> None:
        observation, info = env.reset(seed=seed)
        for action in steps:
            observation, reward, terminated, truncated, info = env.step(action)
            assert env.observation_space.contains(observation)
            json.dumps(info).encode("utf-8")
            assert isinstance(reward, float)
            if terminated or truncated:
                break

    episode()


def registered_ids() -> list[str]:
    return [record.id for record in agentgym.registered() if not record.id.startswith("Test")]


def test_fuzz_core_env() -> None:
    fuzz(ZooEnv(max_turns=3), 300)


@pytest.mark.parametrize("env_id", registered_ids())
def test_fuzz_registered_env(env_id: str) -> None:
    env = gym.make(env_id)
    try:
        fuzz(env, 60)
    finally:
        env.close()


@pytest.mark.slow
@pytest.mark.parametrize("env_id", registered_ids())
def test_fuzz_registered_env_10k_actions(env_id: str) -> None:
    env = gym.make(env_id)
    try:
        fuzz(env, 4000)  # about 2.5 actions per example: 10,000 actions
    finally:
        env.close()
