"""`agentgym serve ENV --ray`: the same FastAPI app as `agentgym serve`, deployed as replicas on Ray Serve.

Each replica builds its own app (`server.build_app`) when Ray starts it, so every replica holds its own sessions
and env instances; nothing is shared between replicas but the code. A WebSocket connection (`/ws`) is sticky by
nature: Ray's proxy keeps it on the replica that accepted it for its whole life. When a replica dies, Ray's
controller starts a new one; the sessions that lived on the dead replica are lost (their connections close), the
others go on, and new connections go to the replicas alive.

HTTP MCP sessions (`/mcp` with `openenv/session/create`) are one HTTP request per call, and Ray Serve's default
router sends each request to whichever replica is less loaded: a later `tools/call` may reach a replica that never
saw the session and is answered "unknown session". With `session_affinity=True` the deployment uses Ray Serve's
consistent-hash router (`ray.serve.experimental.consistent_hash_router`, Ray 2.60 and later), which routes every
request by its `x-session-id` header (the name is Ray's `RAY_SERVE_SESSION_ID_HEADER_KEY`): a client that sends
the same value on every request of a session, the create included, stays on one replica. The server cannot pick
that value for the client, because the session id is made on whichever replica the create reached. What it costs
and where it breaks is in docs/serving.md (WebSocket connections then go to a replica by a random key instead of
to the less loaded one; a replica added or replaced moves a share of the keys of live sessions).
"""

from __future__ import annotations

from typing import Any

from agentgym.serving.server import ServeConfig, build_app

DEPLOYMENT_NAME = "agentgym"
SESSION_ROUTER = "ray.serve.experimental.consistent_hash_router.ConsistentHashRouter"
SESSION_HEADER = "x-session-id"  # Ray Serve's default for RAY_SERVE_SESSION_ID_HEADER_KEY


def session_router_available() -> bool:
    """Whether this Ray has the consistent-hash router that `session_affinity=True` needs (Ray 2.60+)."""
    import importlib.util

    try:
        return importlib.util.find_spec(SESSION_ROUTER.rsplit(".", 1)[0]) is not None
    except ModuleNotFoundError:
        return False


def deployment(config: ServeConfig, *, replicas: int = 1, cpus_per_replica: float = 1.0,
               session_affinity: bool = False) -> Any:
    """A bound Ray Serve application serving `config` with `replicas` replicas.

    Args:
        config: What each replica serves; `max_sessions` holds per replica.
        replicas: Replicas Ray keeps alive (it starts a new one when one dies).
        cpus_per_replica: CPUs Ray reserves for each replica (0 lets replicas share a small test cluster).
        session_affinity: Route each request by its `x-session-id` header (see the module docstring), so HTTP MCP
            sessions whose client sends it stay on one replica.

    Raises:
        ValueError: replicas below 1, a negative CPU count, or session_affinity on a Ray without the router.
        ImportError: Ray Serve is not installed (`pip install "ray[serve]"`).
    """
    if replicas < 1:
        raise ValueError(f"replicas must be at least 1, got {replicas}")
    if cpus_per_replica < 0:
        raise ValueError(f"cpus_per_replica must be 0 or more, got {cpus_per_replica}")
    from ray import serve

    options: dict[str, Any] = {}
    if session_affinity:
        if not session_router_available():
            raise ValueError("session affinity needs Ray Serve's consistent-hash router (Ray 2.60 or later): "
                             "pip install -U 'ray[serve]>=2.60'")
        from ray.serve.config import RequestRouterConfig

        # The default two fallback replicas: when a session's replica is saturated or gone, the request goes to
        # a neighbour, which answers "unknown session" at once instead of the request waiting.
        # Ray declares the class as a string or a class; its stubs see the field as a dict
        options["request_router_config"] = RequestRouterConfig(
            request_router_class=SESSION_ROUTER)  # type: ignore[arg-type]

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
        **options,
    )(ingress())
    return replica_class.bind()


def run(config: ServeConfig, *, address: str | None = None, host: str = "127.0.0.1", port: int = 8000,
        replicas: int = 1, cpus_per_replica: float = 1.0, session_affinity: bool = False,
        blocking: bool = True) -> str:
    """Deploy `config` on Ray Serve and return its WebSocket base URL ("ws://HOST:PORT").

    Args:
        address: A Ray cluster to join ("auto", "ray://HEAD:10001", ...); None starts a local one.
        host, port: Where Ray Serve's HTTP proxy listens.
        replicas, cpus_per_replica, session_affinity: See `deployment`.
        blocking: Wait until interrupted (the CLI), or return once the deployment is running (tests).
    """
    import ray
    from ray import serve

    application = deployment(config, replicas=replicas, cpus_per_replica=cpus_per_replica,
                             session_affinity=session_affinity)
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
