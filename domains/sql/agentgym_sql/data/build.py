"""Materialise generated databases into SQLite and DuckDB files (cached) and into a PostgreSQL server.

SQLite is the source of truth: a database is generated once per (name, seed, version) into
`$AGENTGYM_CACHE/sql/` (default `~/.cache/agentgym/sql/`), and the DuckDB file and PostgreSQL schema are
loaded from that SQLite file, so all three engines hold the same rows. Builds take a file lock, so parallel
test workers build each file once; finished files are made read-only.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentgym.cache import BuildProgress, building

from .schema import DatabaseSpec


def cache_dir() -> Path:
    """Where built databases live: `$AGENTGYM_CACHE/sql`, else `~/.cache/agentgym/sql`."""
    from agentgym.cache import cache_dir as agentgym_cache

    return agentgym_cache("sql")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path.with_suffix(path.suffix + ".lock"), "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _stem(spec: DatabaseSpec, seed: int, scale: int) -> str:
    suffix = f"-x{scale}" if scale != 1 else ""
    return f"{spec.name}-s{seed}-v{spec.version}{suffix}"


def ensure_sqlite(spec: DatabaseSpec, seed: int = 0, scale: int = 1) -> Path:
    """Return the cached SQLite file for `spec` at `seed`, generating it first if it is missing."""
    path = cache_dir() / f"{_stem(spec, seed, scale)}.sqlite"
    if path.exists():
        return path
    with _locked(path):
        if path.exists():
            return path
        with building(f"the SQL database {spec.name!r} (SQLite)", path, estimate="seconds, up to a minute",
                      unit="tables written") as progress:
            _build_sqlite(spec, seed, scale, path, progress)
    return path


def _build_sqlite(spec: DatabaseSpec, seed: int, scale: int, path: Path, progress: BuildProgress) -> None:
    """Generate `spec`'s rows into a temporary SQLite file, then rename it to `path` (made read-only)."""
    rows = spec.build_rows(random.Random(f"{spec.name}:{seed}"), scale)
    handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".building")
    os.close(handle)
    try:
        connection = sqlite3.connect(temporary)
        connection.execute("PRAGMA journal_mode = OFF")
        connection.execute("PRAGMA synchronous = OFF")
        for statement in spec.ddl("sqlite"):
            if statement.startswith("CREATE TABLE"):
                connection.execute(statement)
        for table in spec.tables:
            marks = ", ".join("?" * len(table.columns))
            connection.executemany(f"INSERT INTO {table.name} VALUES ({marks})", rows[table.name])
            progress.advance()
        for statement in spec.ddl("sqlite"):
            if statement.startswith("CREATE INDEX"):
                connection.execute(statement)
        connection.execute("ANALYZE")
        connection.commit()
        connection.close()
        os.chmod(temporary, 0o444)
        os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


def _csv_field(value: Any) -> str:
    if value is None:
        return "\\N"
    if isinstance(value, str):
        return '"' + value.replace('"', '""') + '"'
    return repr(value)


def ensure_duckdb(spec: DatabaseSpec, seed: int = 0, scale: int = 1) -> Path:
    """Return the cached DuckDB file for `spec`, loaded from the SQLite build (so the rows are identical)."""
    path = cache_dir() / f"{_stem(spec, seed, scale)}.duckdb"
    if path.exists():
        return path
    source = ensure_sqlite(spec, seed, scale)
    with _locked(path):
        if path.exists():
            return path
        with building(f"the SQL database {spec.name!r} (DuckDB)", path, estimate="seconds, up to a minute",
                      unit="tables written") as progress:
            _build_duckdb(spec, source, path, progress)
    return path


def _build_duckdb(spec: DatabaseSpec, source: Path, path: Path, progress: BuildProgress) -> None:
    """Copy every table of the SQLite build `source` into a DuckDB file, then rename it to `path`."""
    import duckdb

    workdir = Path(tempfile.mkdtemp(dir=path.parent, suffix=".building"))
    target = workdir / path.name
    try:
        reader = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
        writer = duckdb.connect(str(target))
        for statement in spec.ddl("duckdb"):
            writer.execute(statement)
        for table in spec.tables:
            csv_path = workdir / f"{table.name}.csv"
            with open(csv_path, "w", encoding="utf-8") as out:
                out.writelines(",".join(_csv_field(v) for v in row) + "\n" for row in reader.execute(f"SELECT * FROM {table.name}"))
            writer.execute(f"COPY {table.name} FROM '{csv_path}' (FORMAT csv, HEADER false, NULLSTR '\\N', "
                           "QUOTE '\"', ESCAPE '\"')")
            csv_path.unlink()
            progress.advance()
        writer.execute("CHECKPOINT")
        writer.close()
        reader.close()
        os.chmod(target, 0o444)
        os.replace(target, path)
    finally:
        for leftover in workdir.iterdir():
            leftover.unlink()
        workdir.rmdir()


READER_ROLE = "agentgym_reader"


def load_postgres(spec: DatabaseSpec, admin_dsn: str, seed: int = 0, scale: int = 1, *,
                  schema: str | None = None, reader_password: str = "agentgym_reader") -> str:
    """Load `spec` into schema `schema` (default: the database name) of the server at `admin_dsn`.

    Creates (once) the login role `agentgym_reader`, which may only SELECT, runs every transaction read-only
    and stops statements after 5 s; the env connects as that role. Reloading an existing schema is a no-op
    when its row counts already match. Returns the schema name.
    """
    import psycopg

    schema = schema or spec.name
    source = ensure_sqlite(spec, seed, scale)
    reader = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        ensure_reader_role(admin, reader_password)
        exists = admin.execute("SELECT 1 FROM information_schema.schemata WHERE schema_name = %s",
                               (schema,)).fetchone()
        if exists and _counts_match(admin, reader, spec, schema):
            reader.close()
            return schema
        admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        admin.execute(f'CREATE SCHEMA "{schema}"')
        admin.execute(f'SET search_path = "{schema}"')
        with admin.transaction():
            for statement in spec.ddl("postgres"):
                if statement.startswith("CREATE TABLE"):
                    admin.execute(statement)
            with admin.cursor() as cursor:
                for table in spec.tables:
                    columns = ", ".join(c.name for c in table.columns)
                    with cursor.copy(f"COPY {table.name} ({columns}) FROM STDIN") as copy:
                        for row in reader.execute(f"SELECT * FROM {table.name}"):
                            copy.write_row(row)
            for statement in spec.ddl("postgres"):
                if statement.startswith("CREATE INDEX"):
                    admin.execute(statement)
        admin.execute("RESET search_path")
        grant_reader(admin, schema)
        admin.execute("ANALYZE")
    reader.close()
    return schema


def ensure_reader_role(admin: Any, password: str = "agentgym_reader") -> None:
    """Create the read-only login role if missing (SELECT only, read-only transactions, 5 s statements)."""
    found = admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (READER_ROLE,)).fetchone()
    if not found:
        admin.execute(f"CREATE ROLE {READER_ROLE} LOGIN PASSWORD '{password}' NOSUPERUSER NOCREATEDB "
                      "NOCREATEROLE NOREPLICATION")
    admin.execute(f"ALTER ROLE {READER_ROLE} SET default_transaction_read_only = on")
    admin.execute(f"ALTER ROLE {READER_ROLE} SET statement_timeout = '5s'")
    admin.execute(f"ALTER ROLE {READER_ROLE} SET idle_in_transaction_session_timeout = '60s'")
    database = admin.execute("SELECT current_database()").fetchone()[0]
    admin.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
    admin.execute(f'REVOKE TEMPORARY ON DATABASE "{database}" FROM PUBLIC')
    admin.execute(f'GRANT CONNECT ON DATABASE "{database}" TO {READER_ROLE}')


def grant_reader(admin: Any, schema: str) -> None:
    admin.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO {READER_ROLE}')
    admin.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO {READER_ROLE}')


def _counts_match(admin: Any, reader: sqlite3.Connection, spec: DatabaseSpec, schema: str) -> bool:
    import psycopg

    for table in spec.tables:
        try:
            remote = admin.execute(f'SELECT COUNT(*) FROM "{schema}".{table.name}').fetchone()[0]
        except psycopg.errors.UndefinedTable:  # a load that stopped part way
            return False
        local = reader.execute(f"SELECT COUNT(*) FROM {table.name}").fetchone()[0]
        if remote != local:
            return False
    return True
