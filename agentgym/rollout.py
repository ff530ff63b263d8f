"""Running episodes: one agent, one env, one task, producing a `Trajectory`."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import gymnasium as gym

from agentgym.agents.base import Agent


@dataclass
class Trajectory:
    """Everything one episode produced. `timings` is the only field that differs between identical runs."""

    env_id: str
    task_id: str
    family: str
    difficulty: str
    split: str
    seed: int | None
    sample: int
    reward: float
    success: bool
    turns: int
    terminated: bool
    truncated: bool
    tool_calls: int
    tool_errors: int
    messages: list[dict[str, Any]]
    reward_breakdown: dict[str, float]
    rewards: list[float] = field(default_factory=list)
    error: str | None = None
    timings: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def count_tool_calls(messages: list[dict[str, Any]]) -> tuple[int, int]:
    """(tool calls made, tool results that were errors) in a conversation."""
    calls = sum(len(message.get("tool_calls") or []) for message in messages if message["role"] == "assistant")
    errors = sum(
        1 for message in messages
        if message["role"] in ("tool", "user") and str(message.get("content", "")).startswith("Error:")
    )
    return calls, errors


def run_episode(
    env: gym.Env[Any, Any],
    agent: Agent,
    *,
    env_id: str = "",
    seed: int | None = None,
    task_id: str | None = None,
    sample: int = 0,
    success_threshold: float = 1.0,
) -> Trajectory:
    """Play one episode to its end. The agent sees the task only if it is `privileged` (the oracle)."""
    started = time.perf_counter()
    options = {"task_id": task_id} if task_id is not None else None
    observation, info = env.reset(seed=seed, options=options)
    task = getattr(env.unwrapped, "task", None)
    agent.reset(task if agent.privileged else None, seed=None if seed is None else seed + sample)
    rewards: list[float] = []
    terminated = truncated = False
    agent_seconds = 0.0
    while not (terminated or truncated):
        before = time.perf_counter()
        action = agent.act(info["messages"], info["tools"])
        agent_seconds += time.perf_counter() - before
        observation, reward, terminated, truncated, info = env.step(action)
        rewards.append(float(reward))
    total = time.perf_counter() - started
    messages = info["messages"]
    calls, errors = count_tool_calls(messages)
    reward = sum(rewards)
    return Trajectory(
        env_id=env_id, task_id=info["task_id"], family=info["family"], difficulty=info["difficulty"],
        split=info["split"], seed=seed, sample=sample, reward=reward, success=reward >= success_threshold,
        turns=info["turn"], terminated=terminated, truncated=truncated, tool_calls=calls, tool_errors=errors,
        messages=messages, reward_breakdown=info["reward_breakdown"], rewards=rewards,
        timings={"total_s": total, "agent_s": agent_seconds, "env_s": total - agent_seconds},
    )
