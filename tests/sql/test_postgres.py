"""SQL-v0 on a real PostgreSQL server: loaded data, the read-only role, oracle, and a hostile run."""

from __future__ import annotations

import gymnasium as gym
import psycopg
import pytest

import agentgym  # noqa: F401
from agentgym.agents import OracleAgent
from agentgym.rollout import run_episode

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def env(postgres_server: str) -> gym.Env:
    made = gym.make("SQL-v0", backend="postgres", postgres_dsn=postgres_server, split="train", timeout_s=1.0)
    yield made
    made.close()


def test_oracle_on_postgres_sample(env: gym.Env) -> None:
    tasks = list(env.unwrapped.task_set)[::5]
    failures = [t.id for t in tasks if run_episode(env, OracleAgent(), task_id=t.id).reward != 1.0]
    assert not failures, failures[:20]


def test_reader_role_is_read_only_with_a_timeout(env: gym.Env, postgres_server: str) -> None:
    env.reset(options={"task_id": "sql-retail-filters-0000"})
    who, *_ = env.step({"name": "execute_sql", "arguments": {"sql": "SELECT current_user"}})
    assert "agentgym_reader" in who
    sneaky = "WITH gone AS (DELETE FROM orders RETURNING 1) SELECT COUNT(*) FROM gone"
    for sql in (sneaky, "SELECT pg_sleep(5)", "DROP TABLE orders", "SELECT * FROM pg_catalog.pg_authid"):
        observation, _, terminated, *_ = env.step({"name": "execute_sql", "arguments": {"sql": sql}})
        assert observation.startswith("Error:") and not terminated, observation
    with psycopg.connect(postgres_server) as admin:
        assert admin.execute("SELECT COUNT(*) FROM retail.orders").fetchone() == (8000,)
        settings = admin.execute("SELECT unnest(setconfig) FROM pg_db_role_setting s JOIN pg_roles r "
                                 "ON r.oid = s.setrole WHERE r.rolname = 'agentgym_reader'").fetchall()
        assert ("default_transaction_read_only=on",) in settings
        assert ("statement_timeout=5s",) in settings
