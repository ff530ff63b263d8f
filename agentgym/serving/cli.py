"""The `agentgym serve` and `agentgym mcp` verbs (added through the `agentgym.commands` entry-point group)."""

from __future__ import annotations

import os
import sys

import click

from agentgym.cli import parse_assignments

TOKEN_VARIABLE = "AGENTGYM_SERVE_TOKEN"


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
@click.option("--max-sessions", default=64, show_default=True, type=click.IntRange(1),
              help="Sessions open at once; one more is answered 'server busy'.")
@click.option("--idle-timeout", default=600.0, show_default=True, type=click.FloatRange(0, min_open=True),
              help="Seconds without a message after which a session is closed.")
@click.option("--token", default=None, help=f"Require 'Authorization: Bearer TOKEN' (default: ${TOKEN_VARIABLE}).")
@click.option("--log-level", default="warning", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))
def serve_command(env_id: str, host: str, port: int, env_args: tuple[str, ...], max_sessions: int,
                  idle_timeout: float, token: str | None, log_level: str) -> None:
    """Serve ENV_ID over OpenEnv's protocol: WebSocket /ws (one env per connection), HTTP /reset /state
    /health /schema /metadata, MCP JSON-RPC at /mcp.

    \b
    Examples:
      agentgym serve SQL-v0 --port 8000
      agentgym serve FHIR-v0 --env-arg split=test --max-sessions 256 --token "$SECRET"
    Then, in Python: gym.make("SQL-v0", remote="ws://127.0.0.1:8000")
    """
    try:
        from agentgym.serving.server import ServeConfig, serve
    except ImportError as error:
        raise _missing_extra(error) from None
    token = token or os.environ.get(TOKEN_VARIABLE) or None
    if host not in ("127.0.0.1", "localhost", "::1") and not token:
        click.echo(f"warning: serving on {host} without a token: anyone who reaches this port can run episodes "
                   f"(pass --token or set {TOKEN_VARIABLE})", err=True)
    try:
        config = ServeConfig(env_id=env_id, env_args=parse_assignments(env_args), max_sessions=max_sessions,
                             idle_timeout=idle_timeout, token=token)
    except ValueError as error:
        raise click.ClickException(str(error)) from None

    def ready(url: str) -> None:
        click.echo(f"serving {env_id} at {url} (health: {url.replace('ws://', 'http://')}/health); "
                   f"{'token required' if token else 'no token'}; Ctrl-C stops", err=True)
        sys.stderr.flush()

    try:
        serve(config, host=host, port=port, log_level=log_level, on_ready=ready)
    except KeyError as error:
        raise click.ClickException(str(error.args[0])) from None
    except (ValueError, TypeError, FileNotFoundError) as error:
        raise click.ClickException(f"could not make {env_id}: {error}") from None


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
