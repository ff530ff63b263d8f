"""`gym.make(ID, remote=URL)` behaves exactly as the local env: whole trajectories compared, errors included.

The whole `info` goes to the trainer, the client holding the server's token; any other client gets `info` cut to
what an agent may know (`agentgym.serving.roles.agent_info`, docs/serving.md), and otherwise the same trajectory.
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import pytest

from tests.serve.conftest import SERVE_EXTRA

for _module in ("openenv", "uvicorn", "websockets"):
    pytest.importorskip(_module, reason=SERVE_EXTRA)

import agentgym  # noqa: F401  (registers the envs)
from agentgym.serving.remote import RemoteEnvError
from agentgym.serving.roles import agent_info
from tests.serve.conftest import free_port, serving

TOKEN = "remote-test-trainer-token"


@pytest.fixture(scope="module")
def trainer_server() -> Any:
    with serving("SQL-v0", max_sessions=16, idle_timeout=60, token=TOKEN) as url:
        yield url


def _as_agent(trajectory: list[Any]) -> list[Any]:
    """A trajectory with each `info` as an agent-role client receives it."""
    return [(*step[:-1], agent_info(step[-1])) for step in trajectory]


def _episode_actions(env: gym.Env[Any, Any]) -> list[Any]:
    """A mixed episode for the task just reset: garbage, a bad call, exploration, then the task's solution."""
    solution = env.unwrapped.task.solution  # the test reads the gold; the agent under test never does
    return ["this is not a tool call", {"name": "no_such_tool", "arguments": {}},
            {"name": "list_tables", "arguments": {}}, '{"name": "describe_table", "arguments": {"table": 7}}',
            *solution]


def _run(env: gym.Env[Any, Any], seed: int, actions: list[Any]) -> list[Any]:
    trajectory: list[Any] = [env.reset(seed=seed)]
    for action in actions:
        step = env.step(action)
        trajectory.append(step)
        if step[2] or step[3]:
            break
    return trajectory


@pytest.mark.parametrize("seed", [0, 3, 11])
def test_remote_trajectory_is_the_local_one(trainer_server: str, seed: int) -> None:
    local = gym.make("SQL-v0")
    remote = gym.make("SQL-v0", remote=trainer_server, remote_token=TOKEN)
    local.reset(seed=seed)
    actions = _episode_actions(local)
    expected = _run(local, seed, actions)
    got = _run(remote, seed, actions)
    assert got == expected
    assert json.dumps(got) == json.dumps(expected)  # the same key order too (printing, logging, JSON)
    final = got[-1]
    assert final[1] == 1.0 and final[2] is True and final[4]["reward_breakdown"]["answer"] == 1.0
    # the next episode on the same connection is the local one too (same env instance semantics)
    assert remote.reset(seed=seed + 1) == local.reset(seed=seed + 1)
    local.close()
    remote.close()
    remote.close()  # idempotent, like the local env's


def test_a_client_without_the_token_gets_the_agent_view_of_the_same_trajectory(sql_server: str) -> None:
    local = gym.make("SQL-v0")
    local.reset(seed=3)
    actions = _episode_actions(local)
    expected = _run(local, 3, actions)
    remote = gym.make("SQL-v0", remote=sql_server)
    got = _run(remote, 3, actions)
    assert got == _as_agent(expected)
    final = got[-1][-1]
    assert final["reward_breakdown"]["answer"] == 1.0 and "domain" not in final["diagnosis"]
    assert not any(term.startswith(("verifier/", "process")) for term in final["reward_breakdown"])
    local.close()
    remote.close()


def test_remote_errors_are_the_local_errors(sql_server: str) -> None:
    local, remote = gym.make("SQL-v0"), gym.make("SQL-v0", remote=sql_server)
    for env in (local, remote):  # no episode yet: Gymnasium's order check, then the env's own
        with pytest.raises(gym.error.ResetNeeded):
            env.step({"name": "list_tables", "arguments": {}})
        with pytest.raises(RuntimeError, match="call reset"):
            env.unwrapped.step({"name": "list_tables", "arguments": {}})
    for env in (local, remote):
        with pytest.raises(KeyError, match="no-such-task"):
            env.reset(options={"task_id": "no-such-task"})
    local.close()
    remote.close()


def test_remote_refuses_local_arguments_and_wrong_servers(sql_server: str) -> None:
    with pytest.raises(TypeError, match="--env-arg"):
        gym.make("SQL-v0", remote=sql_server, max_turns=3)
    with pytest.raises(RemoteEnvError, match="serves 'SQL-v0', not 'CLI-v0'"):
        gym.make("CLI-v0", remote=sql_server)
    with pytest.raises(RemoteEnvError, match="no agentgym server answers"):
        gym.make("SQL-v0", remote=f"ws://127.0.0.1:{free_port()}")
    with pytest.raises(ValueError, match="not a server address"):
        gym.make("SQL-v0", remote="ftp://127.0.0.1:1")


def test_remote_fhir_trajectory_is_the_local_one() -> None:
    local = gym.make("FHIR-v0")
    local.reset(seed=2)
    actions = ["not a call", {"name": "no_such_tool", "arguments": {}}, *local.unwrapped.task.solution]
    expected = _run(local, 2, actions)
    with serving("FHIR-v0", max_sessions=2, token=TOKEN) as url:
        remote = gym.make("FHIR-v0", remote=url, remote_token=TOKEN)
        assert _run(remote, 2, actions) == expected
        remote.close()
    local.close()


def test_remote_cli_trajectory_is_the_local_one_and_health_shows_the_pool() -> None:
    import httpx

    local = gym.make("CLI-v0", backend="local")
    local.reset(seed=1)
    actions = [{"name": "no_such_tool", "arguments": {}}, *local.unwrapped.task.solution]
    expected = _run(local, 1, actions)
    assert expected[-1][1] == 1.0
    with serving("CLI-v0", env_args={"backend": "local"}, max_sessions=2, token=TOKEN) as url:
        remote = gym.make("CLI-v0", remote=url, remote_token=TOKEN)
        remote.reset(seed=1)
        remote.step(actions[0])
        # mid-episode the served env's sandbox is taken from its pool (other tests may have left pools)
        pools = [pool for pool in httpx.get(url + "/health", headers={"Authorization": f"Bearer {TOKEN}"}).json()
                 ["sandbox"]["pools"]
                 if pool["backends"] == ["local"] and not pool["closed"]]
        assert any(pool["in_use"] >= 1 and pool["idle"] + pool["in_use"] == pool["size"] for pool in pools), pools
        assert _run(remote, 1, actions) == expected
        remote.close()
    local.close()


def test_interleaved_sessions_do_not_see_each_other(trainer_server: str) -> None:
    """Two clients stepping turn by turn on one server each get exactly their own local trajectory."""
    seeds = (21, 22)
    locals_ = [gym.make("SQL-v0") for _ in seeds]
    remotes = [gym.make("SQL-v0", remote=trainer_server, remote_token=TOKEN) for _ in seeds]
    plans = []
    for env, seed in zip(locals_, seeds):
        env.reset(seed=seed)
        plans.append(_episode_actions(env))
    expected = [_run(env, seed, plan) for env, seed, plan in zip(locals_, seeds, plans)]
    got: list[list[Any]] = [[remote.reset(seed=seed)] for remote, seed in zip(remotes, seeds)]
    for turn in range(max(len(plan) for plan in plans)):
        for index, remote in enumerate(remotes):
            if turn < len(expected[index]) - 1:
                got[index].append(remote.step(plans[index][turn]))
    assert got == expected
    for env in (*locals_, *remotes):
        env.close()
