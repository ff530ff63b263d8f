"""Agents: what produces actions. `make_agent("oracle" | "random" | "openai:MODEL" | "hf:PATH")`."""

from agentgym.agents.base import Agent, agent_is_privileged, make_agent, register_agent
from agentgym.agents.oracle import OracleAgent
from agentgym.agents.random import RandomAgent

__all__ = ["Agent", "OracleAgent", "RandomAgent", "agent_is_privileged", "make_agent", "register_agent"]
