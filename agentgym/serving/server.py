"""`agentgym serve`: any registered env over OpenEnv's wire protocol, built on openenv-core's own server.

openenv-core's `HTTPEnvServer` provides the protocol: WebSocket `/ws` (one env per connection: reset, step,
state, close), HTTP `/reset` `/state` `/schema` `/metadata`. This module adds what a shared server needs:

- a bearer token (`--token` / `AGENTGYM_SERVE_TOKEN`) checked on every HTTP request and WebSocket handshake, and
  roles (`agentgym.serving.roles`): the token's holder is the trainer and receives the env's whole `info`; every
  other client (let in with `--agent-token`, or on a server without a token) receives what an agent may know;
- a "busy" answer beyond `--max-sessions`, and idle sessions closed after `--idle-timeout` seconds;
- `/health` with the sessions, the data being served and the sandbox pools in use;
- `/mcp`: MCP JSON-RPC (initialize, tools/list, tools/call) on sessions made with `openenv/session/create`;
- JSON errors for bad input everywhere, and no server-side detail in them (see `session.CLIENT_ERRORS`).

A client reaches only the session it opened: session ids are random and never listed, and every session has
its own env instance. Nothing a response carries comes from the task beyond what the local env shows.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import sys
import time
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from openenv.core.env_server.exceptions import SessionCapacityError
from openenv.core.env_server.http_server import HTTPEnvServer
from openenv.core.env_server.types import ConcurrencyConfig, EnvironmentMetadata, State
from starlette.websockets import WebSocketDisconnect

from agentgym.serving.roles import TOKEN_VARIABLE, RoleMiddleware, current_role
from agentgym.serving.session import GymAction, GymObservation, GymSession, SessionError, mcp_tools

logger = logging.getLogger(__name__)

__all__ = ["TOKEN_VARIABLE", "AgentGymEnvServer", "ServeConfig", "build_app", "serve"]
MCP_PROTOCOL_VERSION = "2025-06-18"
_SECRET_WORDS = ("password", "secret", "token", "key", "dsn", "credential")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass
class ServeConfig:
    """How one env is served.

    Attributes:
        env_id: A registered env id (plugins included), such as "SQL-v0".
        env_args: Keyword arguments for `gym.make(env_id, ...)`, the same for every session.
        max_sessions: Sessions open at once (WebSocket and MCP together); one more is answered "busy".
        idle_timeout: Seconds without a message after which a session is closed; None keeps them open.
        token: The trainer's token. When set, every request must carry `Authorization: Bearer TOKEN` (or the
            agent token), and its holder receives the env's whole `info` (docs/serving.md).
        agent_token: When set, a request carrying it is let in as an agent: it receives only what an agent may
            know (`agentgym.serving.roles.agent_info`), as every client of a server without tokens does.
        workers: Server processes sharing the port (`agentgym serve --workers`); each holds its own sessions, so
            `max_sessions` holds per worker. `/health` reports it with the answering process's pid.
    """

    env_id: str
    env_args: dict[str, Any] = field(default_factory=dict)
    max_sessions: int = 64
    idle_timeout: float | None = 600.0
    token: str | None = None
    workers: int = 1
    agent_token: str | None = None

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if self.max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {self.max_sessions}")
        if self.idle_timeout is not None and self.idle_timeout <= 0:
            raise ValueError(f"idle_timeout must be positive (or None), got {self.idle_timeout}")
        if self.token is not None and not self.token.strip():
            raise ValueError("the token is empty; pass a non-empty --token or unset it")
        if self.agent_token is not None and not self.agent_token.strip():
            raise ValueError("the agent token is empty; pass a non-empty --agent-token or unset it")
        if self.agent_token is not None and self.agent_token == self.token:
            raise ValueError("the agent token is the trainer's token; give agents a token of their own")


class PinnedThread(ThreadPoolExecutor):
    """One worker thread that several sessions share for the life of the server (openenv-core's per-session
    shutdown calls are ignored; `stop` ends it)."""

    def __init__(self, index: int) -> None:
        super().__init__(max_workers=1, thread_name_prefix=f"agentgym-session-{index}")
        self.sessions = 0

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        return None

    def stop(self) -> None:
        super().shutdown(wait=False, cancel_futures=True)


def session_threads(cpus: int | None = None) -> int:
    """Worker threads for env calls: enough that a slow step (a long query, a sandbox command) holds up only the
    few sessions pinned to its thread, few enough that hundreds of sessions do not thrash the GIL."""
    return min(32, max(4, 4 * (cpus or os.cpu_count() or 1)))


class AgentGymEnvServer(HTTPEnvServer):  # type: ignore[misc]
    """openenv-core's server with a "busy" message that says what to do, an idle reaper that closes a session's
    env with a reason its client is told on the next call, and env calls on a fixed set of threads.

    openenv-core gives every session its own thread; with hundreds of sessions that many threads contend for the
    GIL and the event loop starves (p99 step latency near a second at 256 sessions on 2 cores). Here each session
    is pinned to one of `session_threads()` threads, chosen least-loaded when it opens: its env is made, stepped
    and closed on that one thread, as openenv-core guarantees, and sessions on other threads go on when one is
    slow.
    """

    def __init__(self, *args: Any, threads: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pinned = [PinnedThread(index) for index in range(threads or session_threads())]
        self._pinned_of: dict[str, PinnedThread] = {}

    async def _create_session(self) -> tuple[str, Any]:
        # openenv-core hands a new session `_shared_session_executor` when it is set; point it at the least
        # loaded thread just before (two sessions opening at once may land on the same thread: harmless).
        thread = min(self._pinned, key=lambda candidate: candidate.sessions)
        self._shared_session_executor = thread
        try:
            session_id, env = await super()._create_session()
        except SessionCapacityError as error:
            raise SessionCapacityError(
                error.active_sessions, error.max_sessions,
                message=(f"server busy: {error.active_sessions} of {error.max_sessions} sessions are in use "
                         "(the server's --max-sessions); close a session or retry later"),
            ) from None
        if isinstance(env, GymSession):
            env.role = current_role.get()  # the role of the connection that opened it (RoleMiddleware)
        pinned = self._session_executors.get(session_id)
        if isinstance(pinned, PinnedThread):
            pinned.sessions += 1
            self._pinned_of[session_id] = pinned
        return session_id, env

    async def _destroy_session(self, session_id: str) -> None:
        await super()._destroy_session(session_id)
        pinned = self._pinned_of.pop(session_id, None)
        if pinned is not None:
            pinned.sessions -= 1

    def stop_threads(self) -> None:
        for thread in self._pinned:
            thread.stop()

    async def _reap_idle_sessions(self) -> None:
        timeout = self._session_idle_timeout_s
        if timeout is None:
            return
        interval = min(max(timeout / 4, 0.1), 5.0)
        while True:
            await asyncio.sleep(interval)
            now = time.time()
            stale = [sid for sid, info in list(self._session_info.items()) if now - info.last_activity_at > timeout]
            for session_id in stale:
                info = self._session_info.get(session_id)
                if info is None or time.time() - info.last_activity_at <= timeout:
                    continue
                env = self._sessions.get(session_id)
                if isinstance(env, GymSession):
                    env.closed_reason = f"this session was closed after {timeout:g} s without a message"
                logger.info("closing session %s: idle for more than %g s", session_id[:8], timeout)
                await self._destroy_session(session_id)

    # Used by the /mcp routes below.
    def session(self, session_id: Any) -> GymSession | None:
        env = self._sessions.get(session_id) if isinstance(session_id, str) else None
        return env if isinstance(env, GymSession) else None

    async def run_in_session(self, session_id: str, call: Callable[[], Any]) -> Any:
        self._update_session_activity(session_id, increment_step=True)
        try:
            return await self._run_in_session_executor(session_id, call)
        finally:
            self._update_session_activity(session_id)


class QuietDisconnectMiddleware:
    """openenv-core closes a WebSocket after its session ends and expects only RuntimeError when the client has
    gone already; Starlette raises WebSocketDisconnect there. The client left: nothing to report, no traceback."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        try:
            await self.app(scope, receive, send)
        except WebSocketDisconnect:
            return


def _rpc_result(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _rpc_error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def _public_args(env_args: dict[str, Any]) -> dict[str, Any]:
    return {key: ("<hidden>" if any(word in key.lower() for word in _SECRET_WORDS) else value)
            for key, value in env_args.items()}


def sandbox_pools() -> list[dict[str, Any]]:
    """The warm sandbox pools this process holds (`agentgym.sandbox.pool.pool_stats`; none until an env has
    asked for one). The pool module is imported only by envs that use sandboxes, so an env without any does not
    load it here."""
    pool_module = sys.modules.get("agentgym.sandbox.pool")
    if pool_module is None:
        return []
    return [dict(stats) for stats in pool_module.pool_stats()]


def public_tasks(probe: GymSession) -> dict[str, Any]:
    """The served tasks as a client may see them: id, family, split and difficulty (what every episode's `info`
    shows anyway), never a prompt's answer, a solution or verifier parameters; and the env's turn limit."""
    inner = probe.env.unwrapped
    task_set = getattr(inner, "task_set", None) or []
    return {"max_turns": getattr(inner, "max_turns", None),
            "tasks": [{"id": task.id, "family": task.family, "split": task.split, "difficulty": task.difficulty}
                      for task in task_set]}


def describe_data(probe: GymSession, env_args: dict[str, Any]) -> dict[str, Any]:
    """What the served env is made of: its tasks (by split and family), its arguments and, when the env offers
    `data_summary()`, its own description of the data (a store path, databases)."""
    inner = probe.env.unwrapped
    data: dict[str, Any] = {"env_args": _public_args(env_args)}
    task_set = getattr(inner, "task_set", None)
    if task_set is not None:
        data.update(tasks=len(task_set), splits=task_set.counts("split"), families=task_set.counts("family"))
    max_turns = getattr(inner, "max_turns", None)
    if max_turns is not None:
        data["max_turns"] = max_turns
    summary = getattr(inner, "data_summary", None)
    if callable(summary):
        data["summary"] = summary()
    return data


def build_app(config: ServeConfig) -> FastAPI:
    """The FastAPI app serving `config.env_id`. Makes one env first, so bad arguments fail here, clearly."""
    import agentgym  # noqa: F401  (registers every plugin's envs)
    from agentgym.registry import env_record

    env_record(config.env_id)  # KeyError listing the registered ids
    probe = GymSession(config.env_id, config.env_args)
    try:
        tool_schemas = probe.tool_schemas
        data = describe_data(probe, config.env_args)
        tasks = public_tasks(probe)
    finally:
        probe.close()
    metadata = EnvironmentMetadata(name=config.env_id, description=f"agentgym {config.env_id} served over OpenEnv",
                                   version=_version())
    server = AgentGymEnvServer(
        functools.partial(GymSession, config.env_id, config.env_args), GymAction, GymObservation,
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=config.max_sessions,
                                             session_timeout=config.idle_timeout),
        threads=max(4, session_threads() // config.workers),  # the workers share the machine's cores
    )
    app = FastAPI(title=f"agentgym {config.env_id}", version=_version(),
                  description="An agentgym environment over OpenEnv's protocol: WebSocket /ws, MCP /mcp.")
    app.state.server = server
    app.state.config = config

    # These routes come first, so they answer before openenv-core's routes of the same path.
    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "healthy", "env": config.env_id,
                "sessions": {"active": server.active_sessions, "max": config.max_sessions,
                             "idle_timeout_s": config.idle_timeout},
                "worker": {"pid": os.getpid(), "workers": config.workers},
                "data": data, "sandbox": {"pools": sandbox_pools()}}

    @app.get("/tasks")
    async def get_tasks() -> dict[str, Any]:
        return tasks

    @app.get("/metadata")
    async def get_metadata() -> dict[str, Any]:
        return dict(metadata.model_dump())

    @app.get("/schema")
    async def get_schema() -> dict[str, Any]:
        return {"action": GymAction.model_json_schema(), "observation": GymObservation.model_json_schema(),
                "state": State.model_json_schema(), "tools": tool_schemas}

    @app.post("/step")
    async def stateless_step() -> JSONResponse:
        return JSONResponse(status_code=409, content={"error": (
            "HTTP /step has no session to step: an episode lives on a WebSocket connection to /ws (reset, then "
            "step), or on an MCP session at /mcp (openenv/session/create, then tools/call)")})

    @app.post("/mcp")
    async def mcp(request: Request) -> Response:
        answer = await _mcp_answer(server, tool_schemas, await request.body())
        return Response(status_code=202) if answer is None else JSONResponse(answer)  # 202: a notification

    @app.exception_handler(SessionError)
    async def session_error(request: Request, error: SessionError) -> JSONResponse:
        return JSONResponse(status_code=400, content={"error": str(error)})

    server.register_routes(app)
    app.router.on_shutdown.append(_async(server.stop_threads))
    app.add_middleware(QuietDisconnectMiddleware)
    app.add_middleware(RoleMiddleware, trainer_token=config.token, agent_token=config.agent_token)
    return app


async def _mcp_answer(server: AgentGymEnvServer, tool_schemas: list[dict[str, Any]], body: bytes) -> Any:
    """One MCP JSON-RPC request to its response (a dict; `None` for a notification)."""
    try:
        request = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        return _rpc_error(None, -32700, f"parse error: the body is not JSON ({error})")
    if not isinstance(request, dict) or request.get("jsonrpc") != "2.0" or not isinstance(request.get("method"), str):
        return _rpc_error(None, -32600, 'invalid request: send one JSON-RPC 2.0 object '
                                        '{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}')
    request_id, method = request.get("id"), request["method"]
    params = request.get("params") or {}
    if not isinstance(params, dict):
        return _rpc_error(request_id, -32602, "params must be an object")
    if method.startswith("notifications/"):
        return None
    if method == "initialize":
        return _rpc_result(request_id, {"protocolVersion": params.get("protocolVersion", MCP_PROTOCOL_VERSION),
                                        "capabilities": {"tools": {"listChanged": False}},
                                        "serverInfo": {"name": "agentgym", "version": _version()}})
    if method == "ping":
        return _rpc_result(request_id, {})
    if method == "tools/list":
        return _rpc_result(request_id, {"tools": mcp_tools(tool_schemas)})
    if method == "openenv/session/create":
        return await _mcp_create_session(server, request_id, params)
    if method == "openenv/session/close":
        session_id = params.get("session_id")
        if not isinstance(session_id, str) or server.session(session_id) is None:
            return _rpc_error(request_id, -32602, f"unknown session_id {str(session_id)[:80]!r}")
        await server._destroy_session(session_id)
        return _rpc_result(request_id, {"session_id": session_id, "closed": True})
    if method == "tools/call":
        return await _mcp_call(server, request_id, params)
    return _rpc_error(request_id, -32601, f"method not found: {method[:80]!r}; this server answers initialize, "
                                          "tools/list, tools/call, openenv/session/create, openenv/session/close")


async def _mcp_create_session(server: AgentGymEnvServer, request_id: Any, params: dict[str, Any]) -> Any:
    try:
        session_id, env = await server._create_session()
    except SessionCapacityError as error:
        return _rpc_error(request_id, -32000, str(error),
                          {"active_sessions": error.active_sessions, "max_sessions": error.max_sessions})
    assert isinstance(env, GymSession)
    try:
        observation = await server.run_in_session(
            session_id, lambda: env.reset(seed=params.get("seed"), options=params.get("options")))
    except SessionError as error:
        await server._destroy_session(session_id)
        return _rpc_error(request_id, -32602, str(error))
    return _rpc_result(request_id, {"session_id": session_id, "observation": observation.text,
                                    "info": observation.info})


async def _mcp_call(server: AgentGymEnvServer, request_id: Any, params: dict[str, Any]) -> Any:
    name, arguments = params.get("name"), params.get("arguments") or {}
    session_id = params.get("session_id")
    if not isinstance(name, str) or not name:
        return _rpc_error(request_id, -32602, "tools/call needs params.name (a tool from tools/list)")
    if not isinstance(arguments, dict):
        return _rpc_error(request_id, -32602, "params.arguments must be an object")
    env = server.session(session_id)
    if env is None or not isinstance(session_id, str):
        return _rpc_error(request_id, -32602, "tools/call needs the params.session_id of an open session: call "
                                              "openenv/session/create first (sessions close after the idle timeout)")
    try:
        observation = await server.run_in_session(
            session_id, lambda: env.act({"name": name, "arguments": arguments}))
    except SessionError as error:
        return _rpc_error(request_id, -32000, str(error))
    return _rpc_result(request_id, tool_call_result(observation))


def tool_call_result(observation: GymObservation) -> dict[str, Any]:
    """A step's outcome as MCP's CallToolResult; `data` is the text, for openenv-core's MCP client."""
    failed = "call_error" in observation.info
    return {"content": [{"type": "text", "text": observation.text}], "isError": failed, "data": observation.text,
            "structuredContent": {"observation": observation.text, "reward": observation.reward,
                                  "terminated": observation.terminated, "truncated": observation.truncated,
                                  "reward_breakdown": observation.info.get("reward_breakdown", {})}}


def _async(function: Callable[[], None]) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        function()
    return run


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("agentgym-core")
    except metadata.PackageNotFoundError:
        return "0"


def serve(config: ServeConfig, *, host: str = "127.0.0.1", port: int = 8000, log_level: str = "warning",
          on_ready: Callable[[str], None] | None = None) -> None:
    """Serve until interrupted. `on_ready(url)` is called once the socket listens."""
    import uvicorn

    app = build_app(config)
    uvicorn_config = uvicorn.Config(app, host=host, port=port, log_level=log_level, ws="websockets-sansio",
                                    lifespan="on", timeout_graceful_shutdown=5)
    server = uvicorn.Server(uvicorn_config)

    if on_ready is not None:
        async def announce() -> None:
            async def wait_until_listening() -> None:
                while not server.started:
                    await asyncio.sleep(0.02)
                sockets = [sock for listener in server.servers for sock in listener.sockets]
                bound = sockets[0].getsockname()[1] if sockets else port
                on_ready(f"ws://{host}:{bound}")
            asyncio.get_running_loop().create_task(wait_until_listening())

        app.router.on_startup.append(announce)

    server.run()
