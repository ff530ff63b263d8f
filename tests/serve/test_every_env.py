"""Every installed env, a plugin's included, is served by `agentgym serve` as it runs locally: the same prompt
for the same seed, the oracle's solution scores 1 over the wire, and an agent-role client never sees the gold."""

from __future__ import annotations

import json
import os
from typing import Any

import gymnasium as gym
import pytest

from tests.serve.conftest import SERVE_EXTRA

for _module in ("openenv", "uvicorn", "websockets"):
    pytest.importorskip(_module, reason=SERVE_EXTRA)

import agentgym
from tests.serve.conftest import serving


@pytest.mark.slow  # minutes for the four built-in envs together; tests/core/test_new_env.py checks a plugin is in it
@pytest.mark.parametrize("env_id", [record.id for record in agentgym.registry.installed()])
def test_every_installed_env_is_served(env_id: str) -> None:
    env_args: dict[str, Any] = {}
    if env_id == "CLI-v0":
        env_args["fixtures"] = 1  # one workspace's tasks, not the default 40: seconds to build instead of minutes
        from agentgym.sandbox.backends import docker_problem

        problem = docker_problem()
        if problem is not None:  # without Docker, CLI-v0 refuses to run model agents (weak isolation)
            if os.environ.get("CI"):
                pytest.fail(f"CI must serve CLI-v0 on Docker, but {problem}")
            pytest.skip(f"CLI-v0 needs Docker to be served: {problem}")
    local = gym.make(env_id, **env_args)
    prompt, _ = local.reset(seed=5)
    task = local.unwrapped.task  # the test reads the gold; the client under test never does
    local.close()
    with serving(env_id, env_args=env_args, max_sessions=2, idle_timeout=60) as url:
        remote = gym.make(env_id, remote=url)
        try:
            remote_prompt, info = remote.reset(seed=5)
            assert remote_prompt == prompt
            steps: list[Any] = []
            for call in task.solution:
                steps.append(remote.step(call))
                if steps[-1][2] or steps[-1][3]:
                    break
            assert steps[-1][1] == 1.0 and steps[-1][2], steps[-1][:4]
            seen = json.dumps([info, *[step[4] for step in steps]], default=str)
            assert "solution" not in seen and "verifier/" not in seen
        finally:
            remote.close()
