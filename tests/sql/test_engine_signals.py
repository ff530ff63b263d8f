"""Work done once, not on every step: process signals read from the engine's compiler (SQLite's prepare and
authorizer, DuckDB's binder), gold results serialised once per task, text decoded by the driver.

Each test drives SQL-v0 (or an engine) as a user would and checks what they would see: the signals in the
breakdown, the rendered rows, the score. Timings are in bench/sql.py, never asserted here.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import gymnasium as gym
import pytest
from agentgym_sql.data.engines import QueryNames, SqlError, SqliteEngine, check_query, split_statements

import agentgym  # noqa: F401
from agentgym import Task, VerifierSpec


@pytest.fixture(scope="module")
def club(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small Spider-shaped SQLite file; one name holds bytes that are not UTF-8."""
    path = tmp_path_factory.mktemp("club") / "club.sqlite"
    connection = sqlite3.connect(path)
    connection.executescript("""
        CREATE TABLE Member (id INTEGER PRIMARY KEY, name TEXT, city TEXT, age INTEGER);
        CREATE TABLE Visit (member_id INTEGER REFERENCES Member(id), day TEXT);
        INSERT INTO Member VALUES (1, 'Ana', 'Lyon', 31), (2, 'Ben', 'Oslo', 42), (3, 'Caro', 'Lyon', 27);
        INSERT INTO Member VALUES (4, CAST(X'42C3' || X'FF' AS TEXT), 'Rome', 50);
        INSERT INTO Visit VALUES (1, '2024-01-02'), (1, '2024-02-03'), (3, '2024-03-04');
    """)
    connection.commit()
    connection.close()
    return path


def club_task(path: Path, sql: str, number: int = 0, mode: str = "sql") -> Task:
    connection = sqlite3.connect(path)
    connection.text_factory = lambda data: data.decode("utf-8", "replace")
    rows = [list(row) for row in connection.execute(sql).fetchall()]
    connection.close()
    solution = ([{"name": "submit", "arguments": {"sql": sql}}] if mode == "sql"
                else [{"name": "submit_answer", "arguments": {"value": rows}}])
    return Task(id=f"club-{number}", domain="sql", family="club", split="test", prompt="Database: club",
                answer=None, solution=solution,
                verifier=VerifierSpec(name="sql_execution", params={"match": "set", "mode": mode}),
                metadata={"database_path": str(path), "db_id": "club", "dialect": "sqlite",
                          "gold_sql": {"sqlite": sql}})


def signals_after(env: gym.Env, task_id: str, queries: list[str], submitted: str) -> dict[str, float]:
    env.reset(options={"task_id": task_id})
    for sql in queries:
        env.step({"name": "execute_sql", "arguments": {"sql": sql}})
    *_, info = env.step({"name": "submit", "arguments": {"sql": submitted}})
    return {key: value for key, value in info["reward_breakdown"].items() if key.startswith("process/")}


GOLD = "SELECT city, COUNT(*) FROM Member GROUP BY city"


@pytest.fixture
def env(club: Path) -> gym.Env:
    made = gym.make("SQL-v0", tasks=[club_task(club, GOLD)], max_turns=20)
    yield made
    made.close()


def test_a_good_query_earns_every_signal(env: gym.Env) -> None:
    signals = signals_after(env, "club-0", [GOLD], GOLD)
    assert signals == {"process/executes": 1.0, "process/names_exist": 1.0, "process/parses": 1.0}


def test_spider_style_double_quoted_text_is_judged_by_sqlite(env: gym.Env) -> None:
    """Spider's gold queries write text in double quotes (WHERE city = "Lyon"). SQLite runs them; the signal
    follows the engine, so a query that runs is not marked as naming a missing column."""
    sql = 'SELECT name FROM Member WHERE city = "Lyon"'
    signals = signals_after(env, "club-0", [sql], GOLD)
    assert signals["process/names_exist"] == 1.0 and signals["process/executes"] == 1.0


def test_errors_say_what_was_wrong(env: gym.Env) -> None:
    # syntax error: parses 0; missing table: parses 1, names 0; missing column: names 0 (sqlglot reads it)
    queries = ["SELEC name FROM Member", "SELECT name FROM Members", "SELECT nickname FROM Member"]
    signals = signals_after(env, "club-0", queries, GOLD)
    assert signals["process/executes"] == 0.0
    assert signals["process/parses"] == pytest.approx((0 + 1 + 1 + 1) / 4)
    assert signals["process/names_exist"] == pytest.approx((0 + 0 + 0 + 1) / 4)


def test_table_less_queries_earn_nothing(env: gym.Env) -> None:
    queries = ["SELECT 1", "WITH x AS (SELECT 2 AS v) SELECT v FROM x", "SELECT * FROM (VALUES (1), (2))"]
    signals = signals_after(env, "club-0", queries, GOLD)
    assert signals == {"process/names_exist": 1.0, "process/parses": 1.0}  # the submit alone


def test_a_submission_never_run_is_compiled_not_run(env: gym.Env) -> None:
    signals = signals_after(env, "club-0", [], "SELECT m.name FROM Member AS m JOIN Visit AS v ON v.member_id = m.id")
    assert signals == {"process/names_exist": 1.0, "process/parses": 1.0}
    signals = signals_after(env, "club-0", [], "SELECT name FROM Ghosts")
    assert signals == {"process/names_exist": 0.0, "process/parses": 1.0}


def test_signals_hold_when_sqlite_serves_the_statement_from_its_cache(env: gym.Env) -> None:
    """The second episode's query comes from sqlite3's statement cache (no compile, so no authorizer call):
    its signals must still be those of a query that reads a table."""
    first = signals_after(env, "club-0", [GOLD, "SELECT age FROM Member"], GOLD)
    second = signals_after(env, "club-0", [GOLD, "SELECT age FROM Member"], GOLD)
    assert first == second == {"process/executes": 1.0, "process/names_exist": 1.0, "process/parses": 1.0}


def test_text_that_is_not_utf8_reads_with_replacement_characters(club: Path, env: gym.Env) -> None:
    env.reset(options={"task_id": "club-0"})
    shown, *_ = env.step({"name": "execute_sql", "arguments": {"sql": "SELECT name FROM Member ORDER BY id"}})
    assert "| B\ufffd\ufffd |" in shown, shown  # 0xC3 begins a character that 0xFF does not finish
    engine = SqliteEngine(club)
    try:
        assert engine.execute("SELECT city FROM Member WHERE id = 1").rows == [("Lyon",)]
        assert engine.execute("SELECT name FROM Member WHERE id = 4").rows[0][0].endswith("\ufffd")
        assert engine.execute("SELECT name FROM Member WHERE id = 1").rows == [("Ana",)]
    finally:
        engine.close()


def test_answer_task_with_bad_bytes_is_solvable(club: Path) -> None:
    from agentgym.agents import OracleAgent
    from agentgym.rollout import run_episode

    task = club_task(club, "SELECT name, city FROM Member WHERE age > 30", number=1, mode="answer")
    made = gym.make("SQL-v0", tasks=[task, club_task(club, "SELECT name FROM Member", number=2)])
    try:
        assert run_episode(made, OracleAgent(), task_id="club-1").reward == 1.0
        assert run_episode(made, OracleAgent(), task_id="club-2").reward == 1.0
    finally:
        made.close()


def test_every_episode_of_a_task_shares_one_gold_result(env: gym.Env) -> None:
    env.reset(options={"task_id": "club-0"})
    first = env.unwrapped._grading.golds()[0]  # the grader side the env keeps apart from the tools
    first_keys = first.keys
    env.reset(options={"task_id": "club-0"})
    second = env.unwrapped._grading.golds()[0]
    assert second is first and second.keys is first_keys
    _, reward, *_ = env.step({"name": "submit", "arguments": {"sql": "SELECT city, COUNT(id) FROM Member GROUP BY 1"}})
    assert reward == 1.0


def test_engine_inspect_answers_without_reading_rows(club: Path) -> None:
    engine = SqliteEngine(club)
    try:
        assert engine.inspect("SELECT m.name FROM Member m JOIN Visit v ON v.member_id = m.id") == QueryNames(
            parses=True, names_exist=True, tables=frozenset({"member", "visit"}))
        assert engine.inspect("SELECT COUNT(*) FROM Visit;") == QueryNames(True, True, frozenset({"visit"}))
        assert engine.inspect("SELECT 1").tables == frozenset()
        assert engine.inspect("SELECT FROM WHERE") == QueryNames(False, False, frozenset())
        assert engine.inspect("SELECT * FROM main.Nowhere") == QueryNames(True, False, frozenset({"nowhere"}))
        assert engine.inspect("SELECT nickname FROM Member") is None  # a parser must say whether a table was named
        assert engine.inspect("DELETE FROM Member") is None
    finally:
        engine.close()


@pytest.mark.parametrize(("sql", "statements"), [
    ("SELECT ';' AS semicolon", 1),
    ('SELECT 1 AS "a;b"', 1),
    ("SELECT 1 -- a comment; DROP TABLE Member", 1),
    ("SELECT 1 /* ; */", 1),
    ("SELECT [x;y] FROM t", 1),
    ("SELECT `a;` FROM t", 1),
    ("SELECT 'it''s; fine'", 1),
    ("SELECT 1; SELECT 2", 2),
    ("SELECT 'open; ended", 1),
    ("SELECT 1 /* open; comment", 1),
])
def test_statements_split_outside_strings_and_comments(sql: str, statements: int) -> None:
    assert len(split_statements(sql)) == statements
    if statements == 1:
        assert check_query(sql + " ;") == sql
    else:
        with pytest.raises(SqlError, match="one statement per call"):
            check_query(sql)


def test_duckdb_signals_come_from_its_binder() -> None:
    env = gym.make("SQL-v0", backend="duckdb", split="test", max_turns=20)
    try:
        task = next(t for t in env.unwrapped.task_set if t.metadata["database"] == "school"
                    and t.verifier.params.get("mode") == "sql")
        env.reset(options={"task_id": task.id})
        for sql in ["SELECT COUNT(*) FROM students", "WITH n AS (SELECT 1 AS v) SELECT v FROM n",
                    "SELECT nickname FROM students"]:
            env.step({"name": "execute_sql", "arguments": {"sql": sql}})
        *_, info = env.step({"name": "submit", "arguments": {"sql": "SELECT COUNT(*) FROM students"}})
        breakdown = info["reward_breakdown"]
        # students: 1/1/1; the CTE of constants: none; the missing column: parses, names 0; the submit: 1/1
        assert breakdown["process/executes"] == 0.5
        assert breakdown["process/names_exist"] == pytest.approx(2 / 3)
        assert breakdown["process/parses"] == 1.0
    finally:
        env.close()
