"""The generated databases: deterministic, distinct schemas, real quirks, same rows in SQLite and DuckDB."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import duckdb
import pytest
from agentgym_sql.data import DATABASES, ensure_duckdb, ensure_sqlite
from agentgym_sql.data.build import cache_dir
from agentgym_sql.data.engines import DUCKDB_CONFIG


def table_digest(path: Path) -> str:
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    digest = hashlib.sha256()
    for (table,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"):
        for row in connection.execute(f"SELECT * FROM {table} ORDER BY 1"):
            digest.update(repr(row).encode())
    connection.close()
    return digest.hexdigest()


def test_six_databases_with_distinct_schemas_and_splits() -> None:
    generic = [spec for spec in DATABASES.values() if spec.kind == "generic"]
    assert len(generic) >= 6
    schemas = {frozenset(t.name for t in spec.tables) for spec in generic}
    assert len(schemas) == len(generic)
    assert {spec.split for spec in DATABASES.values()} == {"train", "test"}


def test_erp_instances_share_a_wide_schema_but_not_their_facts() -> None:
    """The hard tier's databases: one 33-table schema, instances on both splits, each with its own data."""
    erp = [spec for spec in DATABASES.values() if spec.kind == "erp"]
    assert {spec.split for spec in erp} == {"train", "test"}
    assert len({frozenset(t.name for t in spec.tables) for spec in erp}) == 1 and len(erp[0].tables) >= 30
    assert len({table_digest(ensure_sqlite(spec)) for spec in erp}) == len(erp)


def test_generation_is_deterministic_per_seed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = DATABASES["hr"]
    first = table_digest(ensure_sqlite(spec, seed=0))
    monkeypatch.setenv("AGENTGYM_CACHE", str(tmp_path))
    assert cache_dir() == tmp_path / "sql"
    again = ensure_sqlite(spec, seed=0)
    assert again.parent == tmp_path / "sql"
    assert table_digest(again) == first
    assert table_digest(ensure_sqlite(spec, seed=1)) != first


@pytest.mark.parametrize("name", ["retail", "hospital", "flights", "hr", "school"])
def test_data_has_keys_nulls_dates_quirks_and_ties(name: str) -> None:
    spec = DATABASES[name]
    connection = sqlite3.connect(f"file:{ensure_sqlite(spec)}?mode=ro", uri=True)
    total = sum(connection.execute(f"SELECT COUNT(*) FROM {t.name}").fetchone()[0] for t in spec.tables)
    assert total >= 3000
    assert any(c.references for t in spec.tables for c in t.columns)
    nullable = [(t.name, c.name) for t in spec.tables for c in t.columns if c.nullable]
    assert any(connection.execute(f"SELECT COUNT(*) FROM {t} WHERE {c} IS NULL").fetchone()[0] for t, c in nullable)
    assert any(c.type in ("date", "timestamp") for t in spec.tables for c in t.columns)
    messy = [(t.name, c.name) for t in spec.tables for c in t.columns if c.messy]
    assert messy and any(connection.execute(
        f"SELECT COUNT(*) FROM {t} WHERE {c} != TRIM({c}) OR {c} = UPPER({c}) OR {c} = LOWER({c})").fetchone()[0]
        for t, c in messy)
    ties = [(t.name, c.name) for t in spec.tables for c in t.columns if c.role == "measure"]
    assert any(connection.execute(f"SELECT COUNT(*) FROM (SELECT {c} FROM {t} GROUP BY {c} HAVING COUNT(*) > 1)")
               .fetchone()[0] for t, c in ties)
    # Foreign keys hold: every non-null reference points at an existing row.
    for table in spec.tables:
        for column in table.columns:
            if column.references:
                parent, key = column.references.split(".")
                orphans = connection.execute(
                    f"SELECT COUNT(*) FROM {table.name} WHERE {column.name} IS NOT NULL AND {column.name} NOT IN "
                    f"(SELECT {key} FROM {parent})").fetchone()[0]
                assert orphans == 0, f"{table.name}.{column.name}"
    connection.close()


def test_largest_database_has_a_million_rows_and_is_cached() -> None:
    spec = DATABASES["finance"]
    path = ensure_sqlite(spec)
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    assert connection.execute("SELECT COUNT(*) FROM transactions").fetchone()[0] == 1_000_000
    connection.close()
    assert ensure_sqlite(spec) == path  # second call reuses the cached file


def test_duckdb_holds_the_same_rows_as_sqlite() -> None:
    spec = DATABASES["retail"]
    lite = sqlite3.connect(f"file:{ensure_sqlite(spec)}?mode=ro", uri=True)
    duck = duckdb.connect(str(ensure_duckdb(spec)), read_only=True, config=dict(DUCKDB_CONFIG))
    for table in spec.tables:
        assert lite.execute(f"SELECT COUNT(*) FROM {table.name}").fetchone() == \
            duck.execute(f"SELECT COUNT(*) FROM {table.name}").fetchone()
    query = "SELECT COUNT(*), SUM(LENGTH(full_name)) FROM customers WHERE full_name != TRIM(full_name)"
    assert lite.execute(query).fetchone() == duck.execute(query).fetchone()
    assert duck.execute("SELECT COUNT(*) FROM customers WHERE email IS NULL").fetchone() == \
        lite.execute("SELECT COUNT(*) FROM customers WHERE email IS NULL").fetchone()
    duck.close()
    lite.close()
