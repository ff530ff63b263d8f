"""What the agent may call in CLI-v0: a persistent shell, file reading and writing, folder listing, and submit.

Every tool receives the episode's `Workspace`. Paths given to `read_file`, `write_file` and `list_dir` are
relative to the workspace root (the shell's starting directory); they may not leave it.
"""

from __future__ import annotations

import json
import posixpath
import re
from typing import Any

from agentgym import ToolError, tool
from agentgym.sandbox import SandboxError
from agentgym_cli.workspace import Workspace

READ_LIMIT = 1 << 20
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean_text(text: str) -> str:
    """Make command output safe to show: mostly-binary output is summarised, stray control bytes become '?'."""
    replaced = text.count("\ufffd")
    cleaned, controls = _CONTROL.subn("?", text)
    odd = replaced + controls
    if odd > 16 and odd > len(text) // 10:
        return (f"[binary output: {len(text)} characters, {odd} of them not text, not shown; "
                "inspect it with od -c, xxd, file or wc]")
    return cleaned


def workspace_path(workspace: Workspace, path: str) -> str:
    """`path` (relative to the workspace root, or absolute inside it) as a path relative to the root.

    Raises:
        ToolError: if the path leaves the workspace, or holds a character UTF-8 cannot encode (a lone surrogate
            such as '\ud800'), which no file name on disk can hold; refused here, before the sandbox reports it
            with a position that depends on the sandbox's own path.
    """
    try:
        path.encode("utf-8")
    except UnicodeEncodeError as error:
        bad = error.object[error.start:error.end]
        raise ToolError(f"the path holds {bad!r}, which is not valid UTF-8; file names are UTF-8 text") from None
    text = path.strip()
    root = workspace.root.rstrip("/")
    if text.startswith(root + "/") or text == root:
        text = text[len(root):]
    if text.startswith("/"):
        raise ToolError(f"{path!r} is outside the workspace; give a path relative to the workspace root, "
                        "such as 'logs/app.log'")
    normalized = posixpath.normpath(text or ".")
    if normalized == ".." or normalized.startswith("../"):
        raise ToolError(f"{path!r} leaves the workspace; give a path relative to the workspace root")
    return normalized


@tool(writes=True, output_limit=16000)
def run_shell(state: Workspace, command: str) -> str:
    """Run a bash command in the workspace and show its output (stdout, then stderr, then a non-zero exit code).

    The shell persists across calls: `cd`, exported variables and shell functions carry over. Standard input is
    empty, so interactive programs (editors, pagers, prompts) cannot be used; write files with `write_file` or
    shell redirection instead. A command that runs too long is killed.

    Args:
        command: The bash command line, for example "grep -c ERROR logs/app.log".
    """
    if not command.strip():
        raise ToolError("the command is empty; give a bash command such as 'ls -la'")
    try:
        result = state.sandbox.run(command, timeout=state.command_timeout)
    except SandboxError as error:
        raise ToolError(f"the sandbox could not run the command: {error}") from None
    state.commands += 1
    state.last_output = result.stdout
    parts = []
    # Notes first: a long output is cut at the end, and the agent must still learn that the command was stopped.
    if result.timed_out:
        parts.append(f"[timed out after {state.command_timeout:g} s: the command was killed; the working "
                     "directory and exported variables were kept]")
    if result.truncated:
        parts.append("[the output was too long and was cut; pipe it through head, tail or grep]")
    if result.stdout:
        parts.append(clean_text(result.stdout))
    if result.stderr:
        parts.append("[stderr]\n" + clean_text(result.stderr))
    if result.exit_code != 0:
        parts.append(f"[exit code {result.exit_code}]")
    return "\n".join(part.rstrip("\n") for part in parts) if parts else "(no output)"


@tool
def read_file(state: Workspace, path: str) -> str:
    """Show the contents of a text file in the workspace.

    Args:
        path: Path relative to the workspace root, for example "config/app.ini".
    """
    relative = workspace_path(state, path)
    try:
        data = state.sandbox.get_file(relative, max_bytes=READ_LIMIT)  # relative: under the work dir
    except FileNotFoundError:
        raise ToolError(f"there is no file {relative!r}; call list_dir to see what exists") from None
    except SandboxError as error:
        message = str(error)
        if "IsADirectory" in message:
            raise ToolError(f"{relative!r} is a folder; call list_dir on it instead") from None
        if "larger than" in message:
            raise ToolError(f"{relative!r} is larger than {READ_LIMIT} bytes; look at part of it with "
                            "run_shell (head, tail, grep)") from None
        if "Permission" in message:
            raise ToolError(f"{relative!r} is not readable (permission denied); check its mode with "
                            "run_shell('ls -l ...')") from None
        raise ToolError(f"could not read {relative!r}: {message}") from None
    text = data.decode("utf-8", errors="replace")
    if b"\0" in data[:8192] or text.count("\ufffd") > 16:
        return f"{relative} is a binary file of {len(data)} bytes; inspect it with run_shell (od, file, wc)."
    return text if text else f"({relative} is empty)"


@tool(writes=True)
def write_file(state: Workspace, path: str, content: str) -> str:
    """Create or overwrite a text file in the workspace (missing parent folders are created).

    Args:
        path: Path relative to the workspace root, for example "bin/report.sh".
        content: The complete new content of the file.
    """
    relative = workspace_path(state, path)
    if relative == ".":
        raise ToolError("give a file path, not the workspace root")
    try:
        state.sandbox.put_files({relative: content})
    except SandboxError as error:
        raise ToolError(f"could not write {relative!r}: {error}") from None
    return f"wrote {len(content.encode())} bytes to {relative}"


# The listing helper, defined in the sandbox's Python namespace by the first list_dir of the namespace's life and
# only called after that (a namespace lost to a timeout or a reset gets it again). Its imports are its own, so
# names other code binds in the namespace cannot change it.
_LIST_DEFINITION = r'''
def _agentgym_list_dir(path):
    import json, os, stat
    try:
        rows = []
        for name in sorted(os.listdir(path)):
            full = os.path.join(path, name)
            st = os.lstat(full)
            mode = stat.filemode(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                rows.append(f"{mode}  {name} -> {os.readlink(full)}")
            elif stat.S_ISDIR(st.st_mode):
                rows.append(f"{mode}  {name}/")
            else:
                rows.append(f"{mode}  {name}  ({st.st_size} bytes)")
    except OSError as error:
        return json.dumps(type(error).__name__)
    return json.dumps(rows)
'''
_LIST_PRELUDE = ("try:\n    _agentgym_list_dir\nexcept NameError:\n"
                 f"    exec(compile({_LIST_DEFINITION!r}, '<agentgym list_dir>', 'exec'))\n")


@tool
def list_dir(state: Workspace, path: str = ".") -> str:
    """List a folder of the workspace, hidden entries included: mode, name (folders end in '/'), size or link.

    Args:
        path: Folder relative to the workspace root; "." is the root.
    """
    relative = workspace_path(state, path)
    full = posixpath.normpath(posixpath.join(state.root, relative))
    result = state.sandbox.run_python(f"{_LIST_PRELUDE}print(_agentgym_list_dir({full!r}))", timeout=30)
    if not result.ok:
        raise ToolError(f"could not list {relative!r}: {result.stderr[-300:]}")
    rows = json.loads(result.stdout)
    if rows == "FileNotFoundError":
        raise ToolError(f"there is no folder {relative!r}; list '.' to see the workspace root")
    if rows == "NotADirectoryError":
        raise ToolError(f"{relative!r} is a file; read it with read_file")
    if isinstance(rows, str):
        raise ToolError(f"could not list {relative!r}: {rows}")
    return "\n".join(rows) if rows else f"({relative} is empty)"


@tool(terminal=True)
def submit(answer: Any = None) -> Any:
    """Finish the task. Call this exactly once, when you are done.

    For a question, pass the answer: a number, a short text, or a list of paths (relative to the workspace root).
    For a task that changes files, call it with no answer after making the changes.

    Args:
        answer: The answer to the question, if the task asks one.
    """
    return answer


TOOLS = [run_shell, read_file, write_file, list_dir, submit]
