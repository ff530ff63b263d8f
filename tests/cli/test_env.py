"""CLI-v0 episodes: the tools as the agent sees them, verification with partial credit, the Gymnasium contract."""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import agentgym
from agentgym.agents import OracleAgent
from agentgym.rollout import run_episode


def call(env: Any, name: str, **arguments: Any) -> tuple[str, float, bool, dict[str, Any]]:
    observation, reward, terminated, _, info = env.step({"name": name, "arguments": arguments})
    return observation, reward, terminated, info


def first(tasks: list[Any], family: str, template: str | None = None) -> Any:
    return next(t for t in tasks if t.family == family and (template is None or t.metadata["template"] == template))


def test_cli_v0_is_registered_and_lists_its_tools() -> None:
    assert "CLI-v0" in {record.id for record in agentgym.registered()}
    assert not [failure for failure in agentgym.plugin_failures() if failure.name == "cli"]


def test_the_oracle_scores_one_on_every_task_of_two_workspaces(make_cli_env: Any, small_tasks: list[Any]) -> None:
    env = make_cli_env()
    failures = []
    for task in small_tasks:
        trajectory = run_episode(env, OracleAgent(), seed=0, task_id=task.id)
        if trajectory.reward != 1.0:
            failures.append((task.id, trajectory.reward, env.unwrapped._breakdown))
    assert not failures
    assert {task.family for task in small_tasks} == set(__import__("agentgym_cli.tasks").tasks.FAMILIES)


def test_shell_keeps_directory_and_variables_and_reports_errors(make_cli_env: Any, small_tasks: list[Any]) -> None:
    env = make_cli_env()
    env.reset(options={"task_id": first(small_tasks, "counting").id})
    call(env, "run_shell", command="cd logs && export MARK=kept")
    observation, *_ = call(env, "run_shell", command="pwd | sed 's|.*/||'; echo $MARK")
    assert observation.split() == ["logs", "kept"]
    observation, *_ = call(env, "run_shell", command="ls no-such-file")
    assert "[stderr]" in observation and "[exit code 2]" in observation
    observation, *_ = call(env, "run_shell", command="cat")  # waits for stdin: there is none, so it ends at once
    assert observation == "(no output)"
    observation, *_ = call(env, "run_shell", command="head -c 3000 /dev/urandom")
    assert "[binary output" in observation and "\x00" not in observation
    json.dumps(observation)


def test_file_tools_read_write_list_and_refuse_to_leave_the_workspace(make_cli_env: Any,
                                                                      small_tasks: list[Any]) -> None:
    env = make_cli_env()
    env.reset(options={"task_id": first(small_tasks, "counting").id})
    observation, *_ = call(env, "list_dir", path=".")
    assert "logs/" in observation and "current.log -> logs/app.log" in observation and ".agentgym-tests" not in observation
    observation, *_ = call(env, "write_file", path="notes/new.txt", content="héllo\n")
    assert "wrote 7 bytes" in observation
    observation, *_ = call(env, "read_file", path="notes/new.txt")
    assert observation == "héllo\n"
    observation, *_ = call(env, "run_shell", command="cat notes/new.txt")
    assert observation == "héllo"
    for path in ("../etc/passwd", "/etc/passwd"):
        observation, *_ = call(env, "read_file", path=path)
        assert observation.startswith("Error:") and "workspace" in observation
    observation, *_ = call(env, "read_file", path="missing.txt")
    assert "no file" in observation and "list_dir" in observation
    observation, *_ = call(env, "read_file", path="logs")
    assert "folder" in observation
    observation, *_ = call(env, "list_dir", path="nowhere")
    assert "no folder" in observation


def test_a_path_that_is_not_utf8_gets_the_same_clear_error_in_every_sandbox(make_cli_env: Any,
                                                                           small_tasks: list[Any]) -> None:
    """A lone surrogate cannot be a file name. The sandbox's own error gave its position in the sandbox's
    absolute path, whose length differs between sandboxes, so two worker counts played the same episode
    differently (seen as an ordinary user, where the local backend's work roots differ in length)."""
    task = first(small_tasks, "counting")
    seen = set()
    envs = [make_cli_env(), make_cli_env()]  # two envs open at once: two sandboxes, two work dirs
    for env in envs:
        env.reset(options={"task_id": task.id})
    for env in envs:
        for tool in ("list_dir", "read_file"):
            observation, *_ = call(env, tool, path="``` \ud800 -la } ls -1")
            assert observation.startswith("Error:") and "not valid UTF-8" in observation, observation
            assert "Traceback" not in observation and "position" not in observation
            seen.add(observation)
    assert len(seen) == 1


def test_wrong_answers_and_partial_work_get_partial_credit_in_the_breakdown(make_cli_env: Any,
                                                                           small_tasks: list[Any]) -> None:
    env = make_cli_env()
    question = first(small_tasks, "counting")
    env.reset(options={"task_id": question.id})
    _, reward, terminated, info = call(env, "submit", answer=int(question.answer) + 1)
    assert terminated and reward == 0.0 and info["reward_breakdown"]["verifier/answer"] == 0.0

    listing = next(t for t in small_tasks if t.verifier.params["answer_kind"] == "lines" and len(t.answer) >= 2)
    env.reset(options={"task_id": listing.id})
    _, reward, _, info = call(env, "submit", answer=listing.answer[:-1])
    assert reward == 0.0 and 0.0 < info["reward_breakdown"]["verifier/answer_f1"] < 1.0

    chmod = first(small_tasks, "permissions", "secrets") if any(
        t.metadata["template"] == "secrets" for t in small_tasks) else first(small_tasks, "permissions", "scripts")
    env.reset(options={"task_id": chmod.id})
    command = "chmod 600 secrets/id_rsa" if chmod.metadata["template"] == "secrets" else \
        "chmod 755 $(ls project/scripts/*.sh | head -1)"
    call(env, "run_shell", command=command)
    call(env, "run_shell", command="echo extra > stray.txt")
    _, reward, _, info = call(env, "submit")
    breakdown = info["reward_breakdown"]
    assert reward == 0.0 and breakdown["verifier/state"] == 0.0
    assert 0.0 < breakdown["verifier/state_content"] < 1.0 and 0.0 < breakdown["verifier/state_paths"] < 1.0


def test_a_question_answered_by_the_last_command_output_needs_no_answer(make_cli_env: Any,
                                                                         small_tasks: list[Any]) -> None:
    env = make_cli_env()
    question = first(small_tasks, "counting")
    env.reset(options={"task_id": question.id})
    call(env, "run_shell", command=question.solution[0]["arguments"]["command"])
    _, reward, *_ = call(env, "submit")
    assert reward == 1.0


def test_hidden_tests_judge_scripts_and_are_never_in_the_workspace(make_cli_env: Any,
                                                                   small_tasks: list[Any]) -> None:
    env = make_cli_env()
    task = first(small_tasks, "scripts")
    env.reset(options={"task_id": task.id})
    observation, *_ = call(env, "run_shell", command="ls -A; grep -rl 'agentgym-tests' . || true")
    assert ".agentgym-tests" not in observation
    path = task.solution[0]["arguments"]["path"]
    call(env, "write_file", path=path, content="#!/bin/sh\necho 0\n")
    call(env, "run_shell", command=f"chmod +x {path}")
    _, reward, _, info = call(env, "submit")
    assert reward == 0.0 and info["reward_breakdown"]["verifier/tests"] == 0.0


def test_commands_that_hang_are_killed_and_the_shell_goes_on(make_cli_env: Any, small_tasks: list[Any]) -> None:
    env = make_cli_env(command_timeout=1.0)
    env.reset(options={"task_id": first(small_tasks, "counting").id})
    call(env, "run_shell", command="cd logs")
    observation, *_ = call(env, "run_shell", command="sleep 30")
    assert "timed out" in observation and "[exit code 124]" in observation
    observation, *_ = call(env, "run_shell", command="basename $PWD")
    assert observation == "logs"
    observation, *_ = call(env, "run_shell", command="yes | head -c 5000000")
    assert "too long" in observation


def test_gymnasium_check_env_and_seeded_resets(make_cli_env: Any) -> None:
    env = make_cli_env()
    check_env(env, skip_render_check=True)
    assert env.reset(seed=5) == env.reset(seed=5)


def test_gym_make_with_a_task_file_family_and_split(tmp_path: Any, backend: str, small_tasks: list[Any]) -> None:
    from agentgym.tasks import save_tasks

    path = tmp_path / "tasks.jsonl"
    save_tasks(small_tasks, path)
    env = gym.make("CLI-v0", tasks=str(path), families=["git_chores"], split="train", backend=backend)
    try:
        _, info = env.reset(seed=1)
        assert info["family"] == "git_chores" and info["split"] == "train"
        assert [tool["function"]["name"] for tool in info["tools"]] == [
            "run_shell", "read_file", "write_file", "list_dir", "submit"]
    finally:
        env.close()
    with pytest.raises(ValueError, match="families"):
        gym.make("CLI-v0", tasks=str(path), families=["nope"], backend=backend)


def test_the_local_backend_reproduces_the_tasks_generated_in_the_default_one(small_tasks: list[Any]) -> None:
    """Expected states and answers carry across backends: the oracle scores 1.0 under the local backend too."""
    from agentgym_cli.env import make_env

    tasks = [task for task in small_tasks if task.metadata["fixture"] == "ws-s0-000"]
    env = make_env(tasks, backend="local")
    try:
        rewards = {task.id: run_episode(env, OracleAgent(), seed=0, task_id=task.id).reward for task in tasks}
        assert set(rewards.values()) == {1.0}, rewards
        env.reset(options={"task_id": tasks[0].id})
        call(env, "write_file", path="a/b.txt", content="local\n")
        assert call(env, "read_file", path="a/b.txt")[0] == "local\n"
        assert "b.txt" in call(env, "list_dir", path="a")[0]
    finally:
        env.close()
