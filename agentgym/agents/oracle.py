"""The oracle agent: replays a task's `solution`, one tool call per turn."""

from __future__ import annotations

from typing import Any

from agentgym.agents.base import Agent
from agentgym.tasks import Task


class OracleAgent(Agent):
    """Replays the task's solution. Scoring below 1.0 with it means the task (not the agent) is broken."""

    privileged = True
    name = "oracle"

    def __init__(self) -> None:
        self._calls: list[dict[str, Any]] = []
        self._position = 0

    @classmethod
    def from_spec(cls, argument: str | None = None, **options: Any) -> OracleAgent:
        return cls()

    def reset(self, task: Task | None = None, *, seed: int | None = None) -> None:
        if task is None:
            raise ValueError("the oracle needs the task: pass it to reset(task)")
        self._calls = list(task.solution)
        self._position = 0

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        if self._position >= len(self._calls):
            return {"name": "submit", "arguments": {}}
        call = self._calls[self._position]
        self._position += 1
        return {"name": call["name"], "arguments": call.get("arguments", {})}
