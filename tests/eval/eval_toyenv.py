"""A small tool env for the evaluation tests and benchmark (the DESIGN.md Zoo example, grown to two families
and three difficulties). Importable by worker processes and Ray actors as `eval_toyenv`."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import agentgym
from agentgym import Task, ToolEnv, ToolError, tool

ANIMALS = {"lion": 3, "zebra": 7, "giraffe": 2, "okapi": 5}
# The answer of the "code" task: no prompt or tool output contains it, so only the oracle (handed the task) can
# submit it, and a model agent's requests must never contain it.
SECRET_ANSWER = "mauve-okapi-4417"


@tool
def count_animals(kind: str) -> int:
    """Count the animals of one kind in the zoo.

    Args:
        kind: The animal kind, for example "lion".
    """
    if kind not in ANIMALS:
        raise ToolError(f"no animal kind {kind!r}; kinds: {', '.join(ANIMALS)}")
    return ANIMALS[kind]


@tool
def keeper_code(kind: str) -> str:
    """The keeper's code for one animal kind.

    Args:
        kind: The animal kind.
    """
    return f"code-{kind}"


def toy_tasks(count: int = 12) -> list[Task]:
    """`count` tasks: counting tasks (1 or 2 lookups) and, last, the secret-code task."""
    tasks = []
    kinds = list(ANIMALS)
    for index in range(count):
        kind = kinds[index % len(kinds)]
        if index == count - 1:
            tasks.append(Task(id=f"toy-{index}", domain="zoo", family="code", prompt="What is the okapi keeper's "
                              "code?", answer=SECRET_ANSWER, difficulty="hard",
                              solution=[{"name": "keeper_code", "arguments": {"kind": "okapi"}},
                                        {"name": "submit", "arguments": {"answer": SECRET_ANSWER}}]))
            continue
        lookups = 1 + index % 2
        tasks.append(Task(
            id=f"toy-{index}", domain="zoo", family="count", prompt=f"How many {kind}s are in the zoo?",
            answer=ANIMALS[kind], difficulty="easy" if lookups == 1 else "medium",
            solution=[{"name": "count_animals", "arguments": {"kind": kind}}] * lookups
            + [{"name": "submit", "arguments": {"answer": ANIMALS[kind]}}],
        ))
    return tasks


class ToyEnv(ToolEnv):
    """The toy env. `crash_marker`: the first episode on task toy-0 kills its worker process (once: the marker
    file records it), to test that a dead worker is replaced. `step_delay`: seconds each step sleeps."""

    def __init__(self, crash_marker: str | None = None, step_delay: float = 0.0, count: int = 12,
                 **kwargs: Any) -> None:
        kwargs.setdefault("tasks", toy_tasks(count))
        kwargs.setdefault("max_turns", 6)
        super().__init__(tools=[count_animals, keeper_code], **kwargs)
        self.crash_marker = crash_marker
        self.step_delay = step_delay

    def begin_episode(self, task: Task) -> Any:
        if self.crash_marker and task.id == "toy-0" and not Path(self.crash_marker).exists():
            Path(self.crash_marker).write_text("crashed once")
            os._exit(3)
        return None

    def step(self, action: Any) -> Any:
        if self.step_delay:
            time.sleep(self.step_delay)
        return super().step(action)


def make_env(**kwargs: Any) -> ToyEnv:
    return ToyEnv(**kwargs)


def register() -> None:
    agentgym.register(id="EvalToy-v0", entry_point="eval_toyenv:make_env", description="evaluation test env")
    agentgym.register(id="EvalToySmall-v0", entry_point="eval_toyenv:make_env", kwargs={"count": 4},
                      description="a smaller evaluation test env")


register()
