"""CLI-v0 hints (feedback="hints" | "adaptive"): the closest installed command, and where the grader looks.

"command not found" gets the closest command installed in the sandbox: the executables on the sandbox's
standard PATH, which the agent can list itself (`ls /usr/bin`). "Permission denied" and "Read-only file system"
get a reminder that only the workspace is graded. Nothing comes from the task, its expected state or its
tests. See docs/feedback.md.
"""

from __future__ import annotations

import json
import re
import threading
import weakref

from agentgym.actions import ToolCall
from agentgym.feedback import AgentView, Hint, closest
from agentgym.sandbox import SandboxError
from agentgym.tools import ToolOutcome
from agentgym_cli.workspace import Workspace

_NOT_FOUND = re.compile(r"(?m)(?:^|: )([A-Za-z0-9_.+-]+): (?:command not found|not found)$")
_DENIED = re.compile(r"Permission denied|Read-only file system|Operation not permitted")
SEARCH_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
BUILTINS = ("alias", "cd", "echo", "export", "printf", "read", "set", "source", "test", "type", "unset", "wait")
# Lists the executables on the standard PATH, inside the sandbox, without binding a name in its namespace.
_LIST_COMMANDS = (
    "print(__import__('json').dumps(sorted({name for folder in " + repr(SEARCH_PATH) + " "
    "if __import__('os').path.isdir(folder) for name in __import__('os').listdir(folder) "
    "if __import__('os').access(__import__('os').path.join(folder, name), __import__('os').X_OK)})))"
)

_commands_lock = threading.Lock()
# Workspace -> its installed commands. Kept per episode, never shared: the listing runs in the agent's own
# interpreter, which the agent may have tampered with, so what it returns may only ever reach that agent.
_commands: weakref.WeakKeyDictionary[Workspace, tuple[str, ...]] = weakref.WeakKeyDictionary()


def installed_commands(workspace: Workspace) -> tuple[str, ...]:
    """The executables on the sandbox's standard PATH plus the common shell builtins (read once per episode)."""
    with _commands_lock:
        known = _commands.get(workspace)
    if known is None:
        try:
            result = workspace.sandbox.run_python(_LIST_COMMANDS, timeout=20)
            listed = json.loads(result.stdout) if result.ok else []
        except (SandboxError, ValueError):
            listed = []
        names = [name for name in listed if isinstance(name, str)] if isinstance(listed, list) else []
        known = tuple(dict.fromkeys([*BUILTINS, *names]))
        if names:  # a failed listing is tried again on the next miss
            with _commands_lock:
                _commands[workspace] = known
    return known


def hints(call: ToolCall, outcome: ToolOutcome, view: AgentView) -> list[Hint]:
    """Hints for run_shell output that says a command is missing or a write was refused, and for refused file
    tools."""
    state = view.state
    if call.name not in ("run_shell", "read_file", "write_file", "list_dir") or not isinstance(state, Workspace):
        return []
    text = outcome.text
    found: list[Hint] = []
    if call.name == "run_shell":
        missing = _NOT_FOUND.findall(text[-4000:])
        for name in dict.fromkeys(missing):
            match = closest(name, installed_commands(state))
            if match is not None and match != name:
                found.append(Hint("closest_command", f"'{name}' is not installed; the closest installed command "
                                  f"is '{match}'.", "List what is installed with `ls /usr/bin /bin`."))
            else:
                found.append(Hint("closest_command", f"'{name}' is not installed here.",
                                  "List what is installed with `ls /usr/bin /bin`, or write the step in bash, "
                                  "awk, sed or python3 if they are there."))
    if _DENIED.search(text[-4000:]) or (not outcome.ok and "permission denied" in text):
        found.append(Hint("work_dir", "Only the workspace (your starting directory) is graded: keep your "
                          "changes and outputs inside it.", "Files outside it are not checked, and you need "
                          "no root; for a workspace file, check its mode with `ls -l` and change it "
                          "with chmod."))
    return found
