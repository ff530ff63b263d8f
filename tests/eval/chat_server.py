"""A real HTTP server speaking the chat-completions API with scripted replies, for the OpenAI agent's tests
and the rollout benchmark. It listens on a free local port; the agent crosses a real socket.

A script is a function `reply(request_body, request_number) -> Reply`; helpers build the usual replies.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass
class Reply:
    """What the server sends: a status and a JSON body (or raw text), after `delay` seconds."""

    status: int = 200
    body: Any = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


def message_reply(content: str | None = None, tool_calls: Any = None) -> Reply:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return Reply(body={"id": "chatcmpl-test", "object": "chat.completion", "model": "scripted",
                       "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})


def tool_call_reply(name: str, arguments: dict[str, Any] | str, call_id: str = "call_0") -> Reply:
    encoded = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return message_reply(None, [{"id": call_id, "type": "function",
                                 "function": {"name": name, "arguments": encoded}}])


def zoo_policy(body: dict[str, Any], number: int) -> Reply:
    """A competent model for the toy env: looks the animal up, then submits what the tool said."""
    messages = body["messages"]
    last = messages[-1]
    if last["role"] == "user" and "<tool_response>" not in str(last["content"]):
        match = re.search(r"How many (\w+)s are", str(last["content"]))
        kind = match.group(1) if match else "okapi"
        tool = "count_animals" if match else "keeper_code"
        if "tools" not in body:  # text mode
            return message_reply(f'<tool_call>{{"name": "{tool}", "arguments": {{"kind": "{kind}"}}}}</tool_call>')
        return tool_call_reply(tool, {"kind": kind})
    result = str(last["content"]).replace("<tool_response>", "").replace("</tool_response>", "").strip()
    answer: Any = int(result) if result.isdigit() else result
    if "tools" not in body:
        return message_reply('<tool_call>{"name": "submit", "arguments": ' + json.dumps({"answer": answer})
                             + "}</tool_call>")
    return tool_call_reply("submit", {"answer": answer}, call_id="call_1")


class ChatServer:
    """Serves `script` on 127.0.0.1 until `close()`; `requests` keeps every request body received."""

    def __init__(self, script: Callable[[dict[str, Any], int], Reply]) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.handler_seconds = 0.0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out as separate writes; no 40 ms ACK wait

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                started = time.perf_counter()
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length))
                with server._lock:
                    number = len(server.requests)
                    server.requests.append({"path": self.path, "body": body,
                                            "authorization": self.headers.get("authorization")})
                reply = server.script(body, number)
                if reply.delay:
                    time.sleep(reply.delay)
                payload = (reply.body if isinstance(reply.body, str) else json.dumps(reply.body)).encode()
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                try:
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (a timeout test); nothing to deliver
                with server._lock:
                    server.handler_seconds += time.perf_counter() - started - reply.delay

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if __name__ == "__main__":  # serve the zoo policy for a manual run: python tests/eval/chat_server.py
    import sys

    with ChatServer(zoo_policy) as chat:
        print(chat.url, flush=True)
        sys.stdin.read()
