"""agentgym: Gymnasium-compatible, verifiable tool-use environments for training LLM agents with RL.

`import agentgym` registers every installed plugin's environments (entry-point group `agentgym.envs`); the
heavy imports of each env happen at `gym.make`.
"""

from agentgym.env import ToolEnv
from agentgym.errors import InfrastructureError
from agentgym.registry import load_plugins, plugin_failures, register, registered
from agentgym.rewards import Score, verifier
from agentgym.tasks import Task, TaskSet, VerifierSpec, load_tasks, save_tasks
from agentgym.tools import Tool, ToolError, ToolOutcome, tool

__version__ = "0.1.0"

__all__ = [
    "InfrastructureError", "Score", "Task", "TaskSet", "Tool", "ToolEnv", "ToolError", "ToolOutcome", "VerifierSpec",
    "load_plugins", "load_tasks", "plugin_failures", "register", "registered", "save_tasks", "tool", "verifier",
]

load_plugins()
