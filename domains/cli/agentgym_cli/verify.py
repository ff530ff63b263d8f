"""The `cli` verifier: the answer, the final file-system state, and hidden tests run after the episode.

A task's verifier params say which checks apply:

- `answer_kind`: "none", "number" (`agentgym.answers.numbers_match`: relative tolerance 1e-6 of the gold), "text"
  (`agentgym.answers.normalize_text`), "lines" (a set of paths, any order; exactly the gold's set, so listing
  extra candidates fails; read by `agentgym.answers.split_items`: a JSON array, a JSON-encoded array, one item
  per line, or one line of items separated by commas or semicolons that no gold path holds),
  or "output" (a command's output, compared line by line in order after normalising spaces; imported InterCode
  tasks; a line that holds commas is one line). When the agent submits no answer, the stdout of its last
  `run_shell` call is used, as InterCode does.
- `expected`: the changes the gold solution made to the fixture (path -> final entry, or None if removed),
  computed at generation time; `check_modes` makes permission bits count; `ignore` lists paths (globs) whose
  state only the tests judge (files whose exact bytes may legitimately differ, such as a JSON edit).
- `tests`: bash scripts run in the work dir after the episode, each passing when it exits 0 (and, when the test
  has a `stdout`, prints exactly that; the expected output stays on the host).

Grading starts by ending every process of the episode (`Workspace.seal`), so nothing the agent left running can
change the files or the snapshot while they are read; the snapshot runs in a fresh process of the sandbox's
supervisor. The tests run where no agent process ever ran: on a copy of the work dir, its repositories made
inert, in a grading sandbox as a user id no agent had (see `Workspace.run_tests`).

The score is 1.0 only when every check passes. The breakdown carries InterCode-style partial credit:
`state_paths` (overlap of changed paths), `state_content` (share of changed paths with the expected entry),
`answer_f1` (for lists and outputs), and `tests` (share of tests passed); `tests_timed_out` (1.0) appears when a
hidden test ran past its limit, so the diagnosis says `command_timed_out`.
"""

from __future__ import annotations

import re
from typing import Any

from agentgym import Score, Task, verifier
from agentgym.answers import list_separators, normalize_text, numbers_match, split_items
from agentgym.sandbox import SandboxError
from agentgym_cli.workspace import Workspace, compare_states

# What the grading sandbox reports for a hidden test that ran past its time limit and was killed.
TEST_TIMED_OUT = "the test timed out"


def _path(item: str) -> str:
    """One item of a list or output answer as compared: spaces normalised, one pair of surrounding quotes (a
    shell-quoted path) and leading "./" dropped, a trailing "/" dropped. Paths keep their case and dots (not
    `normalize_text`, which would fold "Data.csv" into "data.csv")."""
    text = re.sub(r"\s+", " ", item.strip())
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"`":
        text = text[1:-1].strip()
    while text.startswith("./"):
        text = text[2:]
    return text.rstrip("/") if len(text) > 1 else text


def _lines(value: Any, *, list_answer: bool = False, separators: tuple[str, ...] = ()) -> list[str]:
    """The items of a list or output answer, read by `agentgym.answers.split_items` (the one list reading).

    A list answer (`list_answer`) also accepts a JSON-encoded array and markdown bullets, and a single line is
    split on `separators` (for a submission, those no gold item holds: `agentgym.answers.list_separators`). A
    command's output (the default) is read line by line as printed: a line that holds commas is one line."""
    items = split_items(value, separators=separators, json_arrays=list_answer, bullets=list_answer)
    return [path for path in map(_path, items) if path]


def _f1(got: list[str], gold: list[str]) -> float:
    if not got and not gold:
        return 1.0
    remaining = list(gold)
    overlap = 0
    for item in got:
        if item in remaining:
            remaining.remove(item)
            overlap += 1
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(got), overlap / len(gold)
    return 2 * precision * recall / (precision + recall)


def score_answer(kind: str, submission: Any, gold: Any, *, ordered: bool = True) -> tuple[bool, dict[str, float]]:
    """Whether `submission` answers like `gold` for this `kind`, and partial-credit components. An "output" with
    `ordered=False` (its order is the file system's) compares as a multiset of lines."""
    if kind == "number":
        ok = numbers_match(submission, gold, rel_tol=1e-6)
        return ok, {"answer": float(ok)}
    if kind == "text":
        ok = normalize_text(submission if submission is not None else "") == normalize_text(gold)
        return ok, {"answer": float(ok)}
    if kind == "lines":
        want = sorted(set(_lines(gold, list_answer=True)))
        got = sorted(set(_lines(submission, list_answer=True, separators=list_separators(want))))
        return got == want, {"answer": float(got == want), "answer_f1": _f1(got, want)}
    if kind == "output":
        got, want = _lines(submission), _lines(gold)
        ok = got == want if ordered else sorted(got) == sorted(want)
        return ok, {"answer": float(ok), "answer_f1": _f1(got, want)}
    raise ValueError(f"unknown answer_kind {kind!r}; use none, number, text, lines or output")


@verifier("cli")
def verify_cli(task: Task, submission: Any, state: Any, *, answer_kind: str = "none",
               expected: dict[str, Any] | None = None, check_modes: bool = False, ignore: list[str] | None = None,
               tests: list[dict[str, str]] | None = None, ordered: bool = True) -> Score:
    """Score a CLI-v0 episode; see the module docstring. `state` is the episode's `Workspace` (or None: then only
    the answer can be checked, and file and test checks fail)."""
    components: dict[str, float] = {}
    passed: list[bool] = []
    notes: list[str] = []
    workspace = state if isinstance(state, Workspace) else None
    if workspace is not None and (expected is not None or tests):
        try:
            workspace.seal()
        except SandboxError as error:
            return Score(0.0, {"state": 0.0, "tests": 0.0} if tests else {"state": 0.0},
                         f"the episode's processes could not be ended before grading: {error}")
    if answer_kind != "none":
        given = submission
        if given is None or (isinstance(given, str) and not given.strip()):
            given = workspace.last_output if workspace is not None else None
        ok, parts = score_answer(answer_kind, given, task.answer, ordered=ordered)
        components.update(parts)
        passed.append(ok)
        if not ok:
            notes.append("the answer differs from the expected one")
    if expected is not None:
        if workspace is None:
            components.update(state=0.0, state_paths=0.0, state_content=0.0)
            passed.append(False)
            notes.append("no workspace to check the file-system state in")
        else:
            try:
                final = workspace.snapshot()
            except SandboxError as error:
                final = None
                notes.append(f"the work dir could not be listed: {error}")
            if final is None:
                components.update(state=0.0, state_paths=0.0, state_content=0.0)
                passed.append(False)
                notes.append("the work dir could not be listed (too many files?)")
            else:
                comparison = compare_states(workspace.baseline(), final, expected, check_modes=check_modes,
                                            ignore=ignore or ())
                components.update(state=float(comparison.exact), state_paths=comparison.paths,
                                  state_content=comparison.content)
                passed.append(comparison.exact)
                if not comparison.exact:
                    notes.append("file system: " + comparison.message())
    if tests:
        if workspace is None:
            components["tests"] = 0.0
            passed.append(False)
        else:
            # A reply without one readable outcome per test, or a grading copy that could not be made, raises
            # (GradingError, InfrastructureError): `ToolEnv.step` ends the episode with reward 0 and the
            # `grader_error` (or `infra_error`) diagnosis, never a guess.
            outcomes = workspace.run_tests(tests)
            count = sum(ok for _, ok, _ in outcomes)
            components["tests"] = count / len(outcomes)
            if any(tail == TEST_TIMED_OUT for _, _, tail in outcomes):
                components["tests_timed_out"] = 1.0  # diagnosed as command_timed_out, as a shell timeout is
            passed.append(count == len(outcomes))
            failed = [name for name, ok, _ in outcomes if not ok]
            if failed:
                notes.append(f"hidden tests failed: {', '.join(failed[:5])}")
    success = all(passed) if passed else True
    return Score(float(success), components, "; ".join(notes))
