"""Gold answers and solutions for the viewer, looked up in the env's task set when an episode is shown.

A trajectory never carries the gold (the rollout runs inside the agent's trust boundary, where it must not be).
The viewer runs on the user's machine after the run, outside that boundary, so it may read the task set: it
makes the env with the run's own arguments (from `run.json`), finds the task by env id and task id, and shows
its answer and solution. When the env cannot be made here (its plugin is not installed) or holds no such task,
the page says "gold not available" with the reason; nothing is guessed.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from agentgym.viewer.runs import Run, gold_of

# Arguments that choose how an episode runs, not which tasks exist; dropped so the lookup sees every task.
_NOT_TASK_ARGUMENTS = ("split", "families", "max_turns", "perturb", "perturb_seed", "perturb_rate", "remote",
                       "remote_token", "backend", "pool_size")


def _task_arguments(run: Run) -> dict[str, Any]:
    """The `gym.make` arguments of `run` that decide its task set (its env args and task file)."""
    arguments = run.settings.get("env_args")
    chosen = {key: value for key, value in (arguments.items() if isinstance(arguments, Mapping) else ())
              if key not in _NOT_TASK_ARGUMENTS}
    if isinstance(run.settings.get("tasks"), str):
        chosen["tasks"] = run.settings["tasks"]
    return chosen


class GoldLookup:
    """Finds the gold of an episode's task; each env's task set is made once (thread-safe)."""

    def __init__(self) -> None:
        self._task_sets: dict[str, Any] = {}  # key -> TaskSet, or the reason (str) it could not be had
        self._lock = threading.Lock()

    def _task_set(self, env_id: str, arguments: dict[str, Any]) -> Any:
        key = env_id + json.dumps(arguments, sort_keys=True, default=str)
        with self._lock:
            if key not in self._task_sets:
                self._task_sets[key] = _make_task_set(env_id, arguments)
            return self._task_sets[key]

    def gold(self, run: Run, record: Mapping[str, Any]) -> dict[str, Any]:
        """`{"fields": {"answer": ..., "solution": [...]}, "source": where they came from}` for the episode
        `record` of `run`, or `{"fields": {}, "missing": why}` when no gold can be found."""
        env_id, task_id = record.get("env_id"), record.get("task_id")
        reason = "the record names no env and task"
        if isinstance(env_id, str) and env_id and isinstance(task_id, str) and task_id:
            found = self._task_set(env_id, _task_arguments(run))
            if isinstance(found, str):
                reason = found
            else:
                try:
                    task = found.get(task_id)
                except KeyError:
                    reason = f"{env_id}'s task set here ({len(found)} tasks) has no task {task_id!r}"
                else:
                    return {"fields": {"answer": task.answer, "solution": task.solution},
                            "source": f"{env_id}'s task set on this machine"}
        held = gold_of(record)
        if held:
            return {"fields": held, "source": "the run file"}
        return {"fields": {}, "missing": reason}


def _make_task_set(env_id: str, arguments: dict[str, Any]) -> Any:
    """The full task set of `env_id` made with `arguments`, or a one-line reason it cannot be made here."""
    import gymnasium as gym

    import agentgym  # noqa: F401  (registers every installed plugin's envs)
    from agentgym.registry import env_record

    try:
        env_record(env_id)
    except KeyError:
        return f"{env_id} is not installed here (install the plugin that provides it to see its gold)"
    try:
        env = gym.make(env_id, **arguments)
    except Exception as error:  # noqa: BLE001 - any failure of a plugin's constructor means no gold, said so
        return f"{env_id} could not be made here ({type(error).__name__}: {error})"
    try:
        return env.unwrapped.task_set  # type: ignore[attr-defined]
    except AttributeError:
        return f"{env_id} has no task set to look the task up in"
    finally:
        env.close()
