"""Hostile and careless commands in Docker: each is contained, reported to the agent, and the next episode is clean.

These run only in Docker (marked `docker`): `rm -rf /` or a fork bomb must never run under the local backend,
which shares the host's file system and user table.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentgym.agents import OracleAgent
from agentgym.rollout import run_episode

pytestmark = pytest.mark.docker

HOSTILE = {
    "rm -rf /": "rm -rf --no-preserve-root / 2>&1 | tail -3",
    "fork bomb": "bomb() { bomb | bomb & }; bomb; sleep 2; echo survived",
    "disk fill": "head -c 400M /dev/zero > filler.bin; df -h . | tail -1",
    "endless output": "yes agentgym",
    "editor waiting on stdin": "vi notes.txt || ed notes.txt || true",
    "cat without a file": "cat",
    "read from the terminal": "read -r line; echo \"read: '$line'\"",
    "background processes": "sleep 1000 & nohup sh -c 'while :; do date >> bg.txt; sleep 0.2; done' >/dev/null 2>&1 &"
                            " setsid sleep 1000 & echo started",
    "binary output": "head -c 20000 /dev/urandom",
    "kill the shell": "kill -9 $$",
}


@pytest.fixture
def env(docker_backend: str, make_cli_env: Any, request: pytest.FixtureRequest) -> Any:
    # One warm sandbox, so the episode after the hostile one is certain to reuse the same container. Filling the
    # disk must reach "No space left" before the limit even on a loaded machine (400 MB took over 5 s here).
    timeout = 60.0 if request.node.callspec.params.get("name") == "disk fill" else 5.0
    return make_cli_env(backend=docker_backend, pool_size=1, command_timeout=timeout)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_command_is_contained_and_the_next_episode_is_clean(name: str, env: Any,
                                                                    small_tasks: list[Any]) -> None:
    state_task = next(t for t in small_tasks if t.family == "organise")
    env.reset(options={"task_id": state_task.id})
    observation, *_ = env.step({"name": "run_shell", "arguments": {"command": HOSTILE[name]}})
    assert isinstance(observation, str) and len(observation) <= 20_000
    if name in ("endless output",):
        assert observation.startswith("[timed out") and "too long" in observation
    if name == "disk fill":
        assert "No space left on device" in observation
    if name == "binary output":
        assert "[binary output" in observation
    # The env goes on: the shell answers (restarted if it died) and the episode can be submitted.
    observation, *_ = env.step({"name": "run_shell", "arguments": {"command": "echo alive"}})
    assert "alive" in observation
    _, _, terminated, _, _info = env.step({"name": "submit", "arguments": {}})
    assert terminated
    # The next episode starts from the untouched fixture, with no process left from the last one.
    trajectory = run_episode(env, OracleAgent(), seed=0, task_id=state_task.id)
    assert trajectory.reward == 1.0, env.unwrapped._breakdown
    env.reset(options={"task_id": state_task.id})
    observation, *_ = env.step({"name": "run_shell", "arguments": {
        "command": "ps -e -o comm= | grep -v -x -e ps -e bash -e python3 -e sort | sort | tr '\\n' ' '; "
                   "ls bg.txt filler.bin 2>&1 | head -2"}})
    assert "sleep" not in observation and " sh " not in f" {observation} "
    assert "No such file" in observation
