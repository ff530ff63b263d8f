"""`agentgym mcp ENV`: one episode's tools as an MCP server over stdio, with the official `mcp` SDK.

The env is made and reset when the server starts. Its tools are the MCP tools (same names, descriptions and JSON
schemas); each `tools/call` is one `env.step({"name", "arguments"})`, so bad arguments come back as the env's own
error observation and count as a turn, as they do locally. The task's prompt is the server's instructions and the
`task` prompt. `submit` ends the episode: its result carries the score, and later calls are refused. The client
is an agent: results carry what an agent may know (`agentgym.serving.roles.agent_info`), never the verifier's
per-answer details.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import gymnasium as gym
from mcp import types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server

from agentgym.serving.roles import agent_info

TASK_PROMPT = "task"


class McpEpisode:
    """The env behind the MCP server. Every env call runs on one worker thread (the env is made there too), so an
    env whose connections are tied to their thread works, and the event loop never blocks on a tool."""

    def __init__(self, env_id: str, env_args: dict[str, Any] | None = None, *, seed: int | None = None,
                 options: dict[str, Any] | None = None) -> None:
        self.env_id = env_id
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentgym-mcp")
        self.env, self.prompt, info = self._worker.submit(self._start, env_args or {}, seed, options).result()
        self.task_id = str(info.get("task_id", ""))
        self.tool_schemas: list[dict[str, Any]] = list(info.get("tools", []))
        self.done = False
        self.final: dict[str, Any] = {}

    def _start(self, env_args: dict[str, Any], seed: int | None,
               options: dict[str, Any] | None) -> tuple[gym.Env[Any, Any], str, dict[str, Any]]:
        import agentgym  # noqa: F401  (registers every plugin's envs)
        from agentgym.registry import env_record

        env_record(self.env_id)  # a KeyError that lists the registered ids
        env = gym.make(self.env_id, **env_args)
        prompt, info = env.reset(seed=seed, options=options)
        return env, prompt, info

    def tools(self) -> list[types.Tool]:
        tools = []
        for schema in self.tool_schemas:
            function = schema.get("function", schema)
            tools.append(types.Tool(name=function["name"], description=function.get("description", ""),
                                    input_schema=function.get("parameters") or {"type": "object", "properties": {}}))
        return tools

    async def call(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        if self.done:
            return _result(f"Error: the episode is over (reward {self.final.get('reward', 0.0):g}); start the "
                           "server again for a new episode.", error=True, structured=self.final)
        loop = asyncio.get_running_loop()
        action = {"name": name, "arguments": dict(arguments or {})}
        text, reward, terminated, truncated, info = await loop.run_in_executor(self._worker, self.env.step, action)
        failed = "call_error" in info
        info = agent_info(info)
        structured = {"reward": float(reward), "terminated": bool(terminated), "truncated": bool(truncated),
                      "turn": info.get("turn"), "reward_breakdown": info.get("reward_breakdown", {})}
        if terminated or truncated:
            self.done, self.final = True, structured
            how = "submitted" if terminated else "stopped at the turn limit"
            text = f"{text}\n\nEpisode over ({how}): score {info.get('reward_breakdown', {}).get('answer', 0.0):g}, " \
                   f"reward {float(reward):g}."
        return _result(text, error=failed, structured=structured)

    def close(self) -> None:
        self._worker.submit(self.env.close).result()
        self._worker.shutdown(wait=True)


def _result(text: str, *, error: bool, structured: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error,
                                structured_content=structured)


def build_server(episode: McpEpisode) -> Server[Any]:
    """The MCP server answering tools/list, tools/call and the `task` prompt for `episode`."""

    async def list_tools(context: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=episode.tools())

    async def call_tool(context: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        return await episode.call(params.name, params.arguments)

    async def list_prompts(context: ServerRequestContext[Any], params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[types.Prompt(name=TASK_PROMPT, description=f"The task of this "
                                                             f"{episode.env_id} episode ({episode.task_id})")])

    async def get_prompt(context: ServerRequestContext[Any], params: types.GetPromptRequestParams) -> types.GetPromptResult:
        if params.name != TASK_PROMPT:
            raise ValueError(f"unknown prompt {params.name!r}; this server has one prompt, {TASK_PROMPT!r}")
        return types.GetPromptResult(description=f"{episode.env_id} task {episode.task_id}", messages=[
            types.PromptMessage(role="user", content=types.TextContent(type="text", text=episode.prompt))])

    return Server(f"agentgym-{episode.env_id}", instructions=episode.prompt, on_list_tools=list_tools,
                  on_call_tool=call_tool, on_list_prompts=list_prompts, on_get_prompt=get_prompt)


def run_stdio(env_id: str, *, env_args: dict[str, Any] | None = None, seed: int | None = None,
              options: dict[str, Any] | None = None) -> None:
    """Serve one episode of `env_id` over stdin/stdout until the client disconnects."""
    episode = McpEpisode(env_id, env_args, seed=seed, options=options)
    server = build_server(episode)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        episode.close()
