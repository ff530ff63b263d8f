"""``agentgym fhir ...``: generate a population, import FHIR data, serve a store over REST, describe it.

Mounted by the agentgym CLI through the ``agentgym.commands`` entry point ``fhir``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from agentgym_fhir.errors import FhirError


def _fail(error: FhirError) -> None:
    raise click.ClickException(error.message)


@click.group("fhir")
def fhir() -> None:
    """FHIR R4 data: generate a synthetic population, import bundles or NDJSON, serve a store.

    \b
    Examples:
      agentgym fhir generate --patients 1000 --seed 0 --out pop.sqlite
      agentgym fhir import ./synthea/fhir --out synthea.sqlite
      agentgym fhir serve pop.sqlite --port 8080
    """


@fhir.command("generate")
@click.option("--patients", default=1000, show_default=True, type=click.IntRange(1), help="How many patients.")
@click.option("--seed", default=0, show_default=True, type=int, help="Population seed (same seed, same bytes).")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Store file to create (SQLite).")
@click.option("--overwrite", is_flag=True, help="Replace OUT if it exists.")
@click.option("--workers", type=click.IntRange(1), default=None, help="Generator processes (default: CPUs).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def generate_command(patients: int, seed: int, out: Path, overwrite: bool, workers: int | None, quiet: bool) -> None:
    """Generate a deterministic synthetic population of FHIR R4 records into a store.

    \b
    Example:
      agentgym fhir generate --patients 1000 --seed 0 --out pop.sqlite
    """
    from agentgym_fhir.data.generate import generate_store

    started = time.perf_counter()
    try:
        store = generate_store(out, patients, seed, overwrite=overwrite, progress=not quiet and sys.stderr.isatty(),
                               workers=workers)
    except FhirError as error:
        _fail(error)
        return
    counts = store.type_counts()
    total = sum(counts.values())
    store.close()
    click.echo(f"wrote {total} resources for {patients} patients to {out} in {time.perf_counter() - started:.1f} s "
               f"({total / patients:.0f} per patient)")


@fhir.command("import")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Store file to import into (created if absent, added to if present).")
@click.option("--no-validate", is_flag=True, help="Skip FHIR model validation (faster; trusted data only).")
@click.option("--report", "report_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the full report (every issue) as JSON here.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def import_command(sources: tuple[Path, ...], out: Path, no_validate: bool, report_path: Path | None,
                   quiet: bool) -> None:
    """Import FHIR Bundles (transaction or collection; .json or .json.gz; files or folders) and bulk-export
    NDJSON (.ndjson, .ndjson.gz) into a store, in one transaction.

    \b
    Examples:
      agentgym fhir import ./synthea/output/fhir --out synthea.sqlite
      agentgym fhir import Patient.ndjson Observation.ndjson.gz --out export.sqlite --report issues.json
    """
    from agentgym_fhir.data.importers import import_files
    from agentgym_fhir.store import FhirStore

    try:
        store = FhirStore.open(out, readonly=False) if out.exists() else FhirStore.create(out)
        started = time.perf_counter()
        if not quiet and sys.stderr.isatty():
            from rich.progress import Progress

            with Progress(transient=True) as bar:
                task = bar.add_task("importing", total=None)

                def progress(stage: str, done: int, total: int) -> None:
                    bar.update(task, description=stage, completed=done, total=total)

                report = import_files(store, list(sources), validate=not no_validate, progress=progress)
        else:
            report = import_files(store, list(sources), validate=not no_validate)
    except FhirError as error:
        _fail(error)
        return
    elapsed = time.perf_counter() - started
    store.close()
    click.echo(report.summary() + f" in {elapsed:.1f} s")
    for issue in report.issues[:20]:
        click.echo(f"  {issue}", err=True)
    if len(report.issues) > 20:
        click.echo(f"  ... and {len(report.issues) - 20} more" + ("" if report_path else " (use --report FILE)"),
                   err=True)
    if report_path is not None:
        report_path.write_text(json.dumps(report.to_dict(), indent=1))


@fhir.command("serve")
@click.argument("store_path", metavar="STORE", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--port", default=8080, show_default=True, type=int, help="TCP port (0: any free port).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--base-path", default="/fhir", show_default=True, help="URL path of the FHIR base.")
@click.option("--ephemeral", is_flag=True, help="Keep writes in memory; the store file is never changed.")
@click.option("--handling", type=click.Choice(["lenient", "strict"]), default="lenient", show_default=True,
              help="Unknown search parameters: ignored (the FHIR default) or refused with 400. A client's "
                   "`Prefer: handling=...` header overrides it per request.")
@click.option("--verbose", is_flag=True, help="Log each request.")
def serve_command(store_path: Path, port: int, host: str, base_path: str, ephemeral: bool, handling: str,
                  verbose: bool) -> None:
    """Serve a store as a FHIR R4 REST API (read, search, create, update, /metadata).

    \b
    Example:
      agentgym fhir serve pop.sqlite --port 8080
      curl 'http://127.0.0.1:8080/fhir/Patient?family=smith&_count=5'
    """
    from agentgym_fhir.server import make_server
    from agentgym_fhir.store import FhirStore

    try:
        store = FhirStore.open(store_path, readonly=ephemeral)
    except FhirError as error:
        _fail(error)
        return
    target = store.episode() if ephemeral else store
    try:
        server = make_server(target, host, port, base_path=base_path, verbose=verbose, handling=handling)
    except OSError as error:
        store.close()
        raise click.ClickException(f"cannot listen on {host}:{port}: {error.strerror or error}. Choose another "
                                   f"port with --port (0 picks a free one).") from None
    click.echo(f"serving {store_path} at {server.url} (Ctrl-C to stop)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        store.close()


@fhir.command("info")
@click.argument("store_path", metavar="STORE", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def info_command(store_path: Path) -> None:
    """Print what a store holds (resource counts per type, generator facts) as JSON.

    \b
    Example:
      agentgym fhir info pop.sqlite
    """
    from agentgym_fhir.store import FhirStore

    try:
        store = FhirStore.open(store_path, readonly=True)
    except FhirError as error:
        _fail(error)
        return
    counts = store.type_counts()
    facts = {key: store.get_meta(key) for key in ("generator", "seed", "patients", "reference_date")}
    store.close()
    click.echo(json.dumps({"resources": sum(counts.values()), "by_type": counts,
                           **{k: v for k, v in facts.items() if v is not None}}, indent=1))


__all__ = ["fhir"]
