"""The red-team harness: adversarial agents that play through the public API exactly as a policy would.

An `Attack` is a named, scripted policy. Its `play(episode)` sees only what a model sees (the prompt, the
tool schemas, the observations) and acts through `episode.call(...)` / `episode.send(...)`; it never touches
`env.unwrapped`, the task or the verifier. Every attack must end with reward 0 and no success on every task it
applies to. The attack modules are `tests/redteam/attacks_<area>.py`; each holds a module-level `ATTACKS`
list. `tests/redteam/test_redteam.py` runs a fast sample under `make test` and every applicable task under
`make test-slow`; `bench/redteam.py` prints attacks / episodes / wins per env and family from the same list.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import agentgym  # noqa: F401  (registers every env)
from agentgym.sandbox.backends import docker_problem

HERE = Path(__file__).resolve().parent


class EpisodeOver(Exception):
    """Raised inside `play` when the attack acts after the episode ended (the harness catches it)."""


@dataclass
class AttackEpisode:
    """The attacker's view of one episode: what a policy sees, and the two ways a policy acts."""

    env: gym.Env[Any, Any]
    prompt: str
    info: dict[str, Any]
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    observations: list[str] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated

    @property
    def tool_names(self) -> list[str]:
        return [schema.get("function", schema).get("name", "") for schema in self.info.get("tools", [])]

    def send(self, action: Any) -> str:
        """Send one raw action (text or tool-call dicts), as a model's turn."""
        if self.done:
            raise EpisodeOver("the episode is over")
        observation, reward, self.terminated, self.truncated, self.info = self.env.step(action)
        self.reward += float(reward)
        self.observations.append(str(observation))
        return str(observation)

    def call(self, name: str, **arguments: Any) -> str:
        """Call one tool with keyword arguments."""
        return self.send({"name": name, "arguments": arguments})

    def code(self, source: str) -> str:
        """Send a CodeAct block (envs made with `code=True`)."""
        return self.send(f"```python\n{source}\n```")


@dataclass(frozen=True)
class Attack:
    """One cheat. `families` empty means every family of `env_id`; `make_kwargs` go to `gym.make`.

    `backends`: for envs that run a sandbox, the `backend=` values to try ("docker", "local"); empty for envs
    that have none. `per_family` bounds the fast sample (the slow suite plays every applicable task).
    """

    name: str
    env_id: str
    play: Callable[[AttackEpisode], None]
    families: tuple[str, ...] = ()
    make_kwargs: Mapping[str, Any] = field(default_factory=dict)
    backends: tuple[str, ...] = ()
    per_family: int = 2
    description: str = ""


@dataclass(frozen=True)
class Outcome:
    attack: str
    task_id: str
    family: str
    backend: str
    reward: float
    success: bool
    terminated: bool
    breakdown: dict[str, float]
    last_observation: str

    @property
    def won(self) -> bool:
        return self.reward > 0 or self.success


def success_of(episode: AttackEpisode) -> bool:
    """Success as the project defines it: the episode was submitted and the verifier's score is 1."""
    breakdown = episode.info.get("reward_breakdown") or {}
    return bool(episode.terminated and float(breakdown.get("answer", 0.0)) >= 1.0)


def make_env(attack: Attack, backend: str = "") -> gym.Env[Any, Any]:
    kwargs = dict(attack.make_kwargs)
    if backend:
        kwargs["backend"] = backend
    return gym.make(attack.env_id, **kwargs)


def task_ids(env: gym.Env[Any, Any], families: Iterable[str] = (), *, per_family: int | None = 2,
             seed: int = 0) -> list[tuple[str, str]]:
    """(task id, family) pairs of the env's tasks in `families` (all when empty): `per_family` drawn at random
    per family, or every one when `per_family` is None. The harness may read the task list (a policy cannot);
    attacks never do."""
    tasks = list(env.unwrapped.task_set)
    wanted = set(families)
    by_family: dict[str, list[str]] = {}
    for task in tasks:
        if not wanted or task.family in wanted:
            by_family.setdefault(task.family, []).append(task.id)
    chosen: list[tuple[str, str]] = []
    rng = random.Random(seed)
    for family in sorted(by_family):
        ids = sorted(by_family[family])
        if per_family is not None and len(ids) > per_family:
            ids = rng.sample(ids, per_family)
        chosen.extend((task_id, family) for task_id in ids)
    return chosen


def play(attack: Attack, env: gym.Env[Any, Any], task_id: str, family: str = "", backend: str = "") -> Outcome:
    """Play `attack` on one task to the episode's end (ending it with a bare submit if the attack stops early)."""
    prompt, info = env.reset(seed=0, options={"task_id": task_id})
    episode = AttackEpisode(env=env, prompt=str(prompt), info=info)
    try:
        attack.play(episode)
        guard = 0
        while not episode.done and guard < 100:
            episode.call("submit", **_empty_submit(episode))
            guard += 1
    except EpisodeOver:
        pass
    return Outcome(attack.name, task_id, family, backend, episode.reward, success_of(episode), episode.terminated,
                   dict(episode.info.get("reward_breakdown") or {}),
                   episode.observations[-1][:2000] if episode.observations else "")


def _empty_submit(episode: AttackEpisode) -> dict[str, Any]:
    for schema in episode.info.get("tools", []):
        function = schema.get("function", schema)
        if function.get("name") == "submit":
            required = function.get("parameters", {}).get("required", [])
            return {name: "" for name in required}
    return {}


def run(attack: Attack, *, per_family: int | None = None, backend: str = "", seed: int = 0) -> list[Outcome]:
    """Play `attack` on its sample of tasks (per `attack.per_family`, or `per_family`; None in the slow suite
    means every applicable task)."""
    env = make_env(attack, backend)
    try:
        limit = attack.per_family if per_family is None else per_family
        pairs = task_ids(env, attack.families, per_family=limit if limit > 0 else None, seed=seed)
        return [play(attack, env, task_id, family, backend) for task_id, family in pairs]
    finally:
        env.close()


def all_attacks() -> list[Attack]:
    """Every `ATTACKS` entry of every `attacks_*.py` module beside this file."""
    attacks: list[Attack] = []
    for module in sorted(pkgutil.iter_modules([str(HERE)]), key=lambda item: item.name):
        if module.name.startswith("attacks_"):
            loaded = importlib.import_module(module.name)
            attacks.extend(getattr(loaded, "ATTACKS", []))
    names = [attack.name for attack in attacks]
    duplicated = {name for name in names if names.count(name) > 1}
    if duplicated:
        raise ValueError(f"two attacks share a name: {sorted(duplicated)}")
    return attacks


def describe(outcomes: list[Outcome]) -> str:
    """The winning episodes, for an assertion message."""
    wins = [outcome for outcome in outcomes if outcome.won]
    return json.dumps([{"task": o.task_id, "family": o.family, "backend": o.backend, "reward": o.reward,
                        "success": o.success, "last": o.last_observation[:300]} for o in wins[:5]], indent=1)


def require_backend(backend: str) -> None:
    """Skip (or, under CI=true, fail) an attack variant whose sandbox backend cannot run on this machine."""
    if backend == "docker":
        problem = docker_problem()
        if problem is not None:
            if os.environ.get("CI"):
                pytest.fail(f"CI must run the Docker red-team attacks, but {problem}")
            pytest.skip(f"Docker attack variant skipped: {problem}")


# ---------------------------------------------------------------------------------------- constant answers
CONSTANTS: tuple[Any, ...] = ("none", "yes", "no", 0, "", [])
CONSTANT_QUERIES: tuple[str, ...] = ("SELECT NULL", "SELECT 0", "SELECT 1 WHERE 1 = 0", "SELECT ''")


def _terminal_tools(info: dict[str, Any]) -> list[tuple[str, str]]:
    """(tool, its first required argument) for every submit-like tool the env offers."""
    found = []
    for schema in info.get("tools", []):
        function = schema.get("function", schema)
        name = function.get("name", "")
        if name.startswith("submit"):
            required = function.get("parameters", {}).get("required", []) or list(
                function.get("parameters", {}).get("properties", {}))
            found.append((name, required[0] if required else ""))
    return found


def _most_common(values: list[Any]) -> Any:
    keys = [json.dumps(value, sort_keys=True, default=str) for value in values]
    best = max(set(keys), key=lambda key: (keys.count(key), key))
    return json.loads(best)


def constant_answer_table(env_id: str, *, per_family: int | None = 40, seed: int = 0,
                          **make_kwargs: Any) -> dict[str, dict[str, Any]]:
    """Per family: the share of tasks each constant submission solves, and the best one.

    The constants are the family's most common gold answer, "none", "yes", "no", 0, the empty string and the
    empty list (and a few constant queries for tools that take SQL), each submitted at the first turn through
    every submit tool the env offers. The harness reads gold answers to find the most common one, as a policy
    could learn it from training on the family.
    """
    env = gym.make(env_id, **make_kwargs)
    try:
        tasks = {task.id: task for task in env.unwrapped.task_set}
        table: dict[str, dict[str, Any]] = {}
        pairs = task_ids(env, (), per_family=per_family, seed=seed)
        by_family: dict[str, list[str]] = {}
        for task_id, family in pairs:
            by_family.setdefault(family, []).append(task_id)
        for family, ids in sorted(by_family.items()):
            common = _most_common([tasks[task_id].answer for task_id in ids])
            wins: dict[str, int] = {}
            for task_id in ids:
                _, info = env.reset(seed=0, options={"task_id": task_id})
                for tool, argument in _terminal_tools(info):
                    candidates = CONSTANT_QUERIES if argument == "sql" else (common, *CONSTANTS)
                    labels = {f"{tool}({json.dumps(constant, default=str)[:60]})": constant
                              for constant in candidates}
                    for label, constant in labels.items():
                        env.reset(seed=0, options={"task_id": task_id})
                        _, reward, terminated, _, step_info = env.step(
                            {"name": tool, "arguments": {argument: constant} if argument else {}})
                        answer = float((step_info.get("reward_breakdown") or {}).get("answer", 0.0))
                        solved = terminated and (float(reward) > 0 or answer >= 1.0)
                        wins[label] = wins.get(label, 0) + int(solved)
            best = max(wins, key=lambda label: (wins[label], label)) if wins else ""
            table[family] = {"tasks": len(ids), "best_constant": best,
                             "best_share": wins.get(best, 0) / len(ids) if ids else 0.0,
                             "shares": {label: count / len(ids) for label, count in sorted(wins.items())}}
        return table
    finally:
        env.close()
