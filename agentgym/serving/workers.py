"""`agentgym serve ENV --workers N`: N server processes on one machine sharing one listening socket, without Ray.

This is uvicorn's own multi-process mode (its `Multiprocess` supervisor): the parent binds the socket once (so
`--port 0` resolves to one port, announced before any worker starts), starts N worker processes with
multiprocessing's spawn method, restarts a worker that dies, and on SIGINT or SIGTERM stops them all and waits
for them before it exits. The kernel hands each new connection to whichever worker accepts it first.

A worker is a fresh interpreter, so it cannot receive the app object: it imports `make_app` (an app factory) and
builds its own app from the settings the parent put in `AGENTGYM_SERVE_SETTINGS` (the `ServeConfig` as JSON, the
token included). A worker removes that variable from its own environment as soon as it has read it, so nothing it
starts later (an env's subprocesses, a local sandbox) inherits the token; the parent keeps it for the workers it
may have to restart. Each worker holds its own sessions and env instances: `max_sessions` holds per worker.

- A WebSocket session (`/ws`) lives on the worker that accepted its connection, for the connection's life.
- An HTTP MCP session (`/mcp`) lives on the worker that answered its `openenv/session/create`. A later request
  reaches that worker only if it travels on the same keep-alive connection; on any new connection it reaches a
  worker chosen by the kernel, which answers "unknown session" when it is another one (see docs/serving.md).

A worker also stops itself when its parent is gone (its parent pid changes), so a supervisor killed with SIGKILL
leaves no worker serving behind it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from agentgym.serving.server import ServeConfig, build_app

SETTINGS_VARIABLE = "AGENTGYM_SERVE_SETTINGS"
FACTORY = "agentgym.serving.workers:make_app"
PARENT_CHECK_S = 1.0


def settings_text(config: ServeConfig, parent_pid: int | None = None) -> str:
    """`config` as the JSON a worker reads (`ServeConfig`'s fields, plus the supervisor's pid)."""
    settings = dataclasses.asdict(config)
    settings["parent_pid"] = os.getpid() if parent_pid is None else parent_pid
    return json.dumps(settings)


def config_from_settings(text: str) -> tuple[ServeConfig, int | None]:
    """The `ServeConfig` and supervisor pid in `settings_text`'s JSON. Raises ValueError (or TypeError)
    when it is not that."""
    try:
        settings = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{SETTINGS_VARIABLE} is not JSON ({error}); it is written by agentgym serve --workers, "
                         "start the server that way") from None
    if not isinstance(settings, dict):
        raise TypeError(f"{SETTINGS_VARIABLE} must be a JSON object of ServeConfig's fields")
    parent = settings.pop("parent_pid", None)
    known = {item.name for item in dataclasses.fields(ServeConfig)}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise ValueError(f"{SETTINGS_VARIABLE} has unknown fields {unknown}; it is written by agentgym serve "
                         "--workers of the same agentgym version")
    return ServeConfig(**settings), parent if isinstance(parent, int) else None


def make_app() -> Any:
    """The app factory a worker imports (`uvicorn ... --factory agentgym.serving.workers:make_app`): the app of the
    config in `AGENTGYM_SERVE_SETTINGS`, which it then removes from this process's environment."""
    text = os.environ.pop(SETTINGS_VARIABLE, None)
    if text is None:
        raise RuntimeError(f"{SETTINGS_VARIABLE} is not set: start workers with agentgym serve ENV --workers N")
    config, parent = config_from_settings(text)
    app = build_app(config)
    if parent is not None:
        threading.Thread(target=_stop_when_orphaned, args=(parent,), name="agentgym-parent-watch",
                         daemon=True).start()
    return app


def _stop_when_orphaned(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_S)
    os.kill(os.getpid(), signal.SIGTERM)  # uvicorn's handler: finish requests, close sessions, exit


def serve_workers(config: ServeConfig, *, host: str = "127.0.0.1", port: int = 8000, log_level: str = "warning",
                  on_ready: Callable[[str], None] | None = None) -> None:
    """Serve `config` with `config.workers` processes until SIGINT or SIGTERM, then stop them all and return.

    The env is made once here first, so a bad env id or bad arguments fail in this process with `build_app`'s
    errors (KeyError, ValueError, TypeError, FileNotFoundError) before any worker starts. `on_ready(url)` is called
    (from a thread) once a worker answers `/health`.

    Raises:
        RuntimeError: a worker failed to start (its log says why), so the supervisor stopped.
    """
    import uvicorn
    from uvicorn.config import STARTUP_FAILURE
    from uvicorn.supervisors.multiprocess import Multiprocess

    build_app(config)  # the same checks a worker makes, with their clear errors, before anything is spawned
    os.environ[SETTINGS_VARIABLE] = settings_text(config)
    try:
        uvicorn_config = uvicorn.Config(FACTORY, factory=True, host=host, port=port, workers=config.workers,
                                        log_level=log_level, ws="websockets-sansio", lifespan="on",
                                        timeout_graceful_shutdown=5)
        sock = uvicorn_config.bind_socket()
        bound = int(sock.getsockname()[1])
        supervisor = Multiprocess(uvicorn_config, sockets=[sock])
        if on_ready is not None:
            threading.Thread(target=_announce, args=(host, bound, config.token, on_ready, supervisor.should_exit),
                             name="agentgym-announce", daemon=True).start()
        try:
            supervisor.run()
        finally:
            sock.close()
    finally:
        os.environ.pop(SETTINGS_VARIABLE, None)
    if any(process.exitcode == STARTUP_FAILURE for process in supervisor.processes):
        raise RuntimeError("a worker failed to start (its error is in the log above), so every worker was stopped")


def _announce(host: str, port: int, token: str | None, on_ready: Callable[[str], None],
              stopping: threading.Event) -> None:
    address = f"[{host}]" if ":" in host else host
    request = urllib.request.Request(f"http://{address}:{port}/health",
                                     headers={"Authorization": f"Bearer {token}"} if token else {})
    while not stopping.is_set():
        try:
            with urllib.request.urlopen(request, timeout=2):
                break
        except (urllib.error.URLError, OSError):
            time.sleep(0.1)
    else:
        return
    on_ready(f"ws://{address}:{port}")
