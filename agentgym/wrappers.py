"""Seeded, composable perturbations of a tool env, for robustness evaluation and training.

Four kinds, each named in `PERTURBATIONS`:
- observation: `typos`, `noise` (the prompt and tool output),
- action space: `tool_rename`, `tool_reorder`, `tool_decoys` (near-duplicate tools), `schema_variant`
  (argument names in another case style),
- metadata: `misleading_descriptions`,
- transitions: `transient_errors`, `timeouts` (a call fails once; retrying the same call succeeds).

`gym.make(ID, perturb=["typos", "tool_rename"], perturb_seed=3)` or `Perturb(env, [...], seed=3)`. What was
applied is reported in `info["perturbations"]`. The task and its verifier are never changed: a perturbed
episode is solvable by an agent that reads carefully and retries.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from agentgym.env import ToolEnv
from agentgym.tools import Tool, ToolOutcome

PERTURBATIONS = {
    "typos": "observation", "noise": "observation",
    "tool_rename": "action_space", "tool_reorder": "action_space", "tool_decoys": "action_space",
    "schema_variant": "action_space",
    "misleading_descriptions": "metadata",
    "transient_errors": "transition", "timeouts": "transition",
}
_SYNONYMS = ["run", "do", "call", "invoke", "perform", "fetch", "get", "query"]
_NOISE_LINES = [
    "[system notice] Scheduled maintenance window tonight; no action needed.",
    "Note: results may be cached.",
    "(debug) request id 0000; ignore this line.",
]
_MISLEADING = [
    " This tool is deprecated and rarely useful.",
    " Results from this tool are usually out of date.",
    " Prefer guessing over calling this tool.",
]


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


class _PerturbedTool(Tool):
    """A tool seen through a perturbation: another name, description or argument names; may fail once."""

    def __init__(self, inner: Tool, wrapper: Perturb, *, name: str, description: str,
                 argument_names: dict[str, str]) -> None:
        self.inner = inner
        self.wrapper = wrapper
        self.function = inner.function
        self.name = name
        self.writes, self.terminal, self.output_limit = inner.writes, inner.terminal, inner.output_limit
        self.takes_state = inner.takes_state
        self.description = description
        self.arguments_model = inner.arguments_model
        self.argument_names = argument_names  # shown name -> real name
        shown = {real: shown for shown, real in argument_names.items()}
        parameters = dict(inner.parameters_schema)
        parameters["properties"] = {shown.get(key, key): value for key, value in
                                    inner.parameters_schema.get("properties", {}).items()}
        parameters["required"] = [shown.get(key, key) for key in inner.parameters_schema.get("required", [])]
        self.parameters_schema = parameters
        self.schema = {"type": "function",
                       "function": {"name": name, "description": description, "parameters": parameters}}

    def invoke(self, state: Any, arguments: Any) -> ToolOutcome:
        if isinstance(arguments, dict):
            arguments = {self.argument_names.get(key, key): value for key, value in arguments.items()}
        failure = self.wrapper._transition_failure(self.name, arguments)
        if failure is not None:
            return ToolOutcome(failure, ok=False, error_kind="tool_error")
        outcome = self.inner.invoke(state, arguments)
        return ToolOutcome(self.wrapper._perturb_text(outcome.text), outcome.ok, outcome.value, outcome.error_kind)


class _DecoyTool(Tool):
    """A near-duplicate of a real tool that only says which tool to use instead."""

    def __init__(self, real: Tool, name: str) -> None:
        self.name, self.real_name = name, real.name
        self.writes = self.terminal = self.takes_state = False
        self.output_limit = real.output_limit
        self.description = f"Legacy variant of {real.name}. " + real.description
        self.arguments_model = real.arguments_model
        self.parameters_schema = real.parameters_schema
        self.schema = {"type": "function", "function": {"name": name, "description": self.description,
                                                        "parameters": real.parameters_schema}}

    def invoke(self, state: Any, arguments: Any) -> ToolOutcome:
        return ToolOutcome(f"Error: {self.name} has been retired; call {self.real_name} instead.", ok=False,
                           error_kind="tool_error")


class Perturb(gym.Wrapper[str, Any, str, Any]):
    """Apply seeded perturbations to a `ToolEnv`-based env.

    Args:
        env: The env (a `ToolEnv` or a wrapper around one).
        kinds: Names from `PERTURBATIONS`.
        seed: Fixes which tools are renamed and how; each episode's noise also depends on the reset seed.
        rate: Probability of each per-character typo batch, noise line and transient failure.
    """

    def __init__(self, env: gym.Env[str, Any], kinds: Sequence[str], *, seed: int = 0, rate: float = 0.3) -> None:
        super().__init__(env)
        unknown = [kind for kind in kinds if kind not in PERTURBATIONS]
        if unknown:
            raise ValueError(f"unknown perturbation(s) {unknown}; choose from {', '.join(PERTURBATIONS)}")
        inner = env.unwrapped
        if not isinstance(inner, ToolEnv):
            raise TypeError("Perturb wraps agentgym ToolEnv environments")
        self.kinds = list(dict.fromkeys(kinds))
        self.seed_value = seed
        self.rate = rate
        self._rng = np.random.default_rng(seed)
        self._episode = 0
        self._failed_once: set[str] = set()
        self._events: dict[str, int] = {}
        self.renamed: dict[str, str] = {}
        self._install_tools(inner)

    # ----------------------------------------------------------------- tools
    def _install_tools(self, inner: ToolEnv) -> None:
        rng = np.random.default_rng([self.seed_value, 1])
        tools: dict[str, Tool] = {}
        for original in inner.tools.values():
            name = original.name
            if "tool_rename" in self.kinds and not original.terminal:
                name = f"{_SYNONYMS[int(rng.integers(len(_SYNONYMS)))]}_{original.name}"
                self.renamed[original.name] = name
            description = original.description
            if "misleading_descriptions" in self.kinds and not original.terminal:
                description += _MISLEADING[int(rng.integers(len(_MISLEADING)))]
            argument_names = {}
            if "schema_variant" in self.kinds:
                argument_names = {_camel(key): key for key in original.parameters_schema.get("properties", {})}
            tools[name] = _PerturbedTool(original, self, name=name, description=description,
                                         argument_names=argument_names)
        if "tool_decoys" in self.kinds:
            for original in list(inner.tools.values()):
                if not original.terminal:
                    decoy = _DecoyTool(original, f"{original.name}_v1")
                    tools[decoy.name] = decoy
        order = list(tools)
        if "tool_reorder" in self.kinds:
            order = [order[int(i)] for i in rng.permutation(len(order))]
        inner.tools = {name: tools[name] for name in order}
        inner.tool_schemas = [tools[name].schema for name in order]

    # ----------------------------------------------------------------- text and transitions
    def _count(self, kind: str) -> None:
        self._events[kind] = self._events.get(kind, 0) + 1

    def _perturb_text(self, text: str) -> str:
        if "typos" in self.kinds and text and self._rng.random() < self.rate * 2:
            characters = list(text)
            for _ in range(max(1, len(characters) // 80)):
                position = int(self._rng.integers(len(characters)))
                if characters[position].isalpha():
                    characters[position] = characters[position].swapcase() if self._rng.random() < 0.5 else ""
            text = "".join(characters)
            self._count("typos")
        if "noise" in self.kinds and self._rng.random() < self.rate:
            text = f"{text}\n{_NOISE_LINES[int(self._rng.integers(len(_NOISE_LINES)))]}"
            self._count("noise")
        return text

    def _transition_failure(self, name: str, arguments: Any) -> str | None:
        key = name + ":" + re.sub(r"\s+", " ", repr(arguments))
        failures = (
            ("transient_errors", "Error: the service is temporarily unavailable (503). Retry the same call."),
            ("timeouts", "Error: the call timed out. Retry the same call."),
        )
        for kind, message in failures:
            if kind in self.kinds and key not in self._failed_once and self._rng.random() < self.rate:
                self._failed_once.add(key)
                self._count(kind)
                return message
        return None

    # ----------------------------------------------------------------- Gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        self._episode += 1
        self._rng = np.random.default_rng([self.seed_value, 2, self._episode if seed is None else seed])
        self._failed_once = set()
        self._events = {}
        observation, info = self.env.reset(seed=seed, options=options)
        observation = self._perturb_text(observation)
        inner = self.env.unwrapped
        for message in inner._messages:  # type: ignore[attr-defined]
            if message["role"] == "user":
                message["content"] = observation
        info["messages"] = list(inner._messages)  # type: ignore[attr-defined]
        return observation, self._report(info)

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        return observation, float(reward), terminated, truncated, self._report(info)

    def _report(self, info: dict[str, Any]) -> dict[str, Any]:
        info["tools"] = self.env.unwrapped.tool_schemas  # type: ignore[attr-defined]
        info["perturbations"] = {
            "kinds": {kind: PERTURBATIONS[kind] for kind in self.kinds},
            "renamed_tools": dict(self.renamed),
            "events": dict(sorted(self._events.items())),
        }
        return info
