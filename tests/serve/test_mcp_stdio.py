"""`agentgym mcp ENV` driven by the MCP SDK's own stdio client: tools, the task prompt, a scored submit."""

from __future__ import annotations

import sys
from typing import Any

import anyio
import gymnasium as gym
import pytest

import agentgym  # noqa: F401
from tests.serve.conftest import SERVE_EXTRA

mcp = pytest.importorskip("mcp", reason=SERVE_EXTRA)
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def _local(seed: int) -> tuple[Any, str, list[str], str]:
    env = gym.make("SQL-v0")
    prompt, info = env.reset(seed=seed)
    task = env.unwrapped.task
    names = [schema["function"]["name"] for schema in info["tools"]]
    listing = env.step({"name": "list_tables", "arguments": {}})[0]
    env.close()
    return task, prompt, names, listing


async def _episode(seed: int, calls: list[dict[str, Any]]) -> dict[str, Any]:
    parameters = StdioServerParameters(command=sys.executable,
                                       args=["-m", "agentgym.cli", "mcp", "SQL-v0", "--seed", str(seed)])
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        initialized = await session.initialize()
        tools = await session.list_tools()
        prompt = await session.get_prompt("task")
        results = [await session.call_tool(call["name"], call["arguments"]) for call in calls]
        return {"instructions": initialized.instructions, "tools": tools.tools, "prompt": prompt, "results": results}


def test_mcp_stdio_episode_with_the_sdk_client() -> None:
    seed = 6
    task, prompt, names, listing = _local(seed)
    calls = [{"name": "list_tables", "arguments": {}}, {"name": "describe_table", "arguments": {"table": 5}},
             *task.solution, {"name": "list_tables", "arguments": {}}]
    got = anyio.run(_episode, seed, calls)
    assert got["instructions"] == prompt
    assert [tool.name for tool in got["tools"]] == names
    assert got["prompt"].messages[0].content.text == prompt
    first, bad, *solving, after = got["results"]
    assert first.content[0].text == listing and not first.is_error
    assert bad.is_error and "Error" in bad.content[0].text  # the env's own argument error, as a turn
    final = solving[-1]
    assert final.structured_content["terminated"] is True and final.structured_content["reward"] == 1.0
    assert "Episode over (submitted): score 1" in final.content[0].text
    assert after.is_error and "episode is over" in after.content[0].text


def test_mcp_stdio_wrong_submission_scores_zero() -> None:
    task, *_ = _local(1)
    submit = next(step for step in task.solution if step["name"].startswith("submit"))
    wrong = {"name": submit["name"], "arguments": {key: "SELECT 1" if key == "sql" else "0"
                                                   for key in submit["arguments"]}}
    got = anyio.run(_episode, 1, [wrong])
    result = got["results"][0]
    assert result.structured_content["terminated"] is True and result.structured_content["reward"] == 0.0


def test_mcp_command_reports_an_unknown_env_clearly() -> None:
    import subprocess

    done = subprocess.run([sys.executable, "-m", "agentgym.cli", "mcp", "NoSuch-v0"], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL, check=False)
    assert done.returncode != 0
    assert "unknown environment 'NoSuch-v0'; registered:" in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""  # stdout is the MCP channel: nothing but protocol may go there
