"""agentgym: Gymnasium-compatible, verifiable tool-use environments for training LLM agents with RL.

`import agentgym` registers every installed plugin's environments (entry-point group `agentgym.envs`) and
nothing more: registration names entry points, so the heavy imports of each env happen at `gym.make`, and the
public classes below are imported on first use. `import agentgym` costs about what `import gymnasium` does.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agentgym.registry import load_plugins, plugin_failures, register, registered

if TYPE_CHECKING:
    from agentgym.env import ToolEnv
    from agentgym.errors import InfrastructureError
    from agentgym.rewards import Score, verifier
    from agentgym.tasks import Task, TaskSet, VerifierSpec, load_tasks, save_tasks
    from agentgym.tools import Tool, ToolError, ToolOutcome, tool

__version__ = "0.1.0"

# Public name -> the module that defines it, imported when the name is first read (PEP 562).
_LAZY = {
    "ToolEnv": "agentgym.env",
    "InfrastructureError": "agentgym.errors",
    "Score": "agentgym.rewards", "verifier": "agentgym.rewards",
    "Task": "agentgym.tasks", "TaskSet": "agentgym.tasks", "VerifierSpec": "agentgym.tasks",
    "load_tasks": "agentgym.tasks", "save_tasks": "agentgym.tasks",
    "Tool": "agentgym.tools", "ToolError": "agentgym.tools", "ToolOutcome": "agentgym.tools", "tool": "agentgym.tools",
}

__all__ = [
    "InfrastructureError", "Score", "Task", "TaskSet", "Tool", "ToolEnv", "ToolError", "ToolOutcome", "VerifierSpec",
    "load_plugins", "load_tasks", "plugin_failures", "register", "registered", "save_tasks", "tool", "verifier",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentgym' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


load_plugins()
