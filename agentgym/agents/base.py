"""The `Agent` interface and the factory that builds agents from a spec string."""

from __future__ import annotations

from typing import Any

from agentgym.registry import resolve_callable
from agentgym.tasks import Task

# spec prefix -> "module:factory"; factory(argument_after_colon_or_None, **options) -> Agent
_AGENTS: dict[str, str] = {
    "oracle": "agentgym.agents.oracle:OracleAgent.from_spec",
    "random": "agentgym.agents.random:RandomAgent.from_spec",
    "openai": "agentgym.agents.openai:OpenAIAgent.from_spec",
    "hf": "agentgym.agents.hf:HFAgent.from_spec",
}


class Agent:
    """Produces one action per turn from the conversation so far.

    `privileged` agents (only the oracle) are handed the task, answer and solution included, at `reset`;
    the harness never gives a model agent the task object.
    """

    privileged = False
    name = "agent"

    def reset(self, task: Task | None = None, *, seed: int | None = None) -> None:
        """Start a new episode. `task` is passed only to privileged agents."""

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        """Return the next action: text, a tool call dict, or a list of them."""
        raise NotImplementedError

    def close(self) -> None:
        """Release clients and models."""


def register_agent(prefix: str, factory: str) -> None:
    """Make `make_agent("PREFIX:ARG")` build an agent with the factory at "module:callable"."""
    _AGENTS[prefix] = factory


def _unknown_agent(spec: str) -> str:
    import difflib

    close = difflib.get_close_matches(spec.partition(":")[0], sorted(_AGENTS), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (f"unknown agent {spec!r}{hint}; use one of: {', '.join(sorted(_AGENTS))} "
            "(e.g. 'oracle', 'random', 'openai:MODEL', 'hf:PATH')")


def agent_is_privileged(spec: str) -> bool:
    """Whether the agent `spec` names is a privileged one (the oracle), found without building it.

    Raises ValueError for an unknown agent, like `make_agent`.
    """
    prefix = spec.partition(":")[0]
    if prefix not in _AGENTS:
        raise ValueError(_unknown_agent(spec))
    factory = resolve_callable(_AGENTS[prefix])
    owner = getattr(factory, "__self__", factory)  # a classmethod factory's class, or the class itself
    return bool(getattr(owner, "privileged", False))


def make_agent(spec: str, **options: Any) -> Agent:
    """Build an agent from a spec such as "oracle", "random", "openai:gpt-4o-mini" or "hf:./checkpoint"."""
    prefix, _, argument = spec.partition(":")
    if prefix not in _AGENTS:
        raise ValueError(_unknown_agent(spec))
    factory = resolve_callable(_AGENTS[prefix])
    agent: Agent = factory(argument or None, **options)
    return agent
