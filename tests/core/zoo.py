"""A small tool-only env used by the core tests (the DESIGN.md plugin example, grown a little)."""

from __future__ import annotations

from typing import Any

from agentgym import Task, ToolEnv, ToolError, tool

ANIMALS = {"lion": 3, "zebra": 7, "giraffe": 2}


@tool
def count_animals(kind: str) -> int:
    """Count the animals of one kind in the zoo.

    Args:
        kind: The animal kind, for example "lion".
    """
    if kind not in ANIMALS:
        raise ToolError(f"no animal kind {kind!r}; kinds: {', '.join(ANIMALS)}")
    return ANIMALS[kind]


@tool(writes=True)
def feed(state: dict[str, Any], kind: str, kilograms: float = 1.0) -> str:
    """Feed one kind of animal.

    Args:
        kind: The animal kind.
        kilograms: How much food, in kilograms.
    """
    state.setdefault("fed", []).append((kind, kilograms))
    return f"fed {kilograms} kg to the {kind}s"


@tool
def explode() -> str:
    """A tool with a bug."""
    raise RuntimeError("boom")


@tool
def big_output(size: int) -> str:
    """Return `size` characters.

    Args:
        size: How many characters.
    """
    return "x" * size


def zoo_tasks(count: int = 6) -> list[Task]:
    tasks = []
    kinds = list(ANIMALS)
    for index in range(count):
        kind = kinds[index % len(kinds)]
        tasks.append(Task(
            id=f"zoo-{index}", domain="zoo", family="count" if index % 2 == 0 else "count-twice",
            split="train" if index < count - 2 else "test",
            prompt=f"How many {kind}s are in the zoo?", answer=ANIMALS[kind],
            verifier={"name": "exact"}, difficulty="simple",
            solution=[{"name": "count_animals", "arguments": {"kind": kind}},
                      {"name": "submit", "arguments": {"answer": ANIMALS[kind]}}],
        ))
    return tasks


class ZooEnv(ToolEnv):
    """Keeps per-episode state and records begin/end calls so tests can see the lifecycle."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("tasks", zoo_tasks())
        super().__init__(tools=[count_animals, feed, explode, big_output], **kwargs)
        self.lifecycle: list[str] = []

    def begin_episode(self, task: Task) -> dict[str, Any]:
        self.lifecycle.append(f"begin {task.id}")
        return {"task": task.id}

    def end_episode(self, state: dict[str, Any]) -> None:
        self.lifecycle.append(f"end {state['task']}")
