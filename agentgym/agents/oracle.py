"""The oracle agent: replays a task's `solution`, one tool call per turn, retrying a call that failed for a
transient reason (a 503 or a timeout whose message says to retry the same call) as a sensible agent would."""

from __future__ import annotations

import re
from typing import Any

from agentgym.agents.base import Agent
from agentgym.tasks import Task

# Tool results that mean "nothing happened, send the same call again" (agentgym.wrappers' transient_errors and
# timeouts, and services that word it the same way).
_RETRY_SAME_CALL = re.compile(r"retry the same call", re.IGNORECASE)
# A call is sent again at most this often, so a service that never recovers still ends the episode.
MAX_RETRIES = 3


class OracleAgent(Agent):
    """Replays the task's solution. Scoring below 1.0 with it means the task (not the agent) is broken."""

    privileged = True
    name = "oracle"

    def __init__(self) -> None:
        self._calls: list[dict[str, Any]] = []
        self._position = 0
        self._retries = 0

    @classmethod
    def from_spec(cls, argument: str | None = None, **options: Any) -> OracleAgent:
        return cls()

    def reset(self, task: Task | None = None, *, seed: int | None = None) -> None:
        if task is None:
            raise ValueError("the oracle needs the task: pass it to reset(task)")
        self._calls = list(task.solution)
        self._position = 0
        self._retries = 0

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        if 0 < self._position and self._retries < MAX_RETRIES and _asks_for_retry(messages):
            self._retries += 1
            call = self._calls[self._position - 1]
            return {"name": call["name"], "arguments": call.get("arguments", {})}
        self._retries = 0
        if self._position >= len(self._calls):
            return {"name": "submit", "arguments": {}}
        call = self._calls[self._position]
        self._position += 1
        return {"name": call["name"], "arguments": call.get("arguments", {})}


def _asks_for_retry(messages: list[dict[str, Any]]) -> bool:
    """Whether the last message is a tool result saying the call failed transiently."""
    if not messages:
        return False
    last = messages[-1]
    return last.get("role") in ("tool", "user") and bool(_RETRY_SAME_CALL.search(str(last.get("content") or "")))
