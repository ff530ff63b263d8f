"""The OpenAI-compatible agent: any server speaking the chat-completions API (vLLM, SGLang, a hosted API).

Two tool modes: `native` sends the env's tool schemas in `tools` and reads `tool_calls` back; `text`
describes the tools in the system prompt and hands the model's text to the env, which parses
`<tool_call>{...}</tool_call>` or JSON from it (for servers without tool calling). Transient failures
(429, 5xx, timeouts, dropped connections, replies without choices) are retried with exponential backoff;
when retries run out the agent raises `AgentUnavailable`, so the episode is retried on the next run rather
than scored. A 400 (say, a prompt longer than the context) ends the episode as a failure (`AgentError`).
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from typing import Any

import httpx

from agentgym.agents.base import Agent
from agentgym.rollout import AgentError, AgentUnavailable
from agentgym.tasks import Task

DEFAULT_BASE_URL = "https://api.openai.com/v1"
RETRYABLE_STATUS = {408, 409, 425, 429}
TEXT_MODE_INSTRUCTIONS = (
    "\n\n# Tools\nYou may call these tools (JSON schemas):\n{schemas}\n\nTo call a tool, write exactly:\n"
    '<tool_call>{{"name": "TOOL_NAME", "arguments": {{...}}}}</tool_call>\n'
    "You will get the result in <tool_response> tags. Call `submit` with your final answer."
)

# Agents in the threads of one process share a connection pool and a concurrency limit per server.
_SHARED_LOCK = threading.Lock()
_CLIENTS: dict[tuple[str, float], httpx.Client] = {}
_LIMITS: dict[str, threading.BoundedSemaphore] = {}


def _shared_client(base_url: str, timeout: float, connections: int) -> httpx.Client:
    with _SHARED_LOCK:
        key = (base_url, timeout)
        if key not in _CLIENTS:
            _CLIENTS[key] = httpx.Client(
                timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
                limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
            )
        return _CLIENTS[key]


def _shared_limit(base_url: str, size: int) -> threading.BoundedSemaphore:
    with _SHARED_LOCK:
        if base_url not in _LIMITS:
            _LIMITS[base_url] = threading.BoundedSemaphore(size)
        return _LIMITS[base_url]


class OpenAIAgent(Agent):
    """Asks an OpenAI-compatible chat-completions server for each action.

    Args:
        model: The model name the server knows.
        base_url: The API root (".../v1"); default `$OPENAI_BASE_URL`, else OpenAI's.
        api_key: Default `$OPENAI_API_KEY`; servers that need none get no Authorization header.
        tool_mode: "native" (the API's tool calling) or "text" (tools described in the prompt).
        temperature, top_p, max_tokens: Sampling settings sent with each request when given.
        send_seed: Send a per-turn seed derived from the episode seed (vLLM and OpenAI honour it).
        timeout: Seconds to wait for one reply.
        max_retries: Retries of a transient failure before `AgentUnavailable`.
        backoff: First retry delay in seconds; doubles each retry (with jitter), capped by `max_backoff`.
        max_concurrency: Requests in flight at once from this process to this server.
        extra_body: More fields for every request body (e.g. {"top_k": 20} for vLLM).
    """

    name = "openai"

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 tool_mode: str = "native", temperature: float | None = None, top_p: float | None = None,
                 max_tokens: int | None = None, send_seed: bool = True, timeout: float = 120.0,
                 max_retries: int = 5, backoff: float = 1.0, max_backoff: float = 30.0,
                 max_concurrency: int = 64, extra_body: dict[str, Any] | None = None) -> None:
        if tool_mode not in ("native", "text"):
            raise ValueError(f"tool_mode must be 'native' or 'text', got {tool_mode!r}")
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self._api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.tool_mode = tool_mode
        self.sampling = {name: value for name, value in
                         (("temperature", temperature), ("top_p", top_p), ("max_tokens", max_tokens))
                         if value is not None}
        self.send_seed = send_seed
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.extra_body = dict(extra_body or {})
        self._client = _shared_client(self.base_url, self.timeout, int(max_concurrency))
        self._limit = _shared_limit(self.base_url, int(max_concurrency))
        self._seed: int | None = None
        self._turn = 0
        self.requests = 0
        self.retries = 0

    @classmethod
    def from_spec(cls, argument: str | None = None, **options: Any) -> OpenAIAgent:
        """`openai:MODEL`; options are the constructor's keyword arguments."""
        if not argument:
            raise ValueError("name the model: --agent openai:MODEL (e.g. openai:gpt-4o-mini)")
        options.pop("seed", None)
        return cls(argument, **options)

    def check_server(self, *, timeout: float = 5.0) -> None:
        """Check, before the first episode, that the server answers and accepts the key.

        Sends `GET {base_url}/models`. Any HTTP answer but 401/403 counts as reachable (some servers do not
        serve /models).

        Raises:
            AgentUnavailable: the server cannot be reached (the message names the URL), or it refused the key
                (the message says whether a key was set and how to set one).
        """
        url = f"{self.base_url}/models"
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        try:
            response = self._client.get(url, headers=headers, timeout=timeout)
        except httpx.HTTPError as error:
            raise AgentUnavailable(
                f"the model server at {self.base_url} does not answer ({type(error).__name__}: {error}); start it, "
                "or point --base-url (or $OPENAI_BASE_URL) at one that runs") from None
        if response.status_code in (401, 403):
            if not self._api_key:
                raise AgentUnavailable(f"the model server at {self.base_url} wants an API key and none is set: "
                                       "set $OPENAI_API_KEY or pass --api-key")
            raise AgentUnavailable(f"the model server at {self.base_url} refused the API key "
                                   f"(HTTP {response.status_code}); check $OPENAI_API_KEY or --api-key")
        if self.base_url == DEFAULT_BASE_URL.rstrip("/") and not self._api_key:
            raise AgentUnavailable("no API key is set for OpenAI's API: set $OPENAI_API_KEY or pass --api-key")

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIAgent(model={self.model!r}, base_url={self.base_url!r}, tool_mode={self.tool_mode!r})"

    def reset(self, task: Task | None = None, *, seed: int | None = None) -> None:
        self._seed = seed
        self._turn = 0

    # ----------------------------------------------------------------- requests
    def request_body(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """The chat-completions request for this turn."""
        body: dict[str, Any] = {"model": self.model, **self.sampling, **self.extra_body}
        if self.tool_mode == "native":
            body["messages"] = [_native_message(message) for message in messages]
            if tools:
                body["tools"] = tools
                body["tool_choice"] = "auto"
        else:
            body["messages"] = _text_messages(messages, tools)
        if self.send_seed and self._seed is not None:
            body["seed"] = (self._seed * 1000 + self._turn) % (2**31)
        return body

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        body = self.request_body(messages, tools)
        self._turn += 1
        message = self._complete(body)
        content = message.get("content")
        text = content if isinstance(content, str) else ""
        if self.tool_mode == "native" and message.get("tool_calls"):
            calls = message["tool_calls"]
            # handed to the env as is: a malformed call becomes an error observation the model reads
            return calls if isinstance(calls, list) else json.dumps(calls)
        return text

    def _complete(self, body: dict[str, Any]) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        url = f"{self.base_url}/chat/completions"
        problem = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.retries += 1
            retry_after: float | None = None
            try:
                with self._limit:
                    self.requests += 1
                    response = self._client.post(url, json=body, headers=headers)
            except httpx.TimeoutException:
                problem = f"no reply within {self.timeout:g} s"
            except httpx.TransportError as error:
                problem = f"connection failed ({type(error).__name__}: {error})"
            else:
                status = response.status_code
                if status == 200:
                    message, problem = _first_message(response)
                    if message is not None:
                        return message
                elif status in RETRYABLE_STATUS or status >= 500:
                    problem = f"HTTP {status}: {response.text[:200]}"
                    retry_after = _retry_after(response)
                elif status in (401, 403):
                    raise AgentUnavailable(f"HTTP {status} from {url}: check --api-key / OPENAI_API_KEY "
                                           f"({response.text[:200]})")
                elif status == 404:
                    raise AgentUnavailable(f"HTTP 404 from {url}: check --base-url (it should end in /v1) and "
                                           f"the model name {self.model!r} ({response.text[:200]})")
                else:
                    raise AgentError(f"HTTP {status} from the server: {response.text[:300]}")
            if attempt < self.max_retries:
                delay = min(self.max_backoff, self.backoff * 2**attempt) * (0.5 + random.random() / 2)
                time.sleep(max(delay, retry_after or 0.0))
        raise AgentUnavailable(f"{url} failed {self.max_retries + 1} times; last: {problem}")

    def close(self) -> None:
        """The connection pool is shared by the process's agents and closed at exit."""


def _first_message(response: httpx.Response) -> tuple[dict[str, Any] | None, str]:
    try:
        data = response.json()
    except ValueError:
        return None, f"the reply is not JSON: {response.text[:200]!r}"
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices:
        return None, f"the reply has no choices: {response.text[:200]!r}"
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    if not isinstance(message, dict):
        return None, f"the first choice has no message: {response.text[:200]!r}"
    return message, ""


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return min(float(value), 60.0) if value is not None else None
    except ValueError:
        return None


def _native_message(message: dict[str, Any]) -> dict[str, Any]:
    if message["role"] == "tool":
        return {"role": "tool", "tool_call_id": message.get("tool_call_id", ""),
                "content": str(message.get("content", ""))}
    result = {"role": message["role"], "content": message.get("content") or ""}
    if message.get("tool_calls"):
        result["tool_calls"] = message["tool_calls"]
    return result


def _text_messages(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation for a server without tool calling: tools in the system prompt, calls as
    <tool_call> text, results as <tool_response> user turns."""
    schemas = "\n".join(json.dumps(schema["function"], ensure_ascii=False) for schema in tools)
    result: list[dict[str, Any]] = []
    for message in messages:
        role, content = message["role"], str(message.get("content") or "")
        if role == "system":
            result.append({"role": "system", "content": content + TEXT_MODE_INSTRUCTIONS.format(schemas=schemas)})
        elif role == "assistant":
            if not content.strip() and message.get("tool_calls"):
                content = "".join(
                    "<tool_call>" + json.dumps({"name": call["function"]["name"],
                                                "arguments": json.loads(call["function"]["arguments"] or "{}")})
                    + "</tool_call>" for call in message["tool_calls"])
            result.append({"role": "assistant", "content": content})
        elif role == "tool":
            wrapped = f"<tool_response>\n{content}\n</tool_response>"
            if result and result[-1]["role"] == "user" and result[-1].get("_tool"):
                result[-1]["content"] += "\n" + wrapped
            else:
                result.append({"role": "user", "content": wrapped, "_tool": True})
        else:
            result.append({"role": role, "content": content})
    for message in result:
        message.pop("_tool", None)
    return result
