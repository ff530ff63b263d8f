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


@contextmanager
def ray_serving(env_id: str = "SQL-v0", *, replicas: int = 2, **options: Any) -> Iterator[str]:
    """Deploy `env_id` with `replicas` replicas on a fresh local Ray cluster (Serve's proxy on a free loopback port)
    for the duration of the block; yields "ws://127.0.0.1:PORT". `options` go to `ray_serve.run`."""
    import ray
    from ray import serve

    from agentgym.serving import ray_serve
    from agentgym.serving.server import ServeConfig

    if ray.is_initialized():  # another test module's Ray (tests/eval/test_ray.py) may still be up
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray_serve.run(ServeConfig(env_id=env_id, max_sessions=8, idle_timeout=120), port=free_port(),
                            replicas=replicas, cpus_per_replica=0, blocking=False, **options)
    finally:
        serve.shutdown()
        ray.shutdown()


@pytest.fixture(scope="module")
def sql_server() -> Iterator[str]:
    with serving("SQL-v0", max_sessions=16, idle_timeout=60) as url:
        yield url
