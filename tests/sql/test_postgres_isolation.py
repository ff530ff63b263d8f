"""SQL-v0 on a real PostgreSQL server: no episode can change another's session, the grader's, or the gold.

Attacks that need a running server (so they cannot live in tests/redteam/, whose envs come from gym.make
alone): session settings through set_config, watching other sessions, sleeping and locks; plus the layers
under the refusal (every query rolled back, the session discarded at reset, a client-side cancel).
"""

from __future__ import annotations

import time

import gymnasium as gym
import psycopg
import pytest
from agentgym_sql.data import engines
from agentgym_sql.data.engines import PostgresEngine, SqlError
from agentgym_sql.env import _reader_dsn

import agentgym  # noqa: F401
from agentgym.agents import OracleAgent
from agentgym.rollout import run_episode

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def env(postgres_server: str) -> gym.Env:
    made = gym.make("SQL-v0", backend="postgres", postgres_dsn=postgres_server, split="train", timeout_s=1.0,
                    families=["filters", "topk_ties"])
    yield made
    made.close()


def retail_tasks(env: gym.Env) -> list[str]:
    return [t.id for t in env.unwrapped.task_set if t.metadata["database"] == "retail"]


def run_sql(env: gym.Env, sql: str) -> str:
    observation, *_ = env.step({"name": "execute_sql", "arguments": {"sql": sql}})
    return str(observation)


@pytest.mark.parametrize("sql", [
    "SELECT set_config('search_path', 'hr', false)",
    "SELECT \"set_config\"('statement_timeout', '0', false)",
    "SELECT pg_catalog.set_config('search_path', 'hr', false)",
    "SELECT query FROM pg_stat_activity",
    "SELECT query FROM pg_catalog.\"pg_stat_activity\"",
    "SELECT * FROM pg_stat_get_activity(NULL)",
    "SELECT * FROM pg_locks",
    "SELECT pg_sleep(0.1)",
    "SELECT pg_sleep_for('1 second')",
    "SELECT pg_advisory_lock(1)",
    "SELECT pg_terminate_backend(1)",
    "SELECT * FROM U&\"\\0070g_stat_activity\"",
    "SELECT name, setting FROM pg_settings",
])
def test_session_and_other_session_access_is_refused(env: gym.Env, sql: str) -> None:
    env.reset(options={"task_id": retail_tasks(env)[0]})
    observation = run_sql(env, sql)
    assert observation.startswith("Error:") and "not" in observation and "allowed" in observation \
        or "not available" in observation, observation


def test_a_setting_made_by_a_query_does_not_outlive_it(env: gym.Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """The layer under the refusal: with the check switched off, set_config still changes nothing lasting."""
    tasks = retail_tasks(env)
    monkeypatch.setattr(engines, "check_postgres_query", lambda text: None)
    env.reset(options={"task_id": tasks[0]})
    assert "| hr |" in run_sql(env, "SELECT set_config('search_path', 'hr', false)")
    assert "| retail |" in run_sql(env, "SELECT current_setting('search_path')")
    run_sql(env, "SELECT set_config('statement_timeout', '0', false)")
    assert "| 1s |" in run_sql(env, "SELECT current_setting('statement_timeout')")
    monkeypatch.undo()
    for task_id in tasks[:10]:  # later episodes, and their gold results, are untouched
        assert run_episode(env, OracleAgent(), task_id=task_id).reward == 1.0


def test_session_locks_are_released_at_reset(env: gym.Env, postgres_server: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = retail_tasks(env)
    # The refusal of advisory locks switched off, to test the layer under it on the real server.
    monkeypatch.setattr(engines, "check_postgres_query", lambda text: None)
    env.reset(options={"task_id": tasks[0]})
    run_sql(env, "SELECT pg_advisory_lock(4242)")
    monkeypatch.undo()

    def advisory_locks() -> int:
        with psycopg.connect(postgres_server) as admin:
            return int(admin.execute("SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' "
                                     "AND objid = 4242").fetchone()[0])

    assert advisory_locks() == 1
    env.reset(options={"task_id": tasks[1]})
    assert advisory_locks() == 0


def test_the_grader_reads_through_its_own_session(env: gym.Env) -> None:
    env.reset(options={"task_id": retail_tasks(env)[0]})
    state = env.unwrapped.state  # what the tools receive: it does not reach the grader's session
    assert not hasattr(state, "grader") and not hasattr(state, "task")
    grading = env.unwrapped._grading  # the grader's side, kept by the env
    assert grading.grader is not grading.engine
    agent_pid = state.engine.execute("SELECT pg_backend_pid() AS pid").rows[0][0]
    grader_pid = grading.grader.execute("SELECT pg_backend_pid() AS pid").rows[0][0]
    assert agent_pid != grader_pid


def test_engines_are_shared_only_with_identical_connection_settings(postgres_server: str) -> None:
    kwargs = {"backend": "postgres", "split": "train", "families": ["filters"]}
    one = gym.make("SQL-v0", postgres_dsn=postgres_server, timeout_s=1.0, **kwargs)
    two = gym.make("SQL-v0", postgres_dsn=postgres_server, timeout_s=2.0, **kwargs)
    three = gym.make("SQL-v0", postgres_dsn=postgres_server + " application_name=other", timeout_s=1.0, **kwargs)
    task_id = next(t.id for t in one.unwrapped.task_set if t.metadata["database"] == "retail")
    for made in (one, two, three):
        made.reset(options={"task_id": task_id})
    engines_seen = [made.unwrapped.state.engine for made in (one, two, three)]
    assert len({id(engine) for engine in engines_seen}) == 3
    assert [engine.timeout_s for engine in engines_seen] == [1.0, 2.0, 1.0]
    for made in (one, two, three):
        made.close()


def test_a_client_side_cancel_backs_the_server_timeout(env: gym.Env, postgres_server: str) -> None:
    env.reset(options={"task_id": retail_tasks(env)[0]})  # the retail schema is loaded
    engine = PostgresEngine(_reader_dsn(postgres_server), "retail", timeout_s=0.5)
    engine._connection.execute("SET statement_timeout = 0")  # as if the server-side limit were lost
    started = time.monotonic()
    with pytest.raises(SqlError, match="longer than 0.5 s"):
        engine.execute("SELECT COUNT(*) FROM generate_series(1, 2000000000)")
    assert time.monotonic() - started < 3.0
    assert engine.execute("SELECT COUNT(*) FROM stores").rows == [(16,)]  # the session still works
    engine.close()
