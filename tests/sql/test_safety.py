"""The bad-input list: each hostile query is an error observation, the episode goes on, files never change."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import gymnasium as gym
import pytest
from agentgym_sql.data import DATABASES, ensure_duckdb, ensure_sqlite
from agentgym_sql.data.engines import SqliteEngine, _sqlite_authorizer

import agentgym  # noqa: F401

HOSTILE = [
    "DROP TABLE {table}",
    "DELETE FROM {table}",
    "UPDATE {table} SET {column} = NULL",
    "INSERT INTO {table} SELECT * FROM {table}",
    "CREATE TABLE stolen AS SELECT * FROM {table}",
    "ATTACH DATABASE '/tmp/agentgym-attack.db' AS attack",
    "PRAGMA writable_schema = ON",
    "SELECT load_extension('/tmp/evil')",
    "VACUUM INTO '/tmp/agentgym-vacuum.db'",
    "SELECT 1; DROP TABLE {table}",
    "WITH gone AS (SELECT 1) DELETE FROM {table}",
    "COPY {table} TO '/tmp/agentgym-copy.csv'",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT COUNT(*) FROM transactions AS a, transactions AS b, transactions AS c",
    "SELECT " + " + ".join(["1"] * 300_000),
    "SELECT '\udcff\udcfe'",
]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("backend", ["sqlite", "duckdb"])
def test_hostile_run_leaves_every_file_unchanged(backend: str) -> None:
    spec = DATABASES["finance"]
    files = [ensure_sqlite(spec), ensure_duckdb(spec)] if backend == "duckdb" else [ensure_sqlite(spec)]
    before = [digest(path) for path in files]
    env = gym.make("SQL-v0", backend=backend, split="test", timeout_s=1.0, max_turns=100)
    task = next(t for t in env.unwrapped.task_set if t.metadata["database"] == "finance")
    env.reset(options={"task_id": task.id})
    for query in HOSTILE:
        sql = query.format(table="accounts", column="balance")
        observation, reward, terminated, truncated, _ = env.step({"name": "execute_sql", "arguments": {"sql": sql}})
        assert observation.startswith("Error:"), (sql[:60], observation[:200])
        assert not terminated and not truncated and reward == 0.0
    # A hostile *submission* is refused too, and the episode still goes on.
    observation, _, terminated, _, _ = env.step({"name": "submit", "arguments": {"sql": "DROP TABLE accounts"}})
    assert observation.startswith("Error:") and not terminated
    observation, *_ = env.step({"name": "execute_sql", "arguments": {"sql": "SELECT COUNT(*) FROM accounts"}})
    assert "9000" in observation
    env.close()
    assert [digest(path) for path in files] == before
    assert not Path("/tmp/agentgym-vacuum.db").exists() and not Path("/tmp/agentgym-attack.db").exists()


def test_timeout_message_is_readable_and_engine_recovers() -> None:
    engine = SqliteEngine(ensure_sqlite(DATABASES["retail"]), timeout_s=0.3)
    with pytest.raises(Exception, match="longer than 0.3 s|more than 40,000,000 steps"):
        engine.execute("SELECT COUNT(*) FROM order_items a, order_items b, order_items c")
    assert engine.execute("SELECT COUNT(*) FROM stores").rows == [(16,)]
    engine.close()


def test_sqlite_authorizer_blocks_writes_even_without_the_statement_check() -> None:
    """The second layer alone: statements sent straight to the connection, past `check_query`."""
    path = ensure_sqlite(DATABASES["hr"])
    before = digest(path)
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    connection.set_authorizer(_sqlite_authorizer)
    for statement in ("DELETE FROM employees", "ATTACH ':memory:' AS other", "PRAGMA writable_schema = 1",
                      "VACUUM INTO '/tmp/agentgym-vacuum2.db'", "CREATE TEMP TABLE t (a)",
                      "SELECT load_extension('x')"):
        with pytest.raises(sqlite3.DatabaseError):
            connection.execute(statement)
    assert connection.execute("SELECT COUNT(*) FROM employees").fetchone() == (1500,)
    connection.close()
    assert digest(path) == before
    assert not Path("/tmp/agentgym-vacuum2.db").exists()
