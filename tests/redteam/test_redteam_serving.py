"""The reset oracle (`attacks_serving.py`) loses through every client an agent may hold: a served env's client
(`gym.make(ID, remote=URL)`), an MCP client of the server's `/mcp`, and the `agentgym mcp` stdio server. The
trainer side, holding the server's token, still receives the verifier's details."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest

for _module in ("openenv", "uvicorn", "websockets", "httpx"):
    pytest.importorskip(_module, reason="the serve extra is not installed (pip install -e '.[serve]')")

import httpx
from attacks_serving import drug_vocabulary, reset_oracle, says_in_gold

import agentgym  # noqa: F401  (registers the envs)
from tests.serve.conftest import serving

ENV_ID = "FHIR-v0"
TRAINER_TOKEN = "trainer-token-redteam"
AGENT_TOKEN = "agent-token-redteam"


def _targets(count: int = 2) -> list[tuple[str, list[str]]]:
    """Test-split `active_medications` tasks with at least two drugs: (task id, gold drug names). The harness reads
    the gold to choose tasks and to check the outcome; the attack never does."""
    env = gym.make(ENV_ID)
    tasks = sorted((task for task in env.unwrapped.task_set
                    if task.family == "active_medications" and task.split == "test" and len(task.answer) >= 2),
                   key=lambda task: task.id)
    env.close()
    return [(task.id, [item[0] for item in task.answer]) for task in tasks[:count]]


TARGETS = _targets()


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with serving(ENV_ID, max_sessions=8, idle_timeout=300) as url:
        yield url


def _remote_probe(env: gym.Env[Any, Any], task_id: str) -> Any:
    def probe(items: list[str]) -> dict[str, Any]:
        env.reset(options={"task_id": task_id})
        *_, info = env.step({"name": "submit", "arguments": {"answer": items}})
        return dict(info)
    return probe


def _remote_final(env: gym.Env[Any, Any], task_id: str, items: list[str]) -> tuple[float, dict[str, Any]]:
    env.reset(options={"task_id": task_id})
    _, reward, _, _, info = env.step({"name": "submit", "arguments": {"answer": items or ["metformin"]}})
    return float(reward), info


@pytest.mark.parametrize("target", TARGETS, ids=[task_id for task_id, _ in TARGETS])
def test_reset_oracle_through_a_served_env_client_loses(server: str, target: tuple[str, list[str]]) -> None:
    task_id, gold = target
    env = gym.make(ENV_ID, remote=server)
    found = reset_oracle(_remote_probe(env, task_id), drug_vocabulary())
    reward, info = _remote_final(env, task_id, found)
    env.close()
    assert found == [], f"the served client's info gave away {found} (gold {gold})"
    assert reward == 0.0 and info["reward_breakdown"].get("answer", 0.0) < 1.0


def _rpc(client: httpx.Client, url: str, method: str, params: dict[str, Any]) -> Any:
    answer = client.post(url + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).json()
    assert "error" not in answer, answer
    return answer["result"]


def _mcp_probe(client: httpx.Client, url: str, task_id: str) -> Any:
    def probe(items: list[str]) -> dict[str, Any]:
        session = _rpc(client, url, "openenv/session/create", {"options": {"task_id": task_id}})
        try:
            return dict(_rpc(client, url, "tools/call", {"session_id": session["session_id"], "name": "submit",
                                                         "arguments": {"answer": items}}))
        finally:
            _rpc(client, url, "openenv/session/close", {"session_id": session["session_id"]})
    return probe


@pytest.mark.parametrize("target", TARGETS, ids=[task_id for task_id, _ in TARGETS])
def test_reset_oracle_through_the_http_mcp_endpoint_loses(server: str, target: tuple[str, list[str]]) -> None:
    task_id, gold = target
    with httpx.Client(timeout=60) as client:
        probe = _mcp_probe(client, server, task_id)
        found = reset_oracle(probe, drug_vocabulary())
        final = probe(found or ["metformin"])
    assert found == [], f"the MCP client's results gave away {found} (gold {gold})"
    assert final["structuredContent"]["reward"] == 0.0


def _stdio_submit(task_id: str, items: list[str]) -> dict[str, Any]:
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def episode() -> dict[str, Any]:
        parameters = StdioServerParameters(command=sys.executable,
                                           args=["-m", "agentgym.cli", "mcp", ENV_ID, "--task-id", task_id])
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("submit", {"answer": items})
            return {"structured": result.structured_content, "text": result.content[0].text}

    return anyio.run(episode)


def test_the_stdio_mcp_server_tells_a_right_item_from_a_wrong_one_by_nothing() -> None:
    pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install -e '.[serve]')")
    task_id, gold = TARGETS[0]
    outsider = next(name for name in drug_vocabulary() if name not in gold)
    inside, outside = _stdio_submit(task_id, [gold[0]]), _stdio_submit(task_id, [outsider])
    assert not says_in_gold(inside) and not says_in_gold(outside)
    # the same numbers and words whether the one drug is in the record or not (the text echoes the answer sent)
    assert inside["structured"] == outside["structured"]
    assert inside["text"].replace(gold[0], "DRUG") == outside["text"].replace(outsider, "DRUG")


def test_the_trainer_holding_the_token_still_gets_the_verifier_details() -> None:
    task_id, gold = TARGETS[0]
    with serving(ENV_ID, max_sessions=4, token=TRAINER_TOKEN, agent_token=AGENT_TOKEN) as url:
        trainer = gym.make(ENV_ID, remote=url, remote_token=TRAINER_TOKEN)
        agent = gym.make(ENV_ID, remote=url, remote_token=AGENT_TOKEN)
        trainer_seen = _remote_probe(trainer, task_id)([gold[0]])
        agent_seen = _remote_probe(agent, task_id)([gold[0]])
        trainer.close()
        agent.close()
        with pytest.raises(Exception, match="401"):
            httpx.get(url + "/health").raise_for_status()
    assert trainer_seen["reward_breakdown"]["verifier/precision"] == 1.0  # the trainer side sees everything
    assert "answer_missing_items" in trainer_seen["diagnosis"]["domain"]
    assert not says_in_gold(agent_seen)  # an agent let in with the agent token does not
