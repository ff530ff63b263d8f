"""CLI-v0's per-step path: list_dir defines its helper once per sandbox Python namespace and keeps listing right
when that namespace is lost or its names are rebound; `shell_ok` reads the exit-code note wherever it is."""

from __future__ import annotations

from typing import Any


def call(env: Any, name: str, **arguments: Any) -> str:
    return env.step({"name": name, "arguments": arguments})[0]


def test_list_dir_survives_a_lost_namespace_and_rebound_names(make_cli_env: Any, small_tasks: list[Any]) -> None:
    env = make_cli_env()
    task = next(t for t in small_tasks if t.family == "counting")
    env.reset(options={"task_id": task.id})
    listing = call(env, "list_dir", path=".")
    assert "logs/" in listing
    assert call(env, "list_dir", path=".") == listing  # the second call only calls the defined helper
    sandbox = env.unwrapped.state.sandbox
    # Other code in the namespace binding the helper's module names changes nothing: its imports are its own.
    assert sandbox.run_python("json = os = stat = _j = _o = _s = None").ok
    assert call(env, "list_dir", path=".") == listing
    # A namespace lost (its interpreter killed after a timeout) gets the helper again on the next call.
    lost = sandbox.run_python("import time\nwhile True:\n    try:\n        time.sleep(5)\n    except BaseException:\n"
                              "        pass\n", timeout=0.5)
    assert lost.timed_out
    assert call(env, "list_dir", path=".") == listing
    assert "no folder" in call(env, "list_dir", path="nowhere")
    assert "is a file" in call(env, "list_dir", path="current.log")
    # A new episode (a reset sandbox, a fresh namespace) lists its own workspace.
    env.reset(options={"task_id": task.id})
    assert call(env, "list_dir", path=".") == listing


def test_shell_ok_counts_exit_codes_at_the_start_or_after_output(make_cli_env: Any, small_tasks: list[Any]) -> None:
    env = make_cli_env()
    task = next(t for t in small_tasks if t.family == "counting")
    env.reset(options={"task_id": task.id})
    for command in ("true", "false", "echo hi; exit 3", "echo '[exit code 9]'"):
        env.step({"name": "run_shell", "arguments": {"command": command}})
    _, _, terminated, _, info = env.step({"name": "submit", "arguments": {"answer": 0}})
    assert terminated
    # Only `true` counts: false (the note alone), exit 3 (the note after output), and output that starts a line
    # with the note's own words (read as the note, as before) do not.
    assert info["reward_breakdown"]["process/shell_ok"] == 0.25
