"""A small agentgym ToolEnv for the baselines' tests: copy a word, look things up, leave notes.

Registered as `BaselinesToy-v0` by `register()`. Random text never submits, so tests that need different
rewards in a group force one completion per group to be a real tool call.
"""

from __future__ import annotations

from typing import Any, Literal

import pydantic

import agentgym
from agentgym import Task, ToolEnv, tool

ENV_ID = "BaselinesToy-v0"
WORDS = ["apple", "river", "stone", "cloud", "tiger", "lemon", "piano", "maple"]


class Note(pydantic.BaseModel):
    """A note to keep."""

    subject: str = pydantic.Field(description="What the note is about.")
    priority: int = pydantic.Field(1, description="1 (low) to 3 (high).")


@tool
def lookup(key: str, mode: Literal["exact", "prefix"] = "exact") -> str:
    """Look up the value stored under a key.

    Args:
        key: The key to look up.
        mode: How to match the key.
    """
    if key not in WORDS:
        raise agentgym.ToolError(f"no key {key!r}; keys are: {', '.join(WORDS)}")
    return f"{key} -> {key.upper()}"


@tool
def note(state: Any, entry: Note, tags: list[str] | None = None) -> str:
    """Keep a note for later.

    Args:
        entry: The note.
        tags: Labels for the note.
    """
    return f"noted {entry.subject} (priority {entry.priority}, tags {tags or []})"


def tasks() -> list[Task]:
    return [
        Task(id=f"copy-{word}-{split}", domain="toy", family="copy", split=split,
             prompt=f"Submit the word {word}.", answer=word, difficulty="easy")
        for split in ("train", "test") for word in WORDS
    ]


def make_env(**kwargs: Any) -> ToolEnv:
    kwargs.setdefault("max_turns", 4)
    return ToolEnv(tasks(), [lookup, note], **kwargs)


def register() -> None:
    agentgym.register(id=ENV_ID, entry_point="toy_env:make_env")
