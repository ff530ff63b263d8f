"""Running episodes: one agent, one env, one task, producing a `Trajectory`.

Also the two errors an agent may raise mid-episode: `AgentError` (this episode cannot go on, e.g. the prompt
outgrew the model's context; the episode is kept as a failure) and `AgentUnavailable` (the model server did
not answer after retries; the episode is not kept, so a re-run tries it again).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import gymnasium as gym

from agentgym.agents.base import Agent


class AgentError(Exception):
    """The agent cannot continue this episode; the episode ends as a failure with this message."""


class AgentUnavailable(Exception):
    """The agent's backend did not answer (after its retries); the episode should be retried later."""


@dataclass
class Trajectory:
    """Everything one episode produced. `timings` is the only field that differs between identical runs.

    `tool_calls` counts the calls the agent made, `tool_errors` the tool results that were errors, and
    `format_errors` the turns whose action held no valid call at all. `reward` is what the env paid (shaping
    included when weights are set); `success` comes from the verifier's score alone (`episode_success`).
    `diagnosis` is the env's `info["diagnosis"]` of the finished episode (docs/diagnosis.md): None when the env
    gives none, or when the episode ended on the agent's side (an agent error, a loop) before the env finished.
    """

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
    format_errors: int = 0
    diagnosis: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trajectory:
        """The inverse of `to_dict` (fields a newer version added are filled with their defaults)."""
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        return cls(**known)


def episode_success(reward_breakdown: Mapping[str, Any], *, terminated: bool, threshold: float = 1.0,
                    error: str | None = None) -> bool:
    """Whether an episode succeeded: it ended with a submission (`terminated`), without an agent error, and the
    verifier's score (`reward_breakdown["answer"]`) is at least `threshold`.

    The shaped reward never enters: shaping weights change what an RL learner is paid, not whether the task
    was solved.
    """
    answer = reward_breakdown.get("answer")
    if error is not None or not terminated or isinstance(answer, bool) or not isinstance(answer, (int, float)):
        return False
    return float(answer) >= threshold


def count_tool_calls(messages: list[dict[str, Any]]) -> tuple[int, int]:
    """(tool calls made, tool results that were errors) in a conversation."""
    calls = sum(len(message.get("tool_calls") or []) for message in messages if message["role"] == "assistant")
    errors = sum(
        1 for message in messages
        if message["role"] == "tool" and str(message.get("content", "")).startswith("Error:")
    )
    return calls, errors


def count_format_errors(messages: list[dict[str, Any]]) -> int:
    """Turns whose action held no valid tool call (the env answered with a user-role error)."""
    return sum(
        1 for message in messages[2:]
        if message["role"] == "user" and str(message.get("content", "")).startswith("Error:")
    )


def _action_key(action: Any) -> str:
    try:
        return json.dumps(action, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(action)


def run_episode(
    env: gym.Env[Any, Any],
    agent: Agent,
    *,
    env_id: str = "",
    seed: int | None = None,
    task_id: str | None = None,
    sample: int = 0,
    success_threshold: float = 1.0,
    max_repeats: int = 0,
) -> Trajectory:
    """Play one episode to its end. The agent sees the task only if it is `privileged` (the oracle).

    Args:
        env: The environment (reset here with `seed` and, if given, `task_id`).
        agent: Produces the actions. Model agents never receive the task object.
        env_id: Recorded in the trajectory.
        seed: Seeds the env's reset; the agent is reset with `seed + sample`.
        task_id: Play this task instead of a seeded random one.
        sample: Which of the task's repeated samples this is (recorded; varies the agent's seed).
        success_threshold: The verifier's score (`reward_breakdown["answer"]`, not the shaped reward) at or
            above which a submitted episode counts as a success (`episode_success`).
        max_repeats: When > 0, end the episode (truncated, with `error` set) once the agent has sent the same
            action and received the same observation this many times in a row: a looping model.

    Raises:
        AgentUnavailable: the agent's backend could not be reached; nothing is recorded for this episode.
    """
    started = time.perf_counter()
    options = {"task_id": task_id} if task_id is not None else None
    observation, info = env.reset(seed=seed, options=options)
    # Only a privileged agent is handed the task; a remote env looks it up locally, so nobody else asks for it.
    task = getattr(env.unwrapped, "task", None) if agent.privileged else None
    agent.reset(task, seed=None if seed is None else seed + sample)
    rewards: list[float] = []
    terminated = truncated = False
    agent_seconds = 0.0
    error: str | None = None
    last_exchange: tuple[str, str] | None = None
    repeats = 0
    while not (terminated or truncated):
        before = time.perf_counter()
        try:
            action = agent.act(info["messages"], info["tools"])
        except AgentError as failure:
            agent_seconds += time.perf_counter() - before
            error, truncated = f"agent: {failure}", True
            break
        agent_seconds += time.perf_counter() - before
        observation, reward, terminated, truncated, info = env.step(action)
        rewards.append(float(reward))
        exchange = (_action_key(action), str(observation))
        repeats = repeats + 1 if exchange == last_exchange else 1
        last_exchange = exchange
        if max_repeats > 0 and repeats >= max_repeats and not (terminated or truncated):
            error, truncated = f"loop: the agent sent the same action {repeats} times in a row", True
    total = time.perf_counter() - started
    messages = info["messages"]
    calls, errors = count_tool_calls(messages)
    reward = sum(rewards)
    return Trajectory(
        env_id=env_id, task_id=info["task_id"], family=info["family"], difficulty=info["difficulty"],
        split=info["split"], seed=seed, sample=sample, reward=reward,
        success=episode_success(info["reward_breakdown"], terminated=terminated, threshold=success_threshold,
                                error=error),
        turns=info["turn"], terminated=terminated, truncated=truncated, tool_calls=calls, tool_errors=errors,
        messages=messages, reward_breakdown=info["reward_breakdown"], rewards=rewards, error=error,
        timings={"total_s": total, "agent_s": agent_seconds, "env_s": total - agent_seconds},
        format_errors=count_format_errors(messages),
        diagnosis=info.get("diagnosis"),  # only the info of a step that ended the episode has one
    )
