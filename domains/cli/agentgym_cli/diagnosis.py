"""CLI-v0's own diagnosis labels (docs/diagnosis.md, "CLI-v0"), from what the shell showed and what the
verifier checked.

- The shell labels read the text of `run_shell` results (bash's own messages and the "[exit code N]" and
  "[timed out ...]" notes `run_shell` adds) and of `read_file`/`write_file`/`list_dir` errors;
- the grading labels read the verifier's components (`state`, `tests`, `answer`) of an episode not solved.

Labels are names only: no path, file content or expected output ever enters them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from agentgym import Score, Task
from agentgym.diagnosis import TurnRecord, episode_calls, in_order

COMMAND_NOT_FOUND = "command_not_found"  # bash could not find a command (exit code 127)
PERMISSION_DENIED = "permission_denied"  # a command or file tool was refused by file permissions (exit code 126)
COMMAND_TIMED_OUT = "command_timed_out"  # a command, or a hidden test, ran past its time limit and was killed
STATE_DIFFERS = "state_differs"          # the final files are not the expected ones
TESTS_FAILED = "tests_failed"            # some hidden test, run after the episode, failed
OUTPUT_DIFFERS = "output_differs"        # the answer (a command's output, or a list of lines) is not the expected one

LABELS = (COMMAND_NOT_FOUND, PERMISSION_DENIED, COMMAND_TIMED_OUT, STATE_DIFFERS, TESTS_FAILED, OUTPUT_DIFFERS)

# bash's messages are read in the stderr part only (a command's output may quote them); the notes anywhere.
_STDERR_PATTERNS = ((COMMAND_NOT_FOUND, re.compile(r"command not found")),
                    (PERMISSION_DENIED, re.compile(r"permission denied", re.IGNORECASE)))
_NOTE_PATTERNS = ((COMMAND_NOT_FOUND, re.compile(r"^\[exit code 127\]$", re.MULTILINE)),
                  (PERMISSION_DENIED, re.compile(r"^\[exit code 126\]$", re.MULTILINE)),
                  (COMMAND_TIMED_OUT, re.compile(r"^\[timed out after [\d.]+ s", re.MULTILINE)))
_STDERR_MARK = "[stderr]\n"
_FILE_TOOLS = ("read_file", "write_file", "list_dir")


def shell_labels(text: str) -> list[str]:
    """The labels one `run_shell` result shows, each once."""
    start = 0 if text.startswith(_STDERR_MARK) else text.find("\n" + _STDERR_MARK)
    stderr = text[start:] if start >= 0 else ""
    found = [label for label, pattern in _STDERR_PATTERNS if stderr and pattern.search(stderr)]
    found += [label for label, pattern in _NOTE_PATTERNS if label not in found and pattern.search(text)]
    return found


def cli_labels(task: Task, state: Any, turns: Sequence[TurnRecord], score: Score) -> list[str]:
    """CLI-v0's domain labels for a finished episode, in the order of `LABELS`."""
    found: set[str] = set()
    for call in episode_calls(turns):
        if call.name == "run_shell" and call.error_kind is None:
            found.update(shell_labels(call.text))
        elif call.name in _FILE_TOOLS and call.error_kind == "tool_error" and "permission denied" in call.text.lower():
            found.add(PERMISSION_DENIED)
    if score.value < 1.0:
        components = score.components
        if components.get("state", 1.0) < 1.0:
            found.add(STATE_DIFFERS)
        if components.get("tests", 1.0) < 1.0:
            found.add(TESTS_FAILED)
        if components.get("tests_timed_out", 0.0) > 0:
            found.add(COMMAND_TIMED_OUT)  # the agent's program ran past its limit inside a hidden test
        if task.verifier.params.get("answer_kind") in ("output", "lines") and components.get("answer", 1.0) < 1.0:
            found.add(OUTPUT_DIFFERS)
    return in_order(found, LABELS)
