"""`agentgym view RUN [RUN2 ...] [--port P] [--static OUT.html]`."""

from __future__ import annotations

import errno
import time
from pathlib import Path

import click

from agentgym.viewer.runs import RunError, load_runs

DEFAULT_PORT = 8765


@click.command("view")
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(0, 65535),
              help="Port on 127.0.0.1 (0 = any free port).")
@click.option("--static", "static", default=None, type=click.Path(dir_okay=False, path_type=Path),
              help="Write one self-contained HTML report here instead of serving.")
def view_command(runs: tuple[Path, ...], port: int, static: Path | None) -> None:
    """Browse eval runs (RUN/trajectories.jsonl) and training runs (RUN/metrics.jsonl) in a local web page:
    a filterable episode table, each episode's conversation and reward breakdown, plots, and two runs side
    by side. The page is served on 127.0.0.1 only and needs no network.

    \b
    Examples:
      agentgym view runs/oracle
      agentgym view runs/ckpt-a runs/ckpt-b --port 9000
      agentgym view runs/qwen --static report.html
    """
    started = time.perf_counter()
    try:
        loaded = load_runs(list(runs))
    except RunError as error:
        raise click.ClickException(str(error)) from None
    episodes = sum(len(run.rows) for run in loaded)
    skipped = sum(run.skipped_lines for run in loaded)
    click.echo(f"loaded {len(loaded)} run(s), {episodes} episodes in {time.perf_counter() - started:.2f} s"
               + (f" ({skipped} unreadable lines skipped)" if skipped else ""), err=True)
    if static is not None:
        from agentgym.viewer.page import static_report

        try:
            static.parent.mkdir(parents=True, exist_ok=True)
            partial = static.with_name(static.name + ".partial")
            partial.write_text(static_report(loaded), encoding="utf-8")
            partial.replace(static)
        except OSError as error:
            raise click.ClickException(f"could not write {static}: {error.strerror or error}") from None
        click.echo(f"wrote {static}")
        return
    from agentgym.viewer.server import ViewerServer

    try:
        server = ViewerServer(loaded, port)
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise click.ClickException(f"port {port} on 127.0.0.1 is in use; choose another with --port "
                                       "(or --port 0 for any free one)") from None
        raise click.ClickException(f"could not listen on 127.0.0.1:{port}: {error.strerror or error}") from None
    click.echo(f"serving {server.url} (Ctrl-C to stop)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        click.echo("stopped", err=True)
    finally:
        server.server_close()
