"""SQL-v0 hints from real episodes: closest table and column, column types, the dialect; and that they come from
the schema alone (two tasks on one database get the same hint for the same mistake)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest

import agentgym  # noqa: F401  (registers SQL-v0)
from agentgym.feedback import HINT_PREFIX


def _hints(observation: str) -> list[str]:
    return observation.split(HINT_PREFIX)[1:]


def _first_task(env: gym.Env[Any, Any], database: str = "finance", mode: str | None = None) -> str:
    for task in env.unwrapped.task_set:
        if task.metadata.get("database") == database and (mode is None or task.verifier.params.get("mode",
                                                                                                  "sql") == mode):
            return str(task.id)
    raise AssertionError(f"no {database} task")


def _run(env: gym.Env[Any, Any], task_id: str, sql: str, tool: str = "execute_sql") -> str:
    env.reset(seed=0, options={"task_id": task_id})
    arguments = {"table": sql} if tool == "describe_table" else {"sql": sql}
    observation, *_ = env.step({"name": tool, "arguments": arguments})
    return str(observation)


@pytest.fixture(scope="module", params=["sqlite", "duckdb"])
def env(request: pytest.FixtureRequest) -> Any:
    made = gym.make("SQL-v0", backend=request.param, feedback="hints")
    yield made
    made.close()


def test_unknown_column_gets_the_closest_column_of_the_tables_the_query_reads(env: Any) -> None:
    task = _first_task(env)
    (hint,) = _hints(_run(env, task, "SELECT a.balanse FROM accounts a"))
    assert hint.startswith("No column is named 'balanse'; the closest column name is 'balance' (table accounts).")
    assert "accounts has the columns account_id, iban" in hint


def test_unknown_table_gets_the_closest_table_in_execute_sql_and_describe_table(env: Any) -> None:
    task = _first_task(env)
    (hint,) = _hints(_run(env, task, "SELECT * FROM acounts"))
    assert hint.startswith("There is no table 'acounts'; the closest table name is 'accounts'.")
    (described,) = _hints(_run(env, task, "acount", tool="describe_table"))
    assert described.startswith("There is no table 'acount'; the closest table name is 'accounts'.")


def test_a_syntax_error_or_unknown_function_gets_a_note_on_the_dialect(env: Any) -> None:
    task = _first_task(env)
    name = "SQLite" if env.unwrapped.backend == "sqlite" else "DuckDB"
    (syntax,) = _hints(_run(env, task, "SELECT * FROM accounts WHERE"))
    assert syntax.startswith(f"This database is {name}.")
    (function,) = _hints(_run(env, task, "SELECT frobnicate(balance) FROM accounts"))
    assert function.startswith(f"This database is {name}. There is no function frobnicate() here.")


def test_a_type_mismatch_points_to_the_column_types() -> None:
    env = gym.make("SQL-v0", backend="duckdb", feedback="hints")
    try:
        observation = _run(env, _first_task(env), "SELECT balance + 'x'::INTEGER FROM accounts")
    finally:
        env.close()
    assert any(hint.startswith("A value does not fit the column's type.") for hint in _hints(observation))


def test_hints_come_from_the_schema_not_the_task() -> None:
    """Every task on one database gets the same hint for the same mistake, whatever its gold."""
    env = gym.make("SQL-v0", feedback="hints")
    try:
        tasks = [task for task in env.unwrapped.task_set if task.metadata.get("database") == "finance"][:6]
        assert len({str(task.answer) for task in tasks}) > 1
        for sql in ("SELECT nme FROM clients", "SELECT * FROM acounts", "SELECT * FROM", "SELECT x(1)"):
            seen = {_run(env, task.id, sql) for task in tasks}
            assert len(seen) == 1, sql
    finally:
        env.close()


def test_a_column_named_like_the_answer_gets_the_same_hint_as_any_other_name() -> None:
    env = gym.make("SQL-v0", feedback="hints")
    try:
        task = next(task for task in env.unwrapped.task_set if task.verifier.params.get("mode") == "answer"
                    and task.metadata.get("database") == "finance")
        gold = "".join(character for character in str(task.answer) if character.isdigit())[:8] or "0"
        other = "".join(str((int(digit) + 5) % 10) for digit in gold)
        shown = {}
        for name in (f"answer_{gold}", f"answer_{other}", "value", f"v{gold}"):
            text = " ".join(_hints(_run(env, task.id, f"SELECT {name} FROM accounts")))
            shown[name] = text.replace(name, "NAME")
        assert shown[f"answer_{gold}"] == shown[f"answer_{other}"]
        assert all(text.startswith("No column is named 'NAME'") for text in shown.values())
    finally:
        env.close()


def test_feedback_none_shows_the_engine_message_alone() -> None:
    env = gym.make("SQL-v0")
    try:
        assert _run(env, _first_task(env), "SELECT balanse FROM accounts") == \
            "Error: SQLite error: no such column: balanse"
    finally:
        env.close()


@pytest.mark.postgres
def test_postgres_errors_get_the_same_hints(postgres_server: str) -> None:
    env = gym.make("SQL-v0", backend="postgres", postgres_dsn=postgres_server, feedback="hints")
    try:
        task = _first_task(env)
        column = _hints(_run(env, task, "SELECT balanse FROM accounts"))
        assert column[0].startswith("No column is named 'balanse'; the closest column name is 'balance'")
        table = _hints(_run(env, task, "SELECT * FROM acounts"))
        assert table[0].startswith("There is no table 'acounts'; the closest table name is 'accounts'.")
        function = _hints(_run(env, task, "SELECT frobnicate(balance) FROM accounts"))
        assert function[-1].startswith("This database is PostgreSQL. There is no function frobnicate() here.")
    finally:
        env.close()
