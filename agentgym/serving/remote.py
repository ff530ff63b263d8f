"""`RemoteEnv`: a Gymnasium env whose episodes run on an `agentgym serve` server.

`gym.make("SQL-v0", remote="ws://host:port")` returns one. Its `reset`, `step`, `info`, rewards and `close` are
those of the served env: the server steps its own env instance for this connection and sends back exactly what
that env returned. The connection speaks OpenEnv's WebSocket protocol, so any OpenEnv server of an agentgym env
works. Only `websockets` and `httpx` are needed on this side.
"""

from __future__ import annotations

import builtins
import json
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import gymnasium as gym
import gymnasium.error
import httpx
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException
from websockets.sync.client import ClientConnection, connect

from agentgym.spaces import UnicodeText

if TYPE_CHECKING:
    from agentgym.tasks import Task, TaskSet

logger = logging.getLogger(__name__)
TOKEN_VARIABLE = "AGENTGYM_SERVE_TOKEN"
COMPACT_KEY = "__agentgym_compact__"  # agentgym.serving.session.COMPACT_KEY (that module needs openenv-core)
# Errors the server reports with their type (see agentgym.serving.session): raised here as the same type.
_RAISED_AS: dict[str, type[Exception]] = {
    **{name: getattr(builtins, name) for name in ("RuntimeError", "KeyError", "ValueError", "TypeError", "IndexError")},
    "ResetNeeded": gymnasium.error.ResetNeeded,
}


class RemoteEnvError(ConnectionError):
    """The server could not be reached, refused the connection, or answered something that is not the protocol."""


@dataclass(frozen=True)
class TaskSummary:
    """A served task as a client sees it (`GET /tasks`): what every episode's `info` shows, no gold."""

    id: str
    family: str
    split: str
    difficulty: str


class ServedTasks(Sequence[TaskSummary]):
    """The tasks a server serves, with the part of `TaskSet`'s interface that needs no gold: `splits`,
    `families`, `counts` and `filter` (an empty result is an error listing what exists, as for `TaskSet`)."""

    def __init__(self, tasks: Sequence[TaskSummary]) -> None:
        self._tasks = tuple(tasks)

    def __len__(self) -> int:
        return len(self._tasks)

    def __getitem__(self, index: int) -> TaskSummary:  # type: ignore[override]
        return self._tasks[index]

    def __iter__(self) -> Iterator[TaskSummary]:
        return iter(self._tasks)

    def splits(self) -> set[str]:
        return {task.split for task in self._tasks}

    def families(self) -> set[str]:
        return {task.family for task in self._tasks}

    def counts(self, key: str = "family") -> dict[str, int]:
        result: dict[str, int] = {}
        for task in self._tasks:
            result[str(getattr(task, key))] = result.get(str(getattr(task, key)), 0) + 1
        return dict(sorted(result.items()))

    def filter(self, *, split: str | None = None, families: Sequence[str] | None = None) -> ServedTasks:
        chosen = [task for task in self._tasks
                  if (split is None or task.split == split) and (not families or task.family in families)]
        if not chosen:
            raise ValueError(f"the server has no tasks of split={split!r} families={list(families or [])!r}; "
                             f"splits: {sorted(self.splits())}; families: {sorted(self.families())}")
        return ServedTasks(chosen)


def check_server(url: str, *, token: str | None = None, timeout: float = 10.0) -> dict[str, Any]:
    """Ask the server at `url` for its `/health` and return it; a missing server or a refused token raises
    `RemoteEnvError` with one line naming the URL and the fix. `token` defaults to `AGENTGYM_SERVE_TOKEN`."""
    http_url = server_urls(url)[0]
    token = token if token is not None else os.environ.get(TOKEN_VARIABLE) or None
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        response = httpx.get(http_url + "/health", headers=headers, timeout=timeout)
    except httpx.HTTPError as error:
        raise RemoteEnvError(f"no agentgym server answers at {http_url}/health ({error}); start one with "
                             "`agentgym serve ENV --port PORT`, or fix the URL") from None
    if response.status_code == 401:
        fix = "pass the server's token" if token else f"this server needs a token: pass --token or set {TOKEN_VARIABLE}"
        raise RemoteEnvError(f"{http_url} refused {'the token' if token else 'the request'} (HTTP 401): {fix}")
    try:
        health = response.json() if response.status_code == 200 else None
    except ValueError:
        health = None
    if not isinstance(health, dict) or "env" not in health:
        raise RemoteEnvError(f"{http_url}/health answered HTTP {response.status_code}, not an agentgym server's "
                             "health; check the URL (agentgym serve prints it)")
    return health


_LOCAL_TASKS: dict[str, TaskSet | None] = {}
_LOCAL_TASKS_LOCK = threading.Lock()


def local_tasks(env_id: str) -> TaskSet:
    """This machine's copy of `env_id`'s tasks (`gym.make(env_id)` here, with its registered defaults; made once
    per process). Raises `RemoteEnvError` saying why when the env cannot be made here."""
    with _LOCAL_TASKS_LOCK:
        if env_id not in _LOCAL_TASKS:
            import agentgym  # noqa: F401  (registers every plugin's envs)

            try:
                env = gym.make(env_id)
            except (gymnasium.error.Error, KeyError, ValueError, TypeError, OSError) as error:
                logger.warning("no local copy of %s's tasks: %s", env_id, error)
                _LOCAL_TASKS[env_id] = None
            else:
                _LOCAL_TASKS[env_id] = getattr(env.unwrapped, "task_set", None)
                env.close()
        tasks = _LOCAL_TASKS[env_id]
    if tasks is None:
        raise RemoteEnvError(f"{env_id} cannot be made on this machine, so its tasks' gold is not here: a "
                             "privileged agent (the oracle) needs the env's tasks installed where it runs")
    return tasks


def server_urls(url: str) -> tuple[str, str]:
    """(http base, ws endpoint) for "ws://h:p", "http://h:p", "h:p", with or without a trailing /ws."""
    if "://" not in url:
        url = "ws://" + url
    parts = urlsplit(url)
    scheme = {"ws": "ws", "http": "ws", "wss": "wss", "https": "wss"}.get(parts.scheme)
    if scheme is None or not parts.hostname:
        raise ValueError(f"remote={url!r} is not a server address; use ws://HOST:PORT (as printed by agentgym serve)")
    path = parts.path.rstrip("/")
    path = path.removesuffix("/ws")
    netloc = parts.hostname if parts.port is None else f"{parts.hostname}:{parts.port}"
    if ":" in parts.hostname:  # IPv6
        netloc = f"[{parts.hostname}]" + ("" if parts.port is None else f":{parts.port}")
    http = urlunsplit(("http" if scheme == "ws" else "https", netloc, path, "", ""))
    return http, urlunsplit((scheme, netloc, path + "/ws", "", ""))


class RemoteEnv(gym.Env[str, Any]):
    """An env served by `agentgym serve`, used as if it were local.

    Args:
        url: The server, "ws://HOST:PORT" (http:// works too).
        env_id: When given, the server must serve this env id (checked at connect, so a client never trains on
            the wrong env by mistake).
        token: The server's bearer token; by default `AGENTGYM_SERVE_TOKEN`.
        connect_timeout: Seconds to wait for the server to accept.
        message_timeout: Seconds to wait for one answer (a reset or a step, sandbox commands included).

    Raises:
        RemoteEnvError: the server is not there, refused the token, is busy, or serves another env.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 (Gymnasium's convention)

    def __init__(self, url: str, *, env_id: str | None = None, token: str | None = None,
                 connect_timeout: float = 10.0, message_timeout: float = 600.0) -> None:
        self.url = url
        self.http_url, self.ws_url = server_urls(url)
        token = token if token is not None else os.environ.get(TOKEN_VARIABLE) or None
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.message_timeout = message_timeout
        self.observation_space = UnicodeText()
        self.action_space = UnicodeText()
        self._connect_timeout = connect_timeout
        self._tool_schemas: list[dict[str, Any]] | None = None
        self._listing: dict[str, Any] | None = None
        self._task_id: str | None = None
        self._messages: list[Any] = []  # the conversation so far, rebuilt from the server's compact info
        self._tools: Any = None
        self._order: list[str] = []
        self._connection: ClientConnection | None = None
        self._stack = ExitStack()
        self._closed = False
        self.server_env_id = self._check_server(env_id, connect_timeout)
        try:
            self._connection = self._stack.enter_context(connect(
                self.ws_url, additional_headers=self._headers, open_timeout=connect_timeout, max_size=None,
                compression=None))
        except InvalidStatus as error:
            raise RemoteEnvError(f"{self.ws_url} refused the session: HTTP {error.response.status_code}") from None
        except (OSError, WebSocketException, TimeoutError) as error:
            raise RemoteEnvError(f"could not open a session at {self.ws_url}: {error}") from None

    def _check_server(self, env_id: str | None, timeout: float) -> str:
        try:
            response = httpx.get(self.http_url + "/metadata", headers=self._headers, timeout=timeout)
        except httpx.HTTPError as error:
            raise RemoteEnvError(f"no agentgym server answers at {self.http_url} ({error}); start one with "
                                 f"`agentgym serve {env_id or 'ENV'} --port PORT`") from None
        if response.status_code == 401:
            raise RemoteEnvError(f"{self.http_url} refused the token: pass token=... or set {TOKEN_VARIABLE}")
        if response.status_code != 200:
            raise RemoteEnvError(f"{self.http_url}/metadata answered HTTP {response.status_code}")
        served = str(response.json().get("name", ""))
        if env_id is not None and served.split(":")[-1] != env_id.split(":")[-1]:
            raise RemoteEnvError(f"the server at {self.url} serves {served!r}, not {env_id!r}")
        return served

    # ----------------------------------------------------------------- what a local env offers besides the API
    @property
    def tool_schemas(self) -> list[dict[str, Any]]:
        """The env's tool schemas (the last episode's, else the server's `/schema`)."""
        if self._tool_schemas is None:
            self._tool_schemas = list(self._get("/schema").get("tools") or [])
        return self._tool_schemas

    @property
    def task_set(self) -> ServedTasks:
        """The tasks the server serves (id, family, split, difficulty; never their gold)."""
        return ServedTasks([TaskSummary(**task) for task in self._served_listing()["tasks"]])

    @property
    def max_turns(self) -> int:
        """The served env's turn limit."""
        return int(self._served_listing()["max_turns"] or 0)

    @property
    def task(self) -> Task | None:
        """This machine's copy of the current episode's task (None before the first reset).

        The server never sends a task's answer or solution. The eval harness hands a privileged agent (the
        oracle) its task, so against a served env the task comes from the env's tasks on this machine
        (`local_tasks`), found by the id the server reported: it is None when this machine cannot make the env
        or lacks that task, and when the two sides' data differ the oracle's replay simply fails to score.
        """
        if self._task_id is None:
            return None
        try:
            tasks = local_tasks(self.server_env_id)
            return tasks.get(self._task_id)
        except (RemoteEnvError, KeyError):
            return None

    def _served_listing(self) -> dict[str, Any]:
        if self._listing is None:
            self._listing = self._get("/tasks")
        return self._listing

    def _get(self, path: str) -> dict[str, Any]:
        try:
            response = httpx.get(self.http_url + path, headers=self._headers, timeout=self._connect_timeout)
        except httpx.HTTPError as error:
            raise RemoteEnvError(f"{self.http_url}{path} did not answer ({error})") from None
        if response.status_code != 200:
            raise RemoteEnvError(f"{self.http_url}{path} answered HTTP {response.status_code} (an agentgym serve "
                                 "older than this client does not list its tasks: upgrade the server)")
        answer = response.json()
        if not isinstance(answer, dict):
            raise RemoteEnvError(f"{self.http_url}{path} did not answer a JSON object")
        return answer

    # ----------------------------------------------------------------- the Gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        data: dict[str, Any] = {"compact_info": True}
        if seed is not None:
            data["seed"] = seed
        if options is not None:
            data["options"] = options
        self._messages, self._tools, self._task_id = [], None, None
        observation = self._exchange({"type": "reset", "data": data})
        task_id = observation["info"].get("task_id")
        self._task_id = task_id if isinstance(task_id, str) else None
        return observation["text"], observation["info"]

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        payload = self._exchange({"type": "step", "data": {"type": "act", "action": action}}, reward=True)
        return (payload["text"], float(payload["reward"]), bool(payload["terminated"]), bool(payload["truncated"]),
                payload["info"])

    def close(self) -> None:
        """End the session on the server (its env is closed there). Safe to call any number of times."""
        if self._closed:
            return
        self._closed = True
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                connection.send(json.dumps({"type": "close"}))
                connection.recv(timeout=5)  # the server closes its side once the session's env is closed
            except (ConnectionClosed, OSError, TimeoutError):
                pass  # closed (what we wait for), or the server is gone already: nothing is left to close there
        self._stack.close()
        super().close()

    # ----------------------------------------------------------------- internals
    def _exchange(self, message: dict[str, Any], *, reward: bool = False) -> dict[str, Any]:
        if self._closed or self._connection is None:
            raise RuntimeError("this remote env is closed; make a new one")
        try:
            try:
                self._connection.send(json.dumps(message))
            except ConnectionClosed:
                pass  # the server may have said why it closed (e.g. busy) before closing: read that below
            raw = self._connection.recv(timeout=self.message_timeout)
        except TimeoutError:
            raise RemoteEnvError(f"{self.ws_url} did not answer within {self.message_timeout} s") from None
        except ConnectionClosed as error:
            raise RemoteEnvError(f"the server closed the session ({error}); make a new env to go on") from None
        answer = json.loads(raw)
        if answer.get("type") == "error":
            self._raise(answer.get("data", {}))
        if answer.get("type") != "observation":
            raise RemoteEnvError(f"unexpected answer from {self.ws_url}: {str(answer)[:200]}")
        data = answer["data"]
        observation = dict(data["observation"])
        if reward:
            observation["reward"] = data.get("reward") or 0.0
        observation["info"] = self._full_info(observation["info"])
        return observation

    def _full_info(self, info: dict[str, Any]) -> dict[str, Any]:
        """The env's info from the server's compact form (see `GymSession._wire_info`)."""
        delta = info.pop(COMPACT_KEY, None)
        if delta is None:
            return info
        if "messages" in info:
            start = delta.get("messages_from")
            if start is not None:
                info["messages"] = self._messages[:start] + info["messages"]
            self._messages = list(info["messages"])
        if delta.get("tools_unchanged"):
            info["tools"] = self._tools
        elif "tools" in info:
            self._tools = info["tools"]
            self._tool_schemas = list(info["tools"])
        # Keep the key order of the env's own info (dict equality ignores it; printing and JSON do not): the
        # server sends it; an older server does not, and then the first info's order is kept where it fits.
        order = delta.get("order")
        if not (isinstance(order, list) and set(order) == set(info)):
            order = self._order if set(self._order) == set(info) else list(info)
        self._order = order
        return {key: info[key] for key in order}

    @staticmethod
    def _raise(error: dict[str, Any]) -> None:
        message = str(error.get("message", "unknown error"))
        code = error.get("code", "")
        if code == "CAPACITY_REACHED":
            raise RemoteEnvError(message)
        if code == "VALIDATION_ERROR":
            details = "; ".join(str(item.get("msg", item)) for item in error.get("errors", []))
            raise TypeError(f"the server refused the action: {details or message}")
        name, separator, rest = message.partition(": ")
        if separator and name in _RAISED_AS:
            raise _RAISED_AS[name](rest)
        raise RuntimeError(message)
