"""SQL-v0's hard tier and its test split: large, varied, measured, and graded on what each task asks.

- The test split has at least 400 distinct prompts and 100 hard tasks; the ERP databases are 33 tables wide.
- A task's difficulty follows the documented proxy (tables read, recursion, windows, traps of the data).
- Each trap of the data (dates in four formats, merged customers, missing discounts, reversed payments, ...)
  is a near-miss query that scores 0, and the oracle scores 1, on every hard test task.
- The same question has other facts on each test database, and prompts state their answer contract.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from agentgym_sql.data import DATABASES, ensure_sqlite
from agentgym_sql.env import DEFAULT_MAX_TURNS, SqlEnv
from agentgym_sql.tasks.difficulty import level, points
from agentgym_sql.tasks.erp import iso_day
from agentgym_sql.verify import normalize_rows

from agentgym.agents import OracleAgent
from agentgym.rollout import run_episode


@pytest.fixture(scope="module")
def test_env() -> Iterator[SqlEnv]:
    env = SqlEnv(split="test")
    yield env
    env.close()


def test_the_test_split_is_too_large_to_memorise_and_has_a_hard_tier(test_env: SqlEnv) -> None:
    tasks = list(test_env.task_set)
    assert len({task.prompt for task in tasks}) >= 400
    hard = [task for task in tasks if task.difficulty == "hard"]
    assert len(hard) >= 100
    assert len({task.family for task in hard}) >= 5
    assert {task.metadata["database"] for task in hard} >= {"erp_south", "erp_west"}


def test_erp_databases_are_wide() -> None:
    for name in ("erp_south", "erp_west"):
        connection = sqlite3.connect(f"file:{ensure_sqlite(DATABASES[name])}?mode=ro", uri=True)
        tables = connection.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' "
                                    "AND name NOT LIKE 'sqlite_%'").fetchone()[0]
        connection.close()
        assert tables >= 30, name


def test_difficulty_is_the_documented_proxy(test_env: SqlEnv) -> None:
    for task in test_env.task_set:
        score = points(task.metadata["gold_sql"]["sqlite"], ["trap"] * task.metadata["traps"])
        assert task.metadata["difficulty_points"] == score, task.id
        assert task.difficulty == level(score), task.id
    assert level(1) == "easy" and level(2) == level(4) == "medium" and level(5) == "hard"
    one_table = "SELECT full_name FROM teachers WHERE salary > 50000"
    assert points(one_table) == 1
    recursive = ("WITH RECURSIVE t(x) AS (SELECT employee_id FROM employees WHERE manager_id = 1 UNION ALL "
                 "SELECT e.employee_id FROM employees AS e JOIN t ON e.manager_id = t.x) SELECT COUNT(*) FROM t")
    assert points(recursive, ["direct reports only"]) == 1 + 2 + 1


def test_the_oracle_solves_every_hard_test_task(test_env: SqlEnv) -> None:
    failures = [task.id for task in test_env.task_set if task.difficulty == "hard"
                and run_episode(test_env, OracleAgent(), task_id=task.id).reward != 1.0]
    assert not failures, failures[:10]


def _answer(env: SqlEnv, task_id: str, sql: str) -> float:
    """Play `sql` on a task: submitted as the query, or its result typed as the value on an answer task."""
    env.reset(options={"task_id": task_id})
    task = env.task
    assert task is not None
    if task.verifier.params["mode"] == "sql":
        action = {"name": "submit", "arguments": {"sql": sql}}
    else:
        rows = env.state.engine.execute(sql).rows
        value = [cell for row in rows for cell in row] if len(rows) * len(rows[0]) > 1 else rows[0][0]
        action = {"name": "submit_answer", "arguments": {"value": value}}
    _obs, reward, terminated, _truncated, _info = env.step(action)
    assert terminated
    return float(reward)


def test_every_trap_of_the_hard_tier_scores_0(test_env: SqlEnv) -> None:
    hard = [task for task in test_env.task_set if task.metadata.get("traps")]
    assert len(hard) >= 100
    won = [(task.id, trap[:120]) for task in hard[::3] for trap in task.metadata["decoys"][-task.metadata["traps"]:]
           if _answer(test_env, task.id, trap)]
    assert not won, won[:5]


def test_dates_in_every_format_read_as_iso() -> None:
    connection = sqlite3.connect(":memory:")
    for written in ("2024-03-05", "2024/03/05", "20240305", "05 Mar 2024", "2024-03-05 14:30:00"):
        assert connection.execute(f"SELECT {iso_day('?')}".replace("?", f"'{written}'")).fetchone()[0] == "2024-03-05"


def test_the_same_question_has_other_facts_on_each_test_database(test_env: SqlEnv) -> None:
    """Each gold of erp_south run on erp_west (same schema, its own profile and data) answers differently."""
    other = sqlite3.connect(f"file:{ensure_sqlite(DATABASES['erp_west'])}?mode=ro", uri=True)
    asked = [task for task in test_env.task_set if task.metadata["database"] == "erp_south"][::3]
    same = [task.id for task in asked
            if normalize_rows(other.execute(task.metadata["gold_sql"]["sqlite"]).fetchall()) == task.answer]
    other.close()
    assert len(asked) >= 25 and len(same) <= 0.1 * len(asked), same


def test_hard_prompts_state_their_answer_contract(test_env: SqlEnv) -> None:
    for task in test_env.task_set:
        if task.difficulty != "hard" or not task.metadata.get("traps"):
            continue
        if task.verifier.params["mode"] == "answer":
            assert "Answer with one number" in task.prompt or "as one number" in task.prompt, task.id
            if isinstance(task.answer[0][0], float):
                assert "rounded to 2 decimals" in task.prompt, task.id
        else:
            assert "one row each" in task.prompt and "Rows may come in any order" in task.prompt, task.id


def test_turn_budget_fits_the_hard_tier(test_env: SqlEnv) -> None:
    assert test_env.max_turns == DEFAULT_MAX_TURNS == 30
    # A careful solution: list the tables, describe each the gold reads, look at each trap, run, submit.
    needed = max(2 + task.metadata["difficulty_points"] + task.metadata["traps"] for task in test_env.task_set
                 if task.difficulty == "hard")
    assert needed <= DEFAULT_MAX_TURNS
