"""The random agent: seeded garbage and random tool calls, to show an env survives anything."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from agentgym.agents.base import Agent
from agentgym.tasks import Task

_WORDS = ["SELECT", "patient", "ls", "-la", "null", "∅", "🙂", "{", "}", "\"", "'", "DROP TABLE", "\\", "\x00",
          "<tool_call>", "</tool_call>", "```python", "```", "0", "-1", "1e309", "true", "\ud800"]


class RandomAgent(Agent):
    """Each turn: a random tool call with random arguments, malformed JSON, or noise text (seeded)."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self._base_seed = seed
        self._rng = np.random.default_rng(seed)

    @classmethod
    def from_spec(cls, argument: str | None = None, **options: Any) -> RandomAgent:
        return cls(seed=int(options.get("seed", argument or 0)))

    def reset(self, task: Task | None = None, *, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(self._base_seed if seed is None else seed)

    def _value(self, schema: dict[str, Any]) -> Any:
        kind = schema.get("type")
        choice = self._rng.random()
        if choice < 0.15:  # deliberately the wrong type
            return self._noise(8)
        if kind == "integer":
            return int(self._rng.integers(-5, 100))
        if kind == "number":
            return float(self._rng.normal(0, 50))
        if kind == "boolean":
            return bool(self._rng.integers(2))
        if kind == "array":
            return [self._noise(4) for _ in range(int(self._rng.integers(0, 3)))]
        if kind == "object":
            return {self._noise(3): self._noise(3)}
        return self._noise(int(self._rng.integers(1, 12)))

    def _noise(self, words: int) -> str:
        return " ".join(_WORDS[int(self._rng.integers(len(_WORDS)))] for _ in range(words))

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        roll = self._rng.random()
        if roll < 0.2 or not tools:
            return self._noise(int(self._rng.integers(1, 20)))
        if roll < 0.3:
            return '{"name": "' + self._noise(1) + '", "arguments": {' + self._noise(2)
        function = tools[int(self._rng.integers(len(tools)))]["function"]
        properties = function.get("parameters", {}).get("properties", {})
        arguments = {name: self._value(schema) for name, schema in properties.items() if self._rng.random() < 0.8}
        if roll < 0.45:
            return "<tool_call>" + json.dumps({"name": function["name"], "arguments": arguments}) + "</tool_call>"
        return {"name": function["name"], "arguments": arguments}
