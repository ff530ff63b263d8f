"""Task specs and how they become verifiable tasks: the gold solution is run on a fresh copy of the fixture.

Each family file turns a workspace into `TaskSpec`s: a prompt, the gold solution's tool calls, what to check.
`realize` replays the gold solution in a sandbox exactly as the oracle will (same tools, same fixture), then
records what it produced: the answer (the stdout of the last command, parsed for the answer kind, and checked
against the value the family computed in Python when it gave one), the changes it made to the file system, and
that every hidden test passes. A spec whose gold solution fails or disagrees is a bug and raises.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from agentgym import Task, VerifierSpec
from agentgym.answers import parse_number
from agentgym_cli.data.fixtures import Fixture
from agentgym_cli.tools import TOOLS
from agentgym_cli.verify import _lines, score_answer
from agentgym_cli.workspace import Workspace, diff

_TOOLS = {item.name: item for item in TOOLS}

# The answer contract each kind states in the prompt (the submit schema types the same, `agentgym_cli.env`).
ANSWER_HINTS = {
    "number": " Submit just the number (for example 42), with no unit or words around it.",
    "text": " Submit the answer as a short text, without quotes or a sentence around it.",
    "lines": (" Submit the paths as a JSON array of strings, for example [\"a/b.txt\", \"c d.txt\"], relative to "
              "the workspace root, in any order: every match and nothing else, [] when nothing matches (one path "
              "per line is also accepted)."),
    "none": " When you are done, call submit with no answer.",
}


class GenerationError(RuntimeError):
    """A task's gold solution failed or disagreed with the expected answer: the task is broken."""


@dataclass
class TaskSpec:
    """One task before its gold solution has run."""

    family: str
    template: str
    prompt: str
    steps: list[dict[str, Any]]
    answer_kind: str = "none"
    expected_answer: Any = None
    check_state: bool = True
    check_modes: bool = False
    ignore: list[str] = field(default_factory=list)
    tests: list[dict[str, str]] = field(default_factory=list)
    difficulty: str = "medium"
    allow_failure: bool = False  # imported gold commands may exit non-zero (InterCode keeps such tasks)
    ordered: bool = True  # an "output" answer compares in order, unless its order is the file system's
    traps: list[str] | None = None  # the measured difficulty proxy (`rate`): shortcuts this task refutes
    inputs: int = 0  # ... and how many files (records, commits) the answer depends on


def rate(traps: list[str], inputs: int) -> str:
    """A task's difficulty from its measured proxy (docs/cli.md, "Difficulty").

    `traps` are the plausible shortcuts the task refutes, each checked when the task is made: the shortcut's
    answer is computed and differs from the gold, or the hidden tests fail on the shortcut's result (a bug left
    in, a conflict resolved the other way). `inputs` is how many files, records or commits the answer depends on.
    Hard: at least three traps, or two over at least 20 inputs. Medium: one trap or at least 10 inputs. Easy:
    neither.
    """
    if len(traps) >= 3 or (len(traps) >= 2 and inputs >= 20):
        return "hard"
    if traps or inputs >= 10:
        return "medium"
    return "easy"


def shell(command: str) -> dict[str, Any]:
    """A `run_shell` call of a gold solution."""
    return {"name": "run_shell", "arguments": {"command": command}}


def write(path: str, content: str) -> dict[str, Any]:
    """A `write_file` call of a gold solution."""
    return {"name": "write_file", "arguments": {"path": path, "content": content}}


def quote_lines(items: list[str]) -> str:
    """A `printf` command that prints `items` one per line (for test scripts)."""
    return "printf '%s\\n' " + " ".join(shlex.quote(item) for item in items) if items else "printf ''"


def set_test(name: str, produced: str, expected: list[str]) -> dict[str, str]:
    """A test that the lines of the command `produced` (leading './' dropped) equal `expected` as sets."""
    script = (f"diff <({produced} | sed 's|^\\./||' | sed '/^$/d' | LC_ALL=C sort -u) "
              f"<({quote_lines(expected)} | LC_ALL=C sort -u)\n")
    return {"name": name, "script": script}


def parse_answer(kind: str, output: str) -> Any:
    """The gold answer from the gold solution's last output."""
    if kind == "number":
        number = parse_number(output.strip())
        if number is None:
            raise GenerationError(f"the gold output {output[:200]!r} holds no number")
        return int(number) if float(number).is_integer() else number
    if kind == "text":
        return output.strip()
    if kind == "lines":
        return sorted(set(_lines(output)))
    if kind == "output":
        return output
    return None


def realize(spec: TaskSpec, fixture: Fixture, workspace: Workspace, *, task_id: str, split: str,
            metadata: dict[str, Any]) -> Task:
    """Run `spec`'s gold solution in `workspace` (freshly loaded with `fixture`) and return the finished task."""
    output = ""
    for position, step in enumerate(spec.steps):
        outcome = _TOOLS[step["name"]].invoke(workspace, step["arguments"])
        failed = not outcome.ok or "\n[exit code " in "\n" + outcome.text
        if failed and not (spec.allow_failure and outcome.ok):
            raise GenerationError(f"{task_id}: gold step {position} ({step['arguments']}) failed: {outcome.text[:400]}")
        if step["name"] == "run_shell":
            output = workspace.last_output
    answer = parse_answer(spec.answer_kind, output)
    if spec.expected_answer is not None:
        ok, _ = score_answer(spec.answer_kind, spec.expected_answer, answer)
        if not ok:
            raise GenerationError(f"{task_id}: the gold command printed {answer!r} but the fixture says "
                                  f"{spec.expected_answer!r}")
    params: dict[str, Any] = {"answer_kind": spec.answer_kind}
    if spec.answer_kind == "output" and not spec.ordered:
        params["ordered"] = False
    if spec.check_state:
        final = workspace.snapshot()
        if final is None:
            raise GenerationError(f"{task_id}: the gold solution left too many files")
        params["expected"] = diff(workspace.baseline(), final, check_modes=spec.check_modes)
        if spec.check_modes:
            params["check_modes"] = True
        if spec.ignore:
            params["ignore"] = list(spec.ignore)
    if spec.tests:
        failures = [(name, text) for name, ok, text in workspace.run_tests(spec.tests) if not ok]
        if failures:
            raise GenerationError(f"{task_id}: hidden tests fail after the gold solution: {failures[:3]}")
        params["tests"] = spec.tests
    submit_arguments = {"answer": answer} if spec.answer_kind != "none" else {}
    difficulty = spec.difficulty
    if spec.traps is not None:
        difficulty = rate(spec.traps, spec.inputs)
        metadata = {**metadata, "traps": list(spec.traps), "inputs": spec.inputs}
    return Task(
        id=task_id, domain="cli", family=spec.family, split=split,
        prompt=spec.prompt + ANSWER_HINTS.get(spec.answer_kind, ""),
        answer=answer, solution=[*spec.steps, {"name": "submit", "arguments": submit_arguments}],
        verifier=VerifierSpec(name="cli", params=params), metadata=metadata, difficulty=difficulty,
    )
