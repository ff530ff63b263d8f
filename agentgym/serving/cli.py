"""The `agentgym serve` and `agentgym mcp` verbs (added through the `agentgym.commands` entry-point group)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import click

from agentgym.cli import parse_assignments

if TYPE_CHECKING:
    from agentgym.serving.server import ServeConfig

TOKEN_VARIABLE = "AGENTGYM_SERVE_TOKEN"
AGENT_TOKEN_VARIABLE = "AGENTGYM_SERVE_AGENT_TOKEN"


def _missing_extra(error: ImportError) -> click.ClickException:
    return click.ClickException(f"serving needs the serve extra ({error.name or error} is missing): "
                                "pip install -e '.[serve]'")


@click.command("serve")
@click.argument("env_id")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Anything other than loopback exposes the env to the network: use --token.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0: any free port, printed at start).")
@click.option("--env-arg", "env_args", multiple=True, help="KEY=VALUE passed to gym.make for every session.")
@click.option("--workers", default=1, show_default=True, type=int,
              help="Server processes sharing the port on this machine (uvicorn's multi-process mode, no Ray). A "
                   "WebSocket session stays on the worker that accepted it; HTTP MCP sessions are not sticky "
                   "across workers (see docs/serving.md).")
@click.option("--max-sessions", default=64, show_default=True, type=click.IntRange(1),
              help="Sessions open at once, per worker (per replica with --ray); one more is answered 'server busy'.")
@click.option("--idle-timeout", default=600.0, show_default=True, type=click.FloatRange(0, min_open=True),
              help="Seconds without a message after which a session is closed.")
@click.option("--token", default=None, help=f"Require 'Authorization: Bearer TOKEN' (default: ${TOKEN_VARIABLE}). "
              "Its holder is the trainer: it receives the env's whole info (verifier details included).")
@click.option("--agent-token", default=None,
              help=f"Also let in clients with this token, as agents: they receive only what an agent may know "
                   f"(default: ${AGENT_TOKEN_VARIABLE}; see docs/serving.md).")
@click.option("--log-level", default="warning", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))
@click.option("--ray", "ray_address", is_flag=False, flag_value="local", default=None, metavar="[ADDRESS]",
              help="Deploy on Ray Serve: alone, a local Ray cluster; with ADDRESS ('auto', 'ray://HEAD:10001'), "
                   "that cluster. WebSocket sessions stay on their replica; see docs/serving.md.")
@click.option("--replicas", default=1, show_default=True, type=click.IntRange(1),
              help="Ray Serve replicas (with --ray); --max-sessions holds per replica.")
@click.option("--session-affinity", is_flag=True,
              help="With --ray: route requests by their x-session-id header, so an HTTP MCP client that sends the "
                   "same one on every request of a session stays on its replica (Ray 2.60+; see docs/serving.md).")
def serve_command(env_id: str, host: str, port: int, env_args: tuple[str, ...], workers: int, max_sessions: int,
                  idle_timeout: float, token: str | None, agent_token: str | None, log_level: str,
                  ray_address: str | None, replicas: int, session_affinity: bool) -> None:
    """Serve ENV_ID over OpenEnv's protocol: WebSocket /ws (one env per connection), HTTP /reset /state
    /health /schema /metadata, MCP JSON-RPC at /mcp.

    \b
    Examples:
      agentgym serve SQL-v0 --port 8000
      agentgym serve SQL-v0 --workers 4 --port 8000
      agentgym serve FHIR-v0 --env-arg split=test --max-sessions 256 --token "$SECRET"
      agentgym serve SQL-v0 --ray --replicas 4
    Then, in Python: gym.make("SQL-v0", remote="ws://127.0.0.1:8000")
    """
    try:
        from agentgym.serving.server import ServeConfig, serve
    except ImportError as error:
        raise _missing_extra(error) from None
    if workers < 1:
        raise click.ClickException(f"--workers must be 1 or more (server processes sharing the port), got {workers}")
    if workers > 1 and ray_address is not None:
        raise click.ClickException("--workers is for one machine without Ray; with --ray use --replicas N instead")
    token = token or os.environ.get(TOKEN_VARIABLE) or None
    agent_token = agent_token or os.environ.get(AGENT_TOKEN_VARIABLE) or None
    if host not in ("127.0.0.1", "localhost", "::1") and not token:
        click.echo(f"warning: serving on {host} without a token: anyone who reaches this port can run episodes "
                   f"(pass --token or set {TOKEN_VARIABLE})", err=True)
    try:
        config = ServeConfig(env_id=env_id, env_args=parse_assignments(env_args), max_sessions=max_sessions,
                             idle_timeout=idle_timeout, token=token, workers=workers, agent_token=agent_token)
    except ValueError as error:
        raise click.ClickException(str(error)) from None

    if replicas > 1 and ray_address is None:
        raise click.ClickException("--replicas needs --ray (one process serves one replica)")
    if session_affinity and ray_address is None:
        raise click.ClickException("--session-affinity needs --ray (one process holds every session anyway)")
    if ray_address is not None:
        _serve_on_ray(config, ray_address, host=host, port=port, replicas=replicas, session_affinity=session_affinity)
        return

    def ready(url: str) -> None:
        processes = f"{workers} workers (--max-sessions {max_sessions} each); " if workers > 1 else ""
        click.echo(f"serving {env_id} at {url} (health: {url.replace('ws://', 'http://')}/health); {processes}"
                   f"{_access(token, agent_token)}; Ctrl-C stops", err=True)
        sys.stderr.flush()

    try:
        if workers > 1:
            _serve_workers(config, host=host, port=port, log_level=log_level, on_ready=ready)
        else:
            serve(config, host=host, port=port, log_level=log_level, on_ready=ready)
    except KeyError as error:
        raise click.ClickException(str(error.args[0])) from None
    except (ValueError, TypeError, FileNotFoundError) as error:
        raise click.ClickException(f"could not make {env_id}: {error}") from None


def _access(token: str | None, agent_token: str | None) -> str:
    """Who may connect, as the ready line says it."""
    if token and agent_token:
        return "token required (trainer token: whole info; agent token: what an agent may know)"
    if token or agent_token:
        return "token required" + ("" if token else " (agent token only: no client gets the trainer's info)")
    return "no token (every client gets what an agent may know; start with --token for the trainer's info)"


def _serve_workers(config: ServeConfig, **options: Any) -> None:
    from agentgym.serving.workers import serve_workers

    try:
        serve_workers(config, **options)
    except RuntimeError as error:  # a worker failed to start; its own log said why
        raise click.ClickException(str(error)) from None


def _serve_on_ray(config: ServeConfig, ray_address: str, *, host: str, port: int, replicas: int,
                  session_affinity: bool) -> None:
    try:
        from ray import serve  # noqa: F401  (Ray Serve's own dependencies, grpc among them)

        from agentgym.serving import ray_serve
    except ImportError as error:
        raise click.ClickException(f"--ray needs Ray Serve ({error.name or error} is missing): "
                                   "pip install 'ray[serve]'") from None
    address = None if ray_address == "local" else ray_address
    click.echo(f"deploying {config.env_id} on Ray Serve ({address or 'local cluster'}, {replicas} replica(s)) "
               f"at ws://{host}:{port}; Ctrl-C stops", err=True)
    if session_affinity and not ray_serve.session_router_available():
        raise click.ClickException("--session-affinity needs Ray Serve's consistent-hash router (Ray 2.60 or "
                                   "later): pip install -U 'ray[serve]>=2.60'")
    try:
        ray_serve.run(config, address=address, host=host, port=port, replicas=replicas,
                      session_affinity=session_affinity)
    except ConnectionError as error:
        raise click.ClickException(f"could not reach the Ray cluster at {address}: {error}") from None


@click.command("mcp")
@click.argument("env_id")
@click.option("--seed", default=None, type=int, help="Seed of the episode's task (default: random).")
@click.option("--task-id", default=None, help="Play this task instead of a seeded one.")
@click.option("--env-arg", "env_args", multiple=True, help="KEY=VALUE passed to gym.make.")
def mcp_command(env_id: str, seed: int | None, task_id: str | None, env_args: tuple[str, ...]) -> None:
    """Run one episode of ENV_ID as an MCP server over stdio: its tools are the env's tools, the prompt is the
    `task` prompt and resource, and `submit` ends the episode and returns the score.

    \b
    Example (an MCP client's server entry):
      {"command": "agentgym", "args": ["mcp", "SQL-v0", "--seed", "3"]}
    """
    try:
        from agentgym.serving.mcp_stdio import run_stdio
    except ImportError as error:
        raise _missing_extra(error) from None
    options = {"task_id": task_id} if task_id else None
    try:
        run_stdio(env_id, env_args=parse_assignments(env_args), seed=seed, options=options)
    except KeyError as error:
        raise click.ClickException(str(error.args[0])) from None
    except (ValueError, TypeError, FileNotFoundError) as error:
        raise click.ClickException(f"could not make {env_id}: {error}") from None


def remote_env_args(url: str, token: str | None, env_ids: list[str], agent: str) -> dict[str, Any]:
    """What `agentgym eval ENV --remote URL [--token T]` adds to the env arguments: `remote=URL` (so run.json
    records the URL), after checking that the server answers, takes the token and serves ENV. The token goes to
    the episodes through `AGENTGYM_SERVE_TOKEN` in this process's environment, never into an argument that is
    written down. Raises `click.ClickException` with one line naming the URL when the server is not usable.
    """
    try:
        from agentgym.serving.remote import RemoteEnvError, check_server, local_tasks
    except ImportError as error:
        raise _missing_extra(error) from None
    if len(env_ids) != 1:
        raise click.BadParameter(f"a server serves one env; name one env with --remote (got {','.join(env_ids)})",
                                 param_hint="--remote")
    token = token or os.environ.get(TOKEN_VARIABLE) or None
    try:
        health = check_server(url, token=token)
    except (RemoteEnvError, ValueError) as error:
        raise click.ClickException(str(error)) from None
    served = str(health.get("env", ""))
    if served.split(":")[-1] != env_ids[0].split(":")[-1]:
        raise click.ClickException(f"the server at {url} serves {served}, not {env_ids[0]}: eval {served} there, "
                                   f"or point --remote at a server of {env_ids[0]}")
    if agent.partition(":")[0] == "oracle":  # the privileged agent: it replays gold that only this machine has
        try:
            local_tasks(served)
        except RemoteEnvError as error:
            raise click.ClickException(str(error)) from None
    if token:
        os.environ[TOKEN_VARIABLE] = token
    return {"remote": url}
