"""`agentgym check`: Gymnasium's `check_env` plus agentgym's own invariants, each reported by name."""

from __future__ import annotations

import json
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import check_env as gymnasium_check_env

from agentgym.agents import OracleAgent, RandomAgent
from agentgym.rollout import run_episode


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    detail: str


def _strip_timings(trajectory: Any) -> dict[str, Any]:
    data: dict[str, Any] = trajectory.to_dict()
    data.pop("timings")
    return data


def check_gymnasium(env: gym.Env[Any, Any]) -> str:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gymnasium_check_env(env.unwrapped, skip_render_check=True)
    notes = sorted({str(w.message).splitlines()[0] for w in caught})
    return "passed" + (f" ({len(notes)} warnings: {'; '.join(notes)[:300]})" if notes else "")


def check_oracle(env: gym.Env[Any, Any], samples: int, seed: int) -> str:
    tasks = env.unwrapped.task_set  # type: ignore[attr-defined]
    rng = np.random.default_rng(seed)
    chosen = range(len(tasks)) if samples <= 0 or samples >= len(tasks) else rng.choice(len(tasks), samples,
                                                                                      replace=False)
    failures = []
    agent = OracleAgent()
    for index in chosen:
        task = tasks[int(index)]
        trajectory = run_episode(env, agent, seed=seed, task_id=task.id)
        if trajectory.reward < 1.0:
            last = trajectory.messages[-1].get("content", "")
            failures.append(f"{task.id} scored {trajectory.reward:.3f} (last message: {str(last)[:120]})")
    if failures:
        raise AssertionError(f"{len(failures)} of {len(chosen)} tasks not solved by the oracle: "
                             + "; ".join(failures[:5]))
    return f"oracle solved {len(chosen)} of {len(chosen)} tasks"


def check_garbage(env: gym.Env[Any, Any], episodes: int, seed: int) -> str:
    steps = 0
    for episode in range(episodes):
        run_episode(env, RandomAgent(seed=seed + episode), seed=seed + episode)
    env.reset(seed=seed)
    env.action_space.seed(seed)
    hostile: list[Any] = [
        "", "\ud800\udfff\ud800", "x" * 1_000_000, "[" * 10_000 + "]" * 10_000, '{"name": "submit"',
        {"name": "no_such_tool", "arguments": {}}, {"name": 3}, [{"name": None}], 12345, None,
    ]
    for action in hostile + [env.action_space.sample() for _ in range(20)]:
        observation, _reward, terminated, truncated, info = env.step(action)
        steps += 1
        if not env.observation_space.contains(observation):
            raise AssertionError(f"observation not in the observation space after action {str(action)[:40]!r}")
        json.dumps(info)
        if terminated or truncated:
            env.reset(seed=seed + steps)
    return f"{episodes} random episodes and {steps} hostile actions, no exception"


def check_determinism(env: gym.Env[Any, Any], seed: int) -> str:
    first = _strip_timings(run_episode(env, RandomAgent(seed=seed), seed=seed))
    second = _strip_timings(run_episode(env, RandomAgent(seed=seed), seed=seed))
    if first != second:
        differing = [key for key in first if first[key] != second[key]]
        raise AssertionError(f"the same seed gave different episodes (fields: {differing})")
    observation_a, info_a = env.reset(seed=seed)
    observation_b, info_b = env.reset(seed=seed)
    if (observation_a, info_a) != (observation_b, info_b):
        raise AssertionError("reset(seed) twice gave different observations or info")
    return "same seed, same episode"


def run_checks(env_id: str, *, samples: int = 20, seed: int = 0, env_kwargs: dict[str, Any] | None = None,
               ) -> list[CheckResult]:
    """Run every check on a fresh instance of `env_id`. Never raises for a failing check."""
    results: list[CheckResult] = []
    env = gym.make(env_id, **(env_kwargs or {}))
    checks: list[tuple[str, Callable[[], str]]] = [
        ("gymnasium check_env", lambda: check_gymnasium(env)),
        ("oracle solves tasks", lambda: check_oracle(env, samples, seed)),
        ("garbage never raises", lambda: check_garbage(env, 3, seed)),
        ("seed reproduces episode", lambda: check_determinism(env, seed)),
    ]
    try:
        for name, function in checks:
            try:
                results.append(CheckResult(name, True, function()))
            except Exception as error:  # noqa: BLE001 - report every failing check, then go on to the next
                where = traceback.extract_tb(error.__traceback__)[-1]
                results.append(CheckResult(name, False, f"{type(error).__name__}: {error} "
                                                        f"(at {where.filename}:{where.lineno})"))
    finally:
        env.close()
    return results
