"""`agentgym serve --ray`: two SQL-v0 replicas on a local Ray cluster; one replica is killed mid-session, the
sessions on the other go on to the verifier's score, new sessions succeed, and Ray starts a replacement."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import gymnasium as gym
import pytest

from tests.serve.conftest import SERVE_EXTRA, ray_serving

for _module in ("openenv", "uvicorn", "websockets"):
    pytest.importorskip(_module, reason=SERVE_EXTRA)
pytest.importorskip("ray.serve", reason="Ray Serve is not installed (pip install 'ray[serve]')",
                    exc_type=ImportError)
import ray
from ray import serve
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

import agentgym  # noqa: F401
from agentgym.serving import ray_serve
from agentgym.serving.server import ServeConfig

SEED = 5


def _solution(seed: int) -> list[Any]:
    env = gym.make("SQL-v0")
    env.reset(seed=seed)
    solution = list(env.unwrapped.task.solution)
    env.close()
    return solution


def _exchange(connection: Any, message: dict[str, Any]) -> dict[str, Any]:
    connection.send(json.dumps(message))
    return dict(json.loads(connection.recv(timeout=60)))


def _replicas_running() -> int:
    deployment = serve.status().applications["agentgym-SQL-v0"].deployments[ray_serve.DEPLOYMENT_NAME]
    return int(deployment.replica_states.get("RUNNING", 0))


def _replica_actors() -> list[str]:
    return sorted(actor["name"] for actor in ray.util.list_named_actors(all_namespaces=True)
                  if actor["name"].startswith("SERVE_REPLICA::agentgym-SQL-v0#"))


@pytest.fixture(scope="module")
def ray_url() -> Iterator[str]:
    with ray_serving("SQL-v0", replicas=2) as url:
        yield url


def _alive(connection: Any) -> bool:
    try:
        answer = _exchange(connection, {"type": "state"})
    except (ConnectionClosed, TimeoutError, OSError):
        return False
    return answer.get("type") == "state"


@pytest.mark.slow  # a local Ray cluster with Serve: about a minute, and it shares the process's Ray with other tests
def test_a_killed_replica_leaves_the_other_replicas_sessions_playing_and_is_replaced(ray_url: str) -> None:
    solution = _solution(SEED)
    assert _replicas_running() == 2
    # Ray routes each new connection to the less loaded of two replicas, so four sessions land on both.
    stack = ExitStack()
    sessions = [stack.enter_context(connect(ray_url + "/ws", open_timeout=60)) for _ in range(4)]
    for connection in sessions:
        first = _exchange(connection, {"type": "reset", "data": {"seed": SEED}})
        assert first["type"] == "observation" and first["data"]["done"] is False

    killed = _replica_actors()[0]
    ray.kill(ray.get_actor(killed, namespace="serve"), no_restart=True)
    time.sleep(2)

    alive = [connection for connection in sessions if _alive(connection)]
    assert 0 < len(alive) < len(sessions), "sessions should have been spread over both replicas"
    for connection in alive:  # each survivor plays on to the verifier's score
        answer: dict[str, Any] = {}
        for call in solution:
            answer = _exchange(connection, {"type": "step", "data": {"action": call}})
        assert answer["data"]["done"] is True and answer["data"]["reward"] == 1.0
    stack.close()

    # A new session is routed to a live replica and scores 1.0 as well.
    deadline = time.monotonic() + 60
    while True:
        try:
            with connect(ray_url + "/ws", open_timeout=30) as fresh:
                assert _exchange(fresh, {"type": "reset", "data": {"seed": SEED}})["type"] == "observation"
                for call in solution:
                    answer = _exchange(fresh, {"type": "step", "data": {"action": call}})
                assert answer["data"]["reward"] == 1.0
            break
        except (ConnectionClosed, OSError):
            if time.monotonic() > deadline:
                raise
            time.sleep(1)

    # Ray heals the deployment: a new replica replaces the killed one.
    deadline = time.monotonic() + 120
    while not (_replicas_running() == 2 and killed not in _replica_actors()):
        assert time.monotonic() < deadline, f"the killed replica was not replaced: {serve.status()}"
        time.sleep(1)


def test_deployment_refuses_bad_replica_counts() -> None:
    with pytest.raises(ValueError, match="replicas must be at least 1"):
        ray_serve.deployment(ServeConfig(env_id="SQL-v0"), replicas=0)
    with pytest.raises(ValueError, match="cpus_per_replica"):
        ray_serve.deployment(ServeConfig(env_id="SQL-v0"), replicas=1, cpus_per_replica=-1)


def test_session_affinity_is_refused_without_ray() -> None:
    from click.testing import CliRunner

    from agentgym.cli import main

    result = CliRunner().invoke(main, ["serve", "SQL-v0", "--session-affinity"])
    assert result.exit_code == 1 and "--session-affinity needs --ray" in result.output
