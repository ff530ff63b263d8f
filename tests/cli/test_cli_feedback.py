"""CLI-v0 hints from real episodes: the closest installed command, and where the grader looks."""

from __future__ import annotations

from typing import Any

from agentgym.feedback import HINT_PREFIX


def _shell(env: Any, command: str) -> str:
    observation, *_ = env.step({"name": "run_shell", "arguments": {"command": command}})
    return str(observation)


def test_command_not_found_gets_the_closest_installed_command(make_cli_env: Any, small_tasks: list[Any]) -> None:
    env = make_cli_env(feedback="hints")
    env.reset(seed=0, options={"task_id": small_tasks[0].id})
    observation = _shell(env, "grpe -c x README.md")
    assert "grpe: command not found" in observation
    assert observation.split(HINT_PREFIX)[1].startswith(
        "'grpe' is not installed; the closest installed command is 'grep'.")
    unknown = _shell(env, "qqqzzzxx")
    assert unknown.split(HINT_PREFIX)[1].startswith("'qqqzzzxx' is not installed here.")


def test_a_refused_write_outside_the_workspace_says_the_workspace_is_what_is_graded(
        make_cli_env: Any, small_tasks: list[Any]) -> None:
    env = make_cli_env(feedback="hints")
    env.reset(seed=0, options={"task_id": small_tasks[0].id})
    observation = _shell(env, "touch /usr/bin/agentgym-probe")
    assert "[exit code" in observation
    assert observation.split(HINT_PREFIX)[1].startswith("Only the workspace (your starting directory) is graded")


def test_feedback_none_shows_the_shell_output_alone(make_cli_env: Any, small_tasks: list[Any]) -> None:
    env = make_cli_env()
    env.reset(seed=0, options={"task_id": small_tasks[0].id})
    observation = _shell(env, "grpe -c x README.md")
    assert HINT_PREFIX not in observation
    assert observation.endswith("grpe: command not found\n[exit code 127]")
