"""Serving tests: a real `agentgym serve` app on a loopback port (uvicorn in a thread of the test process), driven
by openenv-core's own clients, the MCP SDK's client and `RemoteEnv`."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

# The test modules skip themselves when the serve extra is missing (`pip install -e ".[serve]"`); they do not fail
# under CI because `make install` does not install that extra yet.
SERVE_EXTRA = "the serve extra is not installed (pip install -e '.[serve]')"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(env_id: str = "SQL-v0", **config: Any) -> Iterator[str]:
    """Serve `env_id` on a free loopback port for the duration of the block; yields "http://127.0.0.1:PORT"."""
    import uvicorn

    from agentgym.serving.server import ServeConfig, build_app

    app = build_app(ServeConfig(env_id=env_id, **config))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           ws="websockets-sansio", lifespan="on"))
    thread = threading.Thread(target=server.run, name=f"serve-{env_id}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)


@pytest.fixture(scope="module")
def sql_server() -> Iterator[str]:
    with serving("SQL-v0", max_sessions=16, idle_timeout=60) as url:
        yield url
