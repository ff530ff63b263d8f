"""`agentgym check`: Gymnasium's `check_env` plus agentgym's own invariants, each reported by name.

Besides Gymnasium's checker and our invariants (oracle, garbage actions, seeds), it runs the reward-quality bar
of environment auto-validation (OpenEnv's RFC 008; docs/invariants.md says which of its checks apply here):
the do-nothing floor stays at least `FLOOR_MARGIN` below the oracle's maximum, no reset observation holds a
gold answer, and every reward is finite and inside its range, whatever answer is submitted (NaN, inf, negative,
huge, empty).
"""

from __future__ import annotations

import json
import math
import re
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


FLOOR_MARGIN = 0.5  # the do-nothing policies' mean reward stays at least this far below the maximum (1.0)
MAX_REWARD = 1.0
# Answers no task should be paid the maximum for, each submitted as the terminal tool's answer on a fresh episode.
HOSTILE_ANSWERS: list[Any] = [float("nan"), float("inf"), float("-inf"), -1e308, 1e308, 10**400, "", " ", {}, None,
                              "NaN", "x" * 100_000]
# Answers that may be right for some task (a count of 0, an empty list) but must still get a finite, in-range reward.
RANGE_ONLY_ANSWERS: list[Any] = [-1, 0, [], "[]"]


def _sample_tasks(env: gym.Env[Any, Any], samples: int, seed: int) -> list[Any]:
    tasks = env.unwrapped.task_set  # type: ignore[attr-defined]
    rng = np.random.default_rng(seed)
    if samples <= 0 or samples >= len(tasks):
        return list(tasks)
    return [tasks[int(index)] for index in sorted(rng.choice(len(tasks), samples, replace=False))]


def _submit_call(env: gym.Env[Any, Any], answer: Any) -> dict[str, Any]:
    """A call of the env's first terminal tool with `answer` in each of its required arguments."""
    tools = env.unwrapped.tools  # type: ignore[attr-defined]
    terminal = next(item for item in tools.values() if item.terminal)
    function = terminal.schema.get("function", terminal.schema)
    required = function.get("parameters", {}).get("required", []) or ["answer"]
    return {"name": terminal.name, "arguments": {name: answer for name in required}}


def _reward_range(env: gym.Env[Any, Any]) -> tuple[float, float]:
    weights = getattr(env.unwrapped, "reward_weights", {}) or {}
    return 0.0, MAX_REWARD + sum(abs(float(value)) for value in weights.values())


def _play(env: gym.Env[Any, Any], task_id: str, actions: list[Any]) -> tuple[float, list[str]]:
    """Play `actions` (the last one repeated until the episode ends); the summed reward and the observations."""
    observation, _info = env.reset(options={"task_id": task_id})
    observations, total = [str(observation)], 0.0
    for turn in range(1000):
        observation, reward, terminated, truncated, _info = env.step(actions[min(turn, len(actions) - 1)])
        total += float(reward)
        if terminated or truncated:
            return total, observations
        observations.append(str(observation))
    raise AssertionError(f"task {task_id}: the episode did not end after 1000 turns")


def check_floor(env: gym.Env[Any, Any], samples: int, seed: int) -> str:
    """Do-nothing policies (submit an empty answer at once; never call a tool) earn on average at least
    `FLOOR_MARGIN` less than the maximum reward."""
    tasks = _sample_tasks(env, samples, seed)
    policies: dict[str, list[Any]] = {"empty submit at once": [_submit_call(env, "")],
                                      "no tool call": ["I will not call any tool."]}
    means = {}
    for name, actions in policies.items():
        rewards = [_play(env, task.id, actions)[0] for task in tasks]
        means[name] = sum(rewards) / len(rewards)
    high = {name: mean for name, mean in means.items() if mean > MAX_REWARD - FLOOR_MARGIN}
    if high:
        raise AssertionError("do-nothing policies are paid too much: " + ", ".join(
            f"{name} {mean:.2f} (must be <= {MAX_REWARD - FLOOR_MARGIN:.2f})" for name, mean in high.items()))
    return f"{len(tasks)} tasks: " + ", ".join(f"{name} {mean:.2f}" for name, mean in means.items())


def _gold_texts(answer: Any) -> list[str]:
    """The parts of a gold answer long enough that finding them in a text is no coincidence."""
    items = answer if isinstance(answer, (list, tuple)) else [answer]
    texts: list[str] = []
    for item in items:
        if isinstance(item, (list, tuple)):
            texts.extend(_gold_texts(list(item)))
        elif isinstance(item, str) and len(item.strip()) >= 6:
            texts.append(item.strip().lower())
    return texts


_OPTION_LINE = re.compile(r"^\s*[A-Z][.)]\s.*$", re.MULTILINE)


def check_no_gold_before_end(env: gym.Env[Any, Any], samples: int, seed: int) -> str:
    """No reset observation or reset info (tool schemas aside) holds a gold answer (text answers of 6 characters
    or more; a multiple-choice prompt's option lines are not counted)."""
    tasks = _sample_tasks(env, samples, seed)
    leaks: list[str] = []
    looked = 0
    for task in tasks:
        golds = _gold_texts(task.answer)
        if not golds:
            continue
        looked += 1
        observation, info = env.reset(options={"task_id": task.id})
        # Tool docs hold generic examples; the messages repeat the observation (read below) after the system prompt.
        shown = {key: value for key, value in info.items() if key not in ("tools", "messages")}
        system = " ".join(str(message.get("content", "")) for message in info.get("messages", [])
                          if isinstance(message, dict) and message.get("role") == "system")
        # A multiple-choice prompt lists the gold among its options ("B. statin"): that is the task, not a leak.
        prompt = _OPTION_LINE.sub("", str(observation))
        seen = (prompt + system + json.dumps(shown, default=str)).lower()
        leaks.extend(f"{task.id}: {gold[:40]!r}" for gold in golds  # whole words: "statin" is not in "rosuvastatin"
                     if re.search(r"(?<!\w)" + re.escape(gold) + r"(?!\w)", seen))
    if leaks:
        raise AssertionError(f"{len(leaks)} gold answers appear at reset: " + "; ".join(leaks[:5]))
    return f"{looked} of {len(tasks)} tasks have a text gold; none appears at reset"


def check_reward_range(env: gym.Env[Any, Any], samples: int, seed: int) -> str:
    """Every hostile answer (NaN, inf, negative, huge, empty, ...) is paid a finite reward inside the documented
    range, and none is paid the maximum."""
    low, high = _reward_range(env)
    tasks = _sample_tasks(env, samples, seed)
    problems = []
    for task in tasks:
        for answer in [*HOSTILE_ANSWERS, *RANGE_ONLY_ANSWERS]:
            reward, _ = _play(env, task.id, [_submit_call(env, answer)])
            shown = repr(answer)[:30]
            if not math.isfinite(reward) or not low <= reward <= high:
                problems.append(f"{task.id} answer {shown}: reward {reward!r} outside [{low:g}, {high:g}]")
            elif reward >= MAX_REWARD and not any(answer is allowed for allowed in RANGE_ONLY_ANSWERS):
                problems.append(f"{task.id} answer {shown}: paid the maximum {reward:g}")
    if problems:
        raise AssertionError(f"{len(problems)} bad rewards: " + "; ".join(problems[:5]))
    count = len(HOSTILE_ANSWERS) + len(RANGE_ONLY_ANSWERS)
    return f"{len(tasks)} tasks x {count} hostile answers: every reward finite, in [{low:g}, {high:g}], none paid the maximum"


def _holds_task(value: Any, depth: int = 4, seen: set[int] | None = None) -> str | None:
    """The path to a `Task` reachable from `value` through attributes and containers (`depth` levels), or None."""
    from agentgym.tasks import Task

    seen = set() if seen is None else seen
    if isinstance(value, Task):
        return ""
    if depth == 0 or id(value) in seen or isinstance(value, (str, bytes, int, float, bool, type(None))):
        return None
    seen.add(id(value))
    children: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        children = [(f"[{key!r}]", item) for key, item in list(value.items())[:200]]
    elif isinstance(value, (list, tuple, set, frozenset)):
        children = [(f"[{index}]", item) for index, item in enumerate(list(value)[:200])]
    else:
        fields = getattr(value, "__dict__", None)
        if isinstance(fields, dict):
            children = [(f".{key}", item) for key, item in fields.items()]
        for key in getattr(type(value), "__slots__", ()):
            if isinstance(key, str) and hasattr(value, key):
                children.append((f".{key}", getattr(value, key)))
    for label, child in children:
        found = _holds_task(child, depth - 1, seen)
        if found is not None:
            return label + found
    return None


def check_domain_contracts(env: gym.Env[Any, Any], samples: int, seed: int) -> str:
    """The contracts docs/new-env.md states for every domain: each task's verifier is registered once the env is
    made (not only when some module happens to be imported at grading time); the episode state the tools and
    hints receive holds no `Task` (so no tool can read the gold); a failed call is flagged in
    `info["call_error"]`, whatever its text; and the same task resets to the same prompt."""
    from agentgym.env import ToolEnv
    from agentgym.rewards import available_verifiers

    inner = env.unwrapped
    tasks = _sample_tasks(env, samples, seed)
    if getattr(type(inner), "verify", None) is ToolEnv.verify:  # the env grades through the task's named verifier
        missing = sorted({task.verifier.name for task in inner.task_set} - set(available_verifiers()))  # type: ignore[attr-defined]
        if missing:
            raise AssertionError(f"tasks name verifiers that are not registered when the env is made: {missing}; "
                                 "import the module that defines them in the env's module")
    for task in tasks:
        prompt, _ = env.reset(options={"task_id": task.id})
        path = _holds_task(getattr(inner, "state", None))
        if path is not None:
            raise AssertionError(f"task {task.id}: the episode state holds the Task at state{path}; tools and hints "
                                 "receive the state, so keep only what the agent may see there")
        if env.reset(options={"task_id": task.id})[0] != prompt:
            raise AssertionError(f"task {task.id}: two resets gave different prompts")
        info = env.step({"name": "no_such_tool_for_check", "arguments": {}})[4]
        if "call_error" not in info:
            raise AssertionError("a call of an unknown tool is not flagged in info['call_error']")
    return (f"{len(tasks)} tasks: verifiers registered at make, no Task in the episode state, failed calls "
            "flagged, one prompt per task")


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
        ("do-nothing floor", lambda: check_floor(env, min(samples, 5) if samples > 0 else 0, seed)),
        ("no gold at reset", lambda: check_no_gold_before_end(env, samples, seed)),
        ("rewards finite and in range", lambda: check_reward_range(env, min(samples, 3) if samples > 0 else 0, seed)),
        ("domain contracts", lambda: check_domain_contracts(env, min(samples, 5) if samples > 0 else 0, seed)),
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
