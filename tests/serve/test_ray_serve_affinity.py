"""`agentgym serve --ray --replicas 2 --session-affinity`: HTTP MCP sessions whose client sends one `x-session-id`
header on every request stay on their replica (Ray Serve's consistent-hash router), so every call of four
interleaved sessions reaches its session and each plays to the verifier's score; WebSocket sessions still work."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import httpx
import pytest

from tests.serve.conftest import SERVE_EXTRA, ray_serving

for _module in ("openenv", "uvicorn", "websockets"):
    pytest.importorskip(_module, reason=SERVE_EXTRA)
pytest.importorskip("ray.serve", reason="Ray Serve is not installed (pip install 'ray[serve]')",
                    exc_type=ImportError)
from websockets.sync.client import connect

import agentgym  # noqa: F401
from agentgym.serving import ray_serve

pytestmark = pytest.mark.slow  # a local Ray cluster with Serve: about a minute
if not ray_serve.session_router_available():
    pytest.skip("this Ray has no consistent-hash router (Ray 2.60+): pip install -U 'ray[serve]>=2.60'",
                allow_module_level=True)


@pytest.fixture(scope="module")
def ray_url() -> Iterator[str]:
    with ray_serving("SQL-v0", replicas=2, session_affinity=True) as url:
        yield url


def _solution(seed: int) -> list[dict[str, Any]]:
    env = gym.make("SQL-v0")
    env.reset(seed=seed)
    solution = list(env.unwrapped.task.solution)
    env.close()
    return solution


def test_mcp_sessions_with_a_session_header_stay_on_their_replica(ray_url: str) -> None:
    mcp = ray_url.replace("ws://", "http://") + "/mcp"

    def call(key: str, method: str, **params: Any) -> dict[str, Any]:
        answer = httpx.post(mcp, headers={ray_serve.SESSION_HEADER: key}, timeout=60,
                            json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).json()
        assert "error" not in answer, (method, answer)
        return dict(answer["result"])

    seeds = [11, 12, 13, 14]
    keys = [uuid.uuid4().hex for _ in seeds]
    sessions = [call(key, "openenv/session/create", seed=seed)["session_id"] for key, seed in zip(keys, seeds)]
    # interleaved: with two replicas and no affinity about half of these calls would meet "unknown session"
    for _ in range(3):
        for key, session in zip(keys, sessions):
            assert call(key, "tools/call", session_id=session, name="list_tables", arguments={})["isError"] is False
    for key, session, seed in zip(keys, sessions, seeds):
        result: dict[str, Any] = {}
        for step in _solution(seed):
            result = call(key, "tools/call", session_id=session, name=step["name"], arguments=step["arguments"])
        assert result["structuredContent"]["terminated"] is True and result["structuredContent"]["reward"] == 1.0
        assert call(key, "openenv/session/close", session_id=session)["closed"] is True


def test_websocket_sessions_still_play_under_the_session_router(ray_url: str) -> None:
    seed = 5
    with connect(ray_url + "/ws", open_timeout=60) as connection:
        connection.send(json.dumps({"type": "reset", "data": {"seed": seed}}))
        assert json.loads(connection.recv(timeout=60))["type"] == "observation"
        answer: dict[str, Any] = {}
        for call in _solution(seed):
            connection.send(json.dumps({"type": "step", "data": {"action": call}}))
            answer = json.loads(connection.recv(timeout=60))
        assert answer["data"]["done"] is True and answer["data"]["reward"] == 1.0
