"""One served episode stream: an agentgym env behind OpenEnv's `Environment` interface, and the wire types.

The server (`agentgym.serving.server`) makes one `GymSession` per WebSocket connection or MCP session. A session
holds its own env instance (made with the served env id and arguments), so no client reaches another's state.
What a session sends back is what the local env returns from `reset` and `step` (observation text, reward,
terminated, truncated, info), with `info` as the session's role may see it (`agentgym.serving.roles`: whole for
the trainer, what an agent may know for anyone else); never the task object, its answer, solution or verifier
parameters.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any, Literal

import gymnasium as gym
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from agentgym.serving.roles import AGENT, info_for

logger = logging.getLogger(__name__)

# Exceptions whose message the client may read: they describe the client's own mistake (a step before reset, an
# unknown task id, a bad option). Anything else is a server fault, logged here and answered with its type only,
# so an error can never carry server-side state to the client.
CLIENT_ERRORS: tuple[type[Exception], ...] = (RuntimeError, KeyError, ValueError, TypeError, IndexError,
                                              gym.error.ResetNeeded)


CLOSED_BY_SERVER = ("this session was closed by the server (idle longer than the server's --idle-timeout, or "
                    "closed by its client)")


_SPEC_WRAPPERS = (gym.wrappers.OrderEnforcing, gym.wrappers.TimeLimit, gym.wrappers.PassiveEnvChecker)


COMPACT_KEY = "__agentgym_compact__"


class SessionError(Exception):
    """Raised to the transport with a message that is safe to show the client, prefixed by the error type
    (`RuntimeError: call reset() before step() ...`) so a remote client can raise the same type as the local
    env would."""


class GymAction(Action):  # type: ignore[misc]
    """What a client sends to `step`.

    - `{"action": ...}` (type "act", the default): one model turn, exactly what `env.step` takes locally: a
      string (parsed by the env) or structured tool calls (`{"name", "arguments"}` or a list of them).
    - `{"type": "call_tool", "tool_name": ..., "arguments": {...}}`: one tool call (OpenEnv's MCP action).
    - `{"type": "list_tools"}`: the tools, in MCP's shape (OpenEnv's MCP action); not a turn.
    """

    type: Literal["act", "call_tool", "list_tools"] = "act"
    action: str | dict[str, Any] | list[Any] | None = Field(
        default=None, description="One model turn: assistant text, or tool calls {name, arguments}")
    tool_name: str | None = Field(default=None, description="The tool to call (type call_tool)")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The tool's arguments (type call_tool)")

    @model_validator(mode="after")
    def _check_kind(self) -> GymAction:
        # PydanticCustomError rather than ValueError: openenv-core sends `errors()` as JSON, and a ValueError in
        # an error's context is not JSON (the session would end instead of answering).
        if self.type == "act" and self.action is None:
            raise PydanticCustomError("missing_action", "a step needs 'action': the model's turn as text or tool "
                                      'calls (e.g. {"action": {"name": "list_tables", "arguments": {}}})')
        if self.type == "call_tool" and not self.tool_name:
            raise PydanticCustomError("missing_tool_name", "a call_tool action needs 'tool_name' (and 'arguments')")
        return self


class GymObservation(Observation):  # type: ignore[misc]
    """What `reset` and `step` return: the env's observation text and info, as the local env returns them.

    `reward` and `done` travel beside it (OpenEnv's envelope); `done` is `terminated or truncated`.
    """

    text: str = Field(description="The new text the agent sees (the prompt after reset)")
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = Field(default_factory=dict, description="The env's info dict")


class GymToolCallObservation(GymObservation):
    """The answer to a `call_tool` action: OpenEnv's CallToolObservation fields plus the step's own."""

    tool_name: str
    result: Any = None
    error: dict[str, Any] | None = None


class GymToolListObservation(Observation):  # type: ignore[misc]
    """The answer to a `list_tools` action (OpenEnv's ListToolsObservation shape)."""

    tools: list[dict[str, Any]]


def mcp_tools(tool_schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI function schemas to MCP tool descriptions (name, description, inputSchema)."""
    tools = []
    for schema in tool_schemas:
        function = schema.get("function", schema)
        tools.append({"name": function["name"], "description": function.get("description", ""),
                      "inputSchema": function.get("parameters") or {"type": "object", "properties": {}}})
    return tools


class GymSession(Environment[GymAction, Observation, State]):  # type: ignore[misc]
    """One client's env, made with `gym.make(env_id, **env_args)` when the session opens.

    Called by openenv-core's server on the session's own thread (one thread per session), so the env is never
    stepped by two threads at once.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True  # every session builds its own env instance

    def __init__(self, env_id: str, env_args: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.env_id = env_id
        self._made: gym.Env[Any, Any] = gym.make(env_id, **dict(env_args or {}))
        # The wrappers Gymnasium adds from the env's spec (order check, time limit) are applied again around the
        # client's RemoteEnv by its own gym.make; stepping inside them here would apply them twice.
        env = self._made
        while isinstance(env, _SPEC_WRAPPERS):
            env = env.env
        self.env: gym.Env[Any, Any] = env
        self.episode_id: str | None = None
        self.turns = 0
        self.closed = False
        self.closed_reason = CLOSED_BY_SERVER
        self.tool_schemas: list[dict[str, Any]] = list(getattr(self.env.unwrapped, "tool_schemas", []))
        # Set by the server from the connection's token when the session opens (`agentgym.serving.roles`); a
        # session nobody set a role on gets the agent's view.
        self.role = AGENT

    # ----------------------------------------------------------------- OpenEnv's Environment interface
    def reset(self, seed: int | None = None, episode_id: str | None = None,
              options: dict[str, Any] | None = None, compact_info: bool = False, **unknown: Any) -> GymObservation:
        """Reset the env. With `compact_info` (what `RemoteEnv` asks for), each later answer carries only the
        messages the client does not hold yet and leaves out unchanged tool schemas (see `_wire_info`)."""
        self._check_open()
        if unknown:
            raise SessionError("TypeError: reset takes seed, options, episode_id and compact_info; unknown: "
                               f"{sorted(unknown)}")
        self.compact = bool(compact_info)
        self._held_messages: list[Any] = []
        self._held_tools: Any = None
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise SessionError(f"TypeError: seed must be an integer, got {type(seed).__name__}")
        if options is not None and not isinstance(options, dict):
            raise SessionError(f"TypeError: options must be an object, got {type(options).__name__}")
        text, info = self._guarded(lambda: self.env.reset(seed=seed, options=options))
        self.episode_id = episode_id or uuid.uuid4().hex
        self.turns = 0
        self.tool_schemas = list(info.get("tools", self.tool_schemas))
        return GymObservation(text=text, info=self._wire_info(info), done=False, reward=None)

    def step(self, action: GymAction, timeout_s: float | None = None, **unknown: Any) -> Observation:
        self._check_open()
        if action.type == "list_tools":
            return GymToolListObservation(tools=mcp_tools(self.tool_schemas))
        if action.type == "call_tool":
            observation = self.act({"name": action.tool_name, "arguments": action.arguments})
            return GymToolCallObservation(tool_name=str(action.tool_name), result=observation.text,
                                          **observation.model_dump(exclude={"metadata"}))
        return self.act(action.action)

    def act(self, action: Any) -> GymObservation:
        """One `env.step(action)`, as the local env takes it."""
        self._check_open()
        text, reward, terminated, truncated, info = self._guarded(lambda: self.env.step(action))
        self.turns += 1
        return GymObservation(text=text, reward=float(reward), terminated=bool(terminated),
                              truncated=bool(truncated), done=bool(terminated or truncated), info=self._wire_info(info))

    @property
    def state(self) -> State:
        return State(episode_id=self.episode_id, step_count=self.turns)

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(name=self.env_id, description=f"agentgym {self.env_id}")

    def close(self, reason: str | None = None) -> None:
        """Close the env (idempotent). Later calls answer `reason` (or `closed_reason`, which the server's idle
        reaper sets before closing)."""
        if self.closed:
            return
        self.closed = True
        if reason is not None:
            self.closed_reason = reason
        self._made.close()

    # ----------------------------------------------------------------- internals
    def _wire_info(self, info: dict[str, Any]) -> dict[str, Any]:
        """`info` as sent. In compact mode `info["messages"]` holds only the messages after those the client holds
        (when what it holds is still the start of the conversation), `info["tools"]` is left out when unchanged,
        and `info[COMPACT_KEY]` says so; `RemoteEnv` rebuilds the env's own info from it. This relies on an env
        never changing a message once it is in `info["messages"]` (ToolEnv only appends); a conversation that no
        longer starts with what the client holds is sent whole. Either way, `info` is first cut to what the
        session's role may see (`agentgym.serving.roles.info_for`)."""
        info = info_for(self.role, info)
        if not getattr(self, "compact", False):
            return info
        wire = dict(info)
        delta: dict[str, Any] = {}
        messages = info.get("messages")
        if isinstance(messages, list):
            held = self._held_messages
            if held and len(messages) >= len(held) and messages[: len(held)] == held:
                wire["messages"] = messages[len(held):]
                delta["messages_from"] = len(held)
            self._held_messages = list(messages)
        tools = info.get("tools")
        if tools is not None and self._held_tools is not None and (tools is self._held_tools or tools == self._held_tools):
            del wire["tools"]
            delta["tools_unchanged"] = True
        self._held_tools = tools
        delta["order"] = list(info)  # the env's own key order, which the client restores
        wire[COMPACT_KEY] = delta
        return wire

    def _check_open(self) -> None:
        if self.closed:
            raise SessionError(f"RuntimeError: {self.closed_reason}; open a new session")

    def _guarded(self, call: Any) -> Any:
        try:
            return call()
        except SessionError:
            raise
        except CLIENT_ERRORS as error:
            message = error.args[0] if isinstance(error, KeyError) and error.args else error
            raise SessionError(f"{type(error).__name__}: {message}") from None
        except Exception as error:
            logger.exception("%s session failed", self.env_id)
            raise SessionError(f"{type(error).__name__}: the environment failed on the server "
                               "(the server's log has the details)") from None
