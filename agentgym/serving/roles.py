"""Who a served env's client is, and what `info` it receives (docs/serving.md, "What a client receives").

Two roles:

- `TRAINER`: a client that presented the server's token (`agentgym serve --token`). It receives the env's `info`
  exactly as the local env returns it: the verifier's components, the domain's diagnosis labels, a grader's
  error. A trainer needs them for metrics, and a policy inside a trainer never sees `info`.
- `AGENT`: every other client (one let in with `--agent-token`, or any client of a server without a token), and
  every client of `agentgym mcp`. It receives what the agent may know: its own conversation, the tools, the
  reward, whether the episode ended, the shaping terms computed from its own calls, and the coarse diagnosis.
  Nothing that grades one part of an answer against the gold (a precision, a recall, a missing or extra item, a
  label such as `answer_missing_items`), because across resets of one task that is an oracle of the gold.

The role of a connection is decided once, from its `Authorization` header, by `RoleMiddleware`, and travels to
the session the connection opens in `current_role`.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from contextvars import ContextVar
from typing import Any

AGENT = "agent"
TRAINER = "trainer"
ROLES = (AGENT, TRAINER)

# The role of the request or WebSocket connection being handled (set by `RoleMiddleware`, read where a session is
# opened). A context variable, so each connection's task has its own.
current_role: ContextVar[str] = ContextVar("agentgym_serve_role", default=AGENT)

# What an agent-role client receives of `info`: these keys, each filtered as below; any other key (a plugin's
# own) is left out, because nothing says it is safe.
AGENT_INFO_KEYS = ("task_id", "family", "split", "difficulty", "turn", "tools", "messages", "perturbations",
                   "reward_breakdown", "diagnosis", "grader_error", "infra_error", "call_error")
# Reward-breakdown terms computed from the agent's own calls, plus `answer` (the verifier's score, which the
# reward already carries). Left out: `verifier/*` (per-answer components such as precision and recall) and
# `process/*` (a domain's per-call signals, which may compare a call's result with the gold).
AGENT_BREAKDOWN_TERMS = ("answer", "format", "schema", "execution", "submitted")
# Diagnosis fields computed from the agent's turns; left out: `domain` (labels such as `answer_missing_items` or
# `result_subset` compare the answer with the gold item by item).
AGENT_DIAGNOSIS_FIELDS = ("episode", "turns", "counts", "truncated")
HIDDEN_GRADER_ERROR = "the grader failed on the server (its log has the details)"


def agent_info(info: Mapping[str, Any]) -> dict[str, Any]:
    """`info` as an agent-role client receives it (see the module docstring), in the env's key order."""
    view: dict[str, Any] = {}
    for key, value in info.items():
        if key not in AGENT_INFO_KEYS:
            continue
        if key == "reward_breakdown" and isinstance(value, Mapping):
            value = {term: score for term, score in value.items() if term in AGENT_BREAKDOWN_TERMS}
        elif key == "diagnosis" and isinstance(value, Mapping):
            value = {field: label for field, label in value.items() if field in AGENT_DIAGNOSIS_FIELDS}
        elif key == "grader_error":
            value = HIDDEN_GRADER_ERROR  # a grader's exception may quote the gold
        view[key] = value
    return view


def info_for(role: str, info: Mapping[str, Any]) -> dict[str, Any]:
    """`info` as a client of `role` receives it."""
    return dict(info) if role == TRAINER else agent_info(info)


Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
TOKEN_VARIABLE = "AGENTGYM_SERVE_TOKEN"


def presented_token(scope: Scope) -> bytes | None:
    """The credential in a request's `Authorization` header: a bearer token, or the password of HTTP Basic
    credentials (a client that can only put credentials in the URL, `ws://any:TOKEN@host:port`); None without."""
    for name, value in scope.get("headers", []):
        if name != b"authorization":
            continue
        scheme, _, credentials = value.partition(b" ")
        if scheme.lower() == b"bearer":
            return bytes(credentials.strip())
        if scheme.lower() == b"basic":
            try:
                decoded = base64.b64decode(credentials.strip(), validate=True)
            except (binascii.Error, ValueError):
                return None
            return bytes(decoded.partition(b":")[2])
    return None


class RoleMiddleware:
    """Decides each request's role from its token, and refuses a request without a valid one on a server that
    has tokens.

    - the trainer token (`--token`): `TRAINER`;
    - the agent token (`--agent-token`): `AGENT`;
    - no token configured at all: `AGENT` for everyone (no client can prove it is the trainer);
    - a token configured and none of them presented: 401.
    """

    def __init__(self, app: ASGIApp, trainer_token: str | None = None, agent_token: str | None = None) -> None:
        self.app = app
        self.trainer_token = trainer_token.encode() if trainer_token else None
        self.agent_token = agent_token.encode() if agent_token else None

    def role_of(self, scope: Scope) -> str | None:
        """The role of the request, or None when it must be refused."""
        if self.trainer_token is None and self.agent_token is None:
            return AGENT
        presented = presented_token(scope)
        if presented is None:
            return None
        # Both comparisons always run, so the answer's timing does not say which token came close.
        is_trainer = self.trainer_token is not None and hmac.compare_digest(presented, self.trainer_token)
        is_agent = self.agent_token is not None and hmac.compare_digest(presented, self.agent_token)
        return TRAINER if is_trainer else AGENT if is_agent else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        role = self.role_of(scope)
        if role is None:
            await _refuse(scope, send)
            return
        marker = current_role.set(role)
        try:
            await self.app(scope, receive, send)
        finally:
            current_role.reset(marker)


async def _refuse(scope: Scope, send: Send) -> None:
    body = json.dumps({"error": "unauthorized: this server needs 'Authorization: Bearer <token>' "
                                f"(the token given to agentgym serve --token or {TOKEN_VARIABLE}, or its "
                                "--agent-token)"}).encode()
    headers = [(b"content-type", b"application/json"), (b"www-authenticate", b'Bearer realm="agentgym"')]
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})
    elif "websocket.http.response" in scope.get("extensions", {}):
        await send({"type": "websocket.http.response.start", "status": 401, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": body})
    else:
        await send({"type": "websocket.close", "code": 1008})
