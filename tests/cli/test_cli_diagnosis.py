"""CLI-v0's diagnosis labels (docs/diagnosis.md, "CLI-v0"): each comes out of a real episode in a sandbox
(Docker where it answers, else the local backend), and none carries a path, content or expected output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentgym_cli.diagnosis import LABELS, shell_labels


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def task_of(tasks: list[Any], suffix: str) -> Any:
    return next(task for task in tasks if task.id.endswith(suffix))


def play(env: Any, task: Any, actions: list[dict[str, Any]]) -> dict[str, Any]:
    env.reset(options={"task_id": task.id})
    for action in actions:
        *_, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return info["diagnosis"]
    raise AssertionError("the episode did not end")


def test_shell_labels(make_cli_env: Any, small_tasks: list[Any]) -> None:
    env = make_cli_env(command_timeout=1.0)
    task = task_of(small_tasks, "000-text_processing-status")  # a count from logs/access.log
    gold = task.solution[-1]["arguments"]["answer"]
    found = play(env, task, [call("run_shell", command="frobnicate --now"),
                             call("run_shell", command="printf 'echo hi' > job.sh && ./job.sh"),
                             call("run_shell", command="sleep 5"),
                             call("submit", answer=gold)])
    assert found["episode"] == "solved"
    assert found["domain"] == ["command_not_found", "permission_denied", "command_timed_out"]
    # A command's own output that quotes bash's messages is not one of them.
    found = play(env, task, [call("run_shell", command="echo 'x: command not found; Permission denied'"),
                             call("submit", answer=gold)])
    assert found["domain"] == []


def test_grading_labels(make_cli_env: Any, small_tasks: list[Any]) -> None:
    env = make_cli_env()
    errors = task_of(small_tasks, "000-text_processing-errors")  # write logs/errors.log (file state only)
    assert play(env, errors, [call("submit")])["domain"] == ["state_differs"]
    archive = task_of(small_tasks, "000-organise-archive")  # file state and hidden tests
    assert play(env, archive, [call("submit")])["domain"] == ["state_differs", "tests_failed"]
    commit = task_of(small_tasks, "001-git_chores-commit_all")  # hidden tests only
    assert play(env, commit, [call("run_shell", command="git -C repo status --short"), call("submit")]
                )["domain"] == ["tests_failed"]
    listing = task_of(small_tasks, "000-find_filter-size")  # a list of paths
    found = play(env, listing, [call("run_shell", command="ls logs"), call("submit", answer=["logs/none.log"])])
    assert found["episode"] == "wrong_answer" and found["domain"] == ["output_differs"]
    text = json.dumps(found)
    assert not any(str(path) in text for path in listing.answer)


def test_shell_labels_read_only_the_stderr_part_and_notes() -> None:
    assert shell_labels("[stderr]\nbash: frobnicate: command not found\n[exit code 127]") == ["command_not_found"]
    assert shell_labels("out\n[stderr]\nbash: ./x: Permission denied\n[exit code 126]") == ["permission_denied"]
    assert shell_labels("[exit code 127]") == ["command_not_found"]  # the exit code alone says it
    assert shell_labels("grep found: command not found in the log") == []


def test_labels_are_documented() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "diagnosis.md").read_text(encoding="utf-8")
    for label in LABELS:
        assert f"`{label}`" in doc, label


def test_a_hidden_test_that_timed_out_is_labelled_command_timed_out(small_tasks: list[Any]) -> None:
    """Issue 26: every timeout is labelled `command_timed_out`, also the agent's program running past its limit
    inside a hidden test (the grading sandbox reports that test as timed out, the verifier flags it)."""
    import inspect

    from agentgym_cli.diagnosis import cli_labels
    from agentgym_cli.verify import TEST_TIMED_OUT

    from agentgym import Score
    from agentgym.sandbox import worker

    assert f'"{TEST_TIMED_OUT}"' in inspect.getsource(worker)  # the words the grading sandbox uses
    task = next(task for task in small_tasks if task.family == "scripts")
    timed_out = cli_labels(task, None, [], Score(0.0, {"tests": 0.0, "tests_timed_out": 1.0}))
    assert timed_out == ["command_timed_out", "tests_failed"]
    assert cli_labels(task, None, [], Score(0.0, {"tests": 0.0})) == ["tests_failed"]
