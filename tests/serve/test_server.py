"""`agentgym serve` driven by openenv-core's own clients (GenericEnvClient, MCPToolClient), unmodified, and by raw
WebSocket / HTTP where the point is what goes over the wire."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import httpx
import pytest

from tests.serve.conftest import SERVE_EXTRA

for _module in ("openenv", "uvicorn", "websockets"):
    pytest.importorskip(_module, reason=SERVE_EXTRA)
from openenv.core.generic_client import GenericEnvClient
from openenv.core.mcp_client import MCPToolClient
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

import agentgym  # noqa: F401
from agentgym.serving.remote import RemoteEnvError
from tests.serve.conftest import free_port, serving


def _local_task(seed: int) -> Any:
    env = gym.make("SQL-v0")
    env.reset(seed=seed)
    task = env.unwrapped.task
    env.close()
    return task


def _ws(url: str, **headers: str) -> Any:
    return connect(url.replace("http://", "ws://") + "/ws", additional_headers=headers)


def _exchange(connection: Any, message: Any) -> dict[str, Any]:
    connection.send(message if isinstance(message, str) else json.dumps(message))
    return json.loads(connection.recv(timeout=30))


def test_generic_client_plays_an_episode_to_the_verifier_score(sql_server: str) -> None:
    task = _local_task(5)
    with GenericEnvClient(base_url=sql_server).sync() as client:
        first = client.reset(seed=5)
        assert first.observation["text"] == task.prompt and first.done is False
        assert first.observation["info"]["task_id"] == task.id
        result = None
        for call in task.solution:
            result = client.step({"action": call})
        assert result is not None and result.done is True and result.reward == 1.0
        assert result.observation["info"]["reward_breakdown"]["answer"] == 1.0
        assert client.state()["step_count"] == len(task.solution)


def test_mcp_tool_client_lists_and_calls_the_env_tools(sql_server: str) -> None:
    local = gym.make("SQL-v0")
    local.reset(seed=2)
    names = [schema["function"]["name"] for schema in local.unwrapped.tool_schemas]
    expected = local.step({"name": "list_tables", "arguments": {}})[0]
    local.close()

    async def over_websocket() -> tuple[list[str], str]:
        async with MCPToolClient(base_url=sql_server) as client:
            await client.reset(seed=2)
            tools = await client.list_tools()
            return [tool.name for tool in tools], await client.call_tool("list_tables")

    async def over_http_mcp() -> tuple[list[str], Any]:
        client = MCPToolClient(base_url=sql_server)
        client.use_production_mode = True  # JSON-RPC over HTTP /mcp
        try:
            tools = await client.list_tools()
            return [tool.name for tool in tools], await client.call_tool("list_tables")
        finally:
            await client.close()

    listed, text = asyncio.run(over_websocket())
    assert listed == names and text == expected
    health = httpx.get(sql_server + "/health").json()
    assert health["status"] == "healthy" and health["env"] == "SQL-v0"
    assert health["data"]["tasks"] == len(local.unwrapped.task_set) and health["data"]["families"]
    assert isinstance(health["sandbox"]["pools"], list)
    listed, text = asyncio.run(over_http_mcp())
    assert listed == names and text.startswith("Tables in database")
    assert httpx.get(sql_server + "/health").json()["sessions"]["active"] == 0  # both sessions were closed


def test_mcp_json_rpc_session_reaches_the_score_and_only_its_own_session(sql_server: str) -> None:
    task = _local_task(7)
    rpc = 0

    def call(method: str, **params: Any) -> dict[str, Any]:
        nonlocal rpc
        rpc += 1
        return httpx.post(sql_server + "/mcp", json={"jsonrpc": "2.0", "id": rpc, "method": method,
                                                     "params": params}).json()

    assert call("initialize")["result"]["capabilities"]["tools"] is not None
    created = call("openenv/session/create", seed=7)["result"]
    assert created["observation"] == task.prompt
    other = call("openenv/session/create", seed=8)["result"]["session_id"]
    result: dict[str, Any] = {}
    for step in task.solution:
        result = call("tools/call", session_id=created["session_id"], name=step["name"],
                      arguments=step["arguments"])["result"]
    assert result["structuredContent"]["terminated"] is True and result["structuredContent"]["reward"] == 1.0
    # the other session saw none of it, and a made-up id reaches nothing
    untouched = call("tools/call", session_id=other, name="list_tables", arguments={})["result"]
    assert untouched["structuredContent"]["terminated"] is False
    refused = call("tools/call", session_id="0" * 32, name="list_tables", arguments={})
    assert "openenv/session/create" in refused["error"]["message"]
    for session_id in (created["session_id"], other):
        assert call("openenv/session/close", session_id=session_id)["result"]["closed"] is True


def test_bad_input_gets_clear_json_errors(sql_server: str) -> None:
    with _ws(sql_server) as connection:
        assert _exchange(connection, "{not json")["data"]["code"] == "INVALID_JSON"
        assert _exchange(connection, {"type": "dance"})["data"]["code"] == "UNKNOWN_TYPE"
        refused = _exchange(connection, {"type": "step", "data": {"type": "act"}})
        assert refused["data"]["code"] == "VALIDATION_ERROR"
        assert "needs 'action'" in json.dumps(refused["data"]["errors"])
        early = _exchange(connection, {"type": "step", "data": {"action": {"name": "list_tables", "arguments": {}}}})
        assert "call reset() before step()" in early["data"]["message"]
        assert "seed must be an integer" in _exchange(connection, {"type": "reset", "data": {"seed": "x"}})["data"][
            "message"]
        ok = _exchange(connection, {"type": "reset", "data": {"seed": 1}})
        assert ok["type"] == "observation"
        garbage = _exchange(connection, {"type": "step", "data": {"action": "\x00\ud800 }{"}})
        assert garbage["type"] == "observation" and garbage["data"]["done"] is False  # an error observation, a turn
    assert httpx.post(sql_server + "/mcp", content=b"\xff").json()["error"]["code"] == -32700
    assert httpx.post(sql_server + "/mcp", json=[1, 2]).json()["error"]["code"] == -32600
    assert httpx.post(sql_server + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "x/y"}).json()[
        "error"]["code"] == -32601
    notification = httpx.post(sql_server + "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert notification.status_code == 202
    stateless = httpx.post(sql_server + "/step", json={"action": {}})
    assert stateless.status_code == 409 and "/ws" in stateless.json()["error"]


def test_no_response_carries_the_gold(sql_server: str) -> None:
    """Every frame of an episode that does not solve the task, and every info endpoint, is free of the task's
    answer, solution query and verifier parameters."""
    seed = 4
    task = _local_task(seed)
    solution_sql = [str(value) for step in task.solution for value in step["arguments"].values()]
    gold = [json.dumps(task.answer), *solution_sql, *(json.dumps(value) for value in task.verifier.params.values()
                                                    if isinstance(value, (list, dict)))]
    gold = [item for item in gold if len(item) >= 6]  # short strings ("[1]") occur by chance in any text
    assert gold, "the test needs a task with a distinctive gold"
    frames: list[str] = []
    with _ws(sql_server) as connection:
        for message in ({"type": "reset", "data": {"seed": seed}},
                        {"type": "step", "data": {"action": {"name": "list_tables", "arguments": {}}}},
                        {"type": "step", "data": {"type": "list_tools"}},
                        {"type": "state"},
                        {"type": "step", "data": {"action": {"name": "submit", "arguments": {"sql": "SELECT 1"}}}}):
            connection.send(json.dumps(message))
            frames.append(str(connection.recv(timeout=30)))
    for path in ("/health", "/schema", "/metadata", "/state", "/tasks"):
        frames.append(httpx.get(sql_server + path).text)
    frames.append(httpx.post(sql_server + "/reset", json={"seed": seed}).text)
    frames.append(httpx.post(sql_server + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).text)
    for frame in frames:
        for item in gold:
            assert item not in frame and json.dumps(item)[1:-1] not in frame


def test_session_limit_answers_busy_and_idle_sessions_are_reaped() -> None:
    with serving("SQL-v0", max_sessions=1, idle_timeout=0.5) as url:
        first = gym.make("SQL-v0", remote=url)
        first.reset(seed=0)
        with pytest.raises(RemoteEnvError, match="server busy: 1 of 1 sessions"):
            gym.make("SQL-v0", remote=url).reset(seed=0)
        time.sleep(2.0)
        assert httpx.get(url + "/health").json()["sessions"]["active"] == 0
        with pytest.raises(RuntimeError, match="closed after 0.5 s without a message"):
            first.step({"name": "list_tables", "arguments": {}})
        first.close()
        second = gym.make("SQL-v0", remote=url)  # the slot is free again
        assert second.reset(seed=0)[1]["task_id"]
        second.close()


def test_token_is_required_on_every_route() -> None:
    with serving("SQL-v0", token="s3cret-token") as url:
        assert httpx.get(url + "/health").status_code == 401
        assert httpx.get(url + "/health", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert httpx.post(url + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code == 401
        with pytest.raises(InvalidStatus, match="401"):
            _ws(url).close()
        with pytest.raises(RemoteEnvError, match="refused the token"):
            gym.make("SQL-v0", remote=url)
        assert httpx.get(url + "/health", headers={"Authorization": "Bearer s3cret-token"}).status_code == 200
        env = gym.make("SQL-v0", remote=url, remote_token="s3cret-token")
        assert env.reset(seed=0)[1]["task_id"]
        env.close()
        # openenv-core's client cannot set headers; credentials in the URL (HTTP Basic) carry the token
        with GenericEnvClient(base_url=url.replace("http://", "ws://agent:s3cret-token@")).sync() as client:
            assert client.reset(seed=0).observation["info"]["task_id"]


def test_agentgym_serve_command_binds_loopback_by_default() -> None:
    port = free_port()
    environment = {**os.environ, "AGENTGYM_SERVE_TOKEN": "tok-123"}
    process = subprocess.Popen([sys.executable, "-m", "agentgym.cli", "serve", "SQL-v0", "--port", str(port)],
                               stderr=subprocess.PIPE, text=True, env=environment)
    try:
        line = ""
        deadline = time.monotonic() + 120
        while "serving SQL-v0" not in line and time.monotonic() < deadline and process.poll() is None:
            line = process.stderr.readline() if process.stderr else ""
        assert f"serving SQL-v0 at ws://127.0.0.1:{port}" in line and "token required" in line
        listening = [row.split()[1] for path in ("/proc/net/tcp", "/proc/net/tcp6") if os.path.exists(path)
                     for row in Path(path).read_text().splitlines()[1:] if row.split()[3] == "0A"]
        ours = [address for address in listening if address.endswith(f":{port:04X}")]
        assert ours == ["0100007F:" + f"{port:04X}"]  # 127.0.0.1 only
        env = gym.make("SQL-v0", remote=f"ws://127.0.0.1:{port}", remote_token="tok-123")
        assert env.reset(seed=0)[1]["task_id"]
        env.close()
    finally:
        process.terminate()
        process.wait(timeout=30)
