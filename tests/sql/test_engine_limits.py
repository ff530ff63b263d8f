"""Query limits on DuckDB and PostgreSQL, the engines that count no work: a stopped query is always labelled
`query_timeout`, and every built-in gold sits far below the limit (at most a tenth of it).

SQLite counts work (`test_sql_fair_rewards.py`). DuckDB and PostgreSQL offer no counter of work a client can
stop a query on, so their limit is the wall clock (`DEFAULT_TIMEOUT_S`). The task set itself stays free of
wall-clock measurements (a set filtered by timing would differ from machine to machine); instead the slow tests
here run every gold on both engines and hold each to a tenth of the limit.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from agentgym_sql.data.engines import DEFAULT_TIMEOUT_S, GOLD_STEP_SHARE
from agentgym_sql.env import SqlEnv

from agentgym import Task

# 22,000 cubed rows, each multiplied and summed: no statistics or rewrite skips the work.
CROSS = "SELECT SUM(a.grade * b.grade * c.grade) FROM enrollments AS a, enrollments AS b, enrollments AS c"


def _school_query_task(env: SqlEnv) -> Task:
    return next(task for task in env.task_set if task.metadata["database"] == "school"
                and task.verifier.params["mode"] == "sql")


def _timed_out(env: SqlEnv) -> tuple[float, dict]:
    task = _school_query_task(env)
    env.reset(options={"task_id": task.id})
    observation, *_ = env.step({"name": "execute_sql", "arguments": {"sql": CROSS}})
    assert "query limit" in observation, observation
    _obs, reward, terminated, _truncated, info = env.step({"name": "submit", "arguments": {"sql": CROSS}})
    assert terminated
    return float(reward), info


def _check_timeout_label(**backend: str) -> None:
    env = SqlEnv(split="test", families=["filters"], timeout_s=0.3, max_turns=3, **backend)
    try:
        reward, info = _timed_out(env)
    finally:
        env.close()
    assert reward == 0.0
    assert info["diagnosis"]["domain"] == ["query_timeout"]
    assert info["reward_breakdown"].get("verifier/query_limit") == 1.0


def test_a_duckdb_query_past_its_limit_is_labelled_query_timeout() -> None:
    _check_timeout_label(backend="duckdb")


@pytest.mark.postgres
def test_a_postgres_query_past_its_limit_is_labelled_query_timeout(postgres_server: str) -> None:
    _check_timeout_label(backend="postgres", postgres_dsn=postgres_server)


def _slowest_golds(env: SqlEnv, every: int = 1) -> list[tuple[float, str]]:
    timings = []
    for task in list(env.task_set)[::every]:
        env.reset(options={"task_id": task.id})
        start = time.perf_counter()
        env.state.engine.execute(task.metadata["gold_sql"][env.backend])
        timings.append((time.perf_counter() - start, task.id))
    return sorted(timings, reverse=True)[:5]


@pytest.fixture()
def duckdb_env() -> Iterator[SqlEnv]:
    env = SqlEnv(backend="duckdb")
    yield env
    env.close()


@pytest.mark.slow
def test_every_gold_takes_under_a_tenth_of_the_limit_on_duckdb(duckdb_env: SqlEnv) -> None:
    slowest = _slowest_golds(duckdb_env)
    print(f"slowest golds on DuckDB (s, task): {slowest}")
    assert slowest[0][0] <= DEFAULT_TIMEOUT_S / GOLD_STEP_SHARE, slowest


@pytest.mark.slow
@pytest.mark.postgres
def test_every_gold_takes_under_a_tenth_of_the_limit_on_postgres(postgres_server: str) -> None:
    env = SqlEnv(backend="postgres", postgres_dsn=postgres_server)
    try:
        slowest = _slowest_golds(env)
    finally:
        env.close()
    print(f"slowest golds on PostgreSQL (s, task): {slowest}")
    assert slowest[0][0] <= DEFAULT_TIMEOUT_S / GOLD_STEP_SHARE, slowest
