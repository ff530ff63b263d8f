"""`agentgym serve ENV --ray`: the same FastAPI app as `agentgym serve`, deployed as replicas on Ray Serve.

Each replica builds its own app (`server.build_app`) when Ray starts it, so every replica holds its own sessions
and env instances; nothing is shared between replicas but the code. A WebSocket connection (`/ws`) is sticky by
nature: Ray's proxy keeps it on the replica that accepted it for its whole life. When a replica dies, Ray's
controller starts a new one; the sessions that lived on the dead replica are lost (their connections close), the
others go on, and new connections go to the replicas alive.

HTTP MCP sessions (`/mcp` with `openenv/session/create`) are NOT sticky: each HTTP request is routed to any
replica, so with more than one replica a later `tools/call` may reach a replica that never saw the session and
is answered "unknown session". Use WebSocket sessions (`gym.make(ID, remote=...)`, openenv-core's clients) with
`--replicas` above 1, or serve MCP with one replica.
"""

from __future__ import annotations

from typing import Any

from agentgym.serving.server import ServeConfig, build_app

DEPLOYMENT_NAME = "agentgym"


def deployment(config: ServeConfig, *, replicas: int = 1, cpus_per_replica: float = 1.0) -> Any:
    """A bound Ray Serve application serving `config` with `replicas` replicas.

    Args:
        config: What each replica serves; `max_sessions` holds per replica.
        replicas: Replicas Ray keeps alive (it starts a new one when one dies).
        cpus_per_replica: CPUs Ray reserves for each replica (0 lets replicas share a small test cluster).

    Raises:
        ValueError: replicas below 1 or a negative CPU count.
        ImportError: Ray Serve is not installed (`pip install "ray[serve]"`).
    """
    if replicas < 1:
        raise ValueError(f"replicas must be at least 1, got {replicas}")
    if cpus_per_replica < 0:
        raise ValueError(f"cpus_per_replica must be 0 or more, got {cpus_per_replica}")
    from ray import serve

    def replica_app() -> Any:
        # Ray runs this builder (a plain function, which is how Ray tells a builder from an ASGI app) on each
        # replica as it starts, so the app, its env probe and its session threads belong to that replica.
        return build_app(config)

    ingress = serve.ingress(replica_app)
    replica_class = serve.deployment(
        name=DEPLOYMENT_NAME,
        num_replicas=replicas,
        # A WebSocket session is one ongoing request for its whole life: allow max_sessions of them (and a few
        # health and schema requests besides), so the server's own "server busy" answer is what a client sees.
        max_ongoing_requests=config.max_sessions + 8,
        ray_actor_options={"num_cpus": cpus_per_replica},
        health_check_period_s=2,
    )(ingress())
    return replica_class.bind()


def run(config: ServeConfig, *, address: str | None = None, host: str = "127.0.0.1", port: int = 8000,
        replicas: int = 1, cpus_per_replica: float = 1.0, blocking: bool = True) -> str:
    """Deploy `config` on Ray Serve and return its WebSocket base URL ("ws://HOST:PORT").

    Args:
        address: A Ray cluster to join ("auto", "ray://HEAD:10001", ...); None starts a local one.
        host, port: Where Ray Serve's HTTP proxy listens.
        replicas, cpus_per_replica: See `deployment`.
        blocking: Wait until interrupted (the CLI), or return once the deployment is running (tests).
    """
    import ray
    from ray import serve

    application = deployment(config, replicas=replicas, cpus_per_replica=cpus_per_replica)
    if not ray.is_initialized():
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
    serve.start(http_options={"host": host, "port": port})
    serve.run(application, name=f"agentgym-{config.env_id}", route_prefix="/", blocking=False)
    url = f"ws://{host}:{port}"
    if blocking:
        import time

        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            serve.shutdown()  # type: ignore[no-untyped-call]
    return url
