"""Rewards that do not depend on the machine, and prompts that say what the gold does.

- Query limits are counted in SQLite work (virtual-machine steps), so the same query gets the same outcome on an
  idle and on a busy machine; a query stopped by its limit is diagnosed `query_timeout`, never anything else.
- Task building and the Spider/BIRD importer leave out a gold that costs more than a tenth of the limit, and the
  importer runs every gold twice, leaving out one whose two results differ.
- Column order is free unless the prompt fixes it; every template's prompt states row order, repeats, empty
  groups and missing values the way its gold reads them.
"""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agentgym_sql.data import DATABASES, ensure_sqlite
from agentgym_sql.data.engines import DEFAULT_MAX_STEPS, GOLD_STEP_SHARE, QueryLimitError, SqliteEngine
from agentgym_sql.env import SqlEnv
from agentgym_sql.importers import import_examples
from agentgym_sql.tasks import generate
from agentgym_sql.verify import column_orders

from agentgym import Task, VerifierSpec

SLOWEST_GOLD = "sql-finance-aggregates-0000"  # MAX over a year of 1M transactions: about 3.5M SQLite steps


def submit(sql: str) -> dict[str, Any]:
    return {"name": "submit", "arguments": {"sql": sql}}


def play(env: SqlEnv, task_id: str, sql: str) -> tuple[float, dict[str, Any]]:
    env.reset(options={"task_id": task_id})
    _observation, reward, terminated, _truncated, info = env.step(submit(sql))
    assert terminated
    return float(reward), info


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


@pytest.fixture()
def busy_machine() -> Iterator[None]:
    """Two processes that keep every core of a 2-core machine busy while the test runs."""
    workers = [multiprocessing.Process(target=_spin, args=(60.0,), daemon=True) for _ in range(2)]
    for worker in workers:
        worker.start()
    try:
        yield
    finally:
        for worker in workers:
            worker.terminate()
            worker.join()


@pytest.fixture(scope="module")
def finance_env() -> Iterator[SqlEnv]:
    made = SqlEnv(split="test", max_turns=3)
    yield made
    made.close()


# ----------------------------------------------------------------------------------- load independence
def test_the_slowest_gold_costs_the_same_steps_every_run_and_far_below_the_limit() -> None:
    engine = SqliteEngine(ensure_sqlite(DATABASES["finance"]), memory_map=True)
    gold = ("SELECT MAX(amount) FROM transactions WHERE posted_at >= '2023-01-01' AND posted_at < '2024-01-01'")
    try:
        costs = set()
        for _ in range(3):
            engine.execute(gold, max_rows=1)
            costs.add(engine.last_steps // 10_000)  # the handler's grain (1,000 steps) may shift by one check
        assert len(costs) == 1
        assert engine.last_steps * GOLD_STEP_SHARE <= DEFAULT_MAX_STEPS
    finally:
        engine.close()


def test_the_slowest_gold_scores_1_while_the_machine_is_busy(finance_env: SqlEnv, busy_machine: None) -> None:
    gold = finance_env.task_set.get(SLOWEST_GOLD).metadata["gold_sql"]["sqlite"]
    for _ in range(2):
        reward, info = play(finance_env, SLOWEST_GOLD, gold)
        assert reward == 1.0, info


def test_a_query_over_its_step_limit_is_stopped_on_any_load_and_labelled_query_timeout(busy_machine: None) -> None:
    # The same query under a limit below its cost: stopped every time, by its work, not by the clock (the wall
    # clock backstop is set far away), and diagnosed as a timeout, never as wrong rows.
    tight = SqlEnv(split="test", max_turns=3, max_steps=1_000_000, timeout_s=600.0)
    try:
        gold = tight.task_set.get(SLOWEST_GOLD).metadata["gold_sql"]["sqlite"]
        for _ in range(2):
            reward, info = play(tight, SLOWEST_GOLD, gold)
            assert reward == 0.0
            assert info["diagnosis"]["domain"] == ["query_timeout"]
        tight.reset(options={"task_id": SLOWEST_GOLD})
        observation, *_ = tight.step({"name": "execute_sql", "arguments": {"sql": gold}})
        assert "steps of SQLite work and was stopped" in observation
    finally:
        tight.close()


def test_the_wall_clock_backstop_is_also_a_query_timeout() -> None:
    engine = SqliteEngine(ensure_sqlite(DATABASES["retail"]), timeout_s=0.05, max_steps=10**12)
    cross = "SELECT COUNT(*) FROM products a, products b, products c, products d"
    try:
        with pytest.raises(QueryLimitError, match="ran longer than 0.05 s"):
            engine.execute(cross)
    finally:
        engine.close()


def test_task_building_leaves_out_golds_above_a_tenth_of_the_limit(monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import agentgym_sql.tasks as tasks_module

    kept = generate(0, families="aggregates", databases="retail", per_family=5)
    assert kept and not capsys.readouterr().err
    monkeypatch.setattr(tasks_module, "MAX_GOLD_STEPS", -1)  # as if every gold were far too costly
    assert generate(0, families="aggregates", databases="retail", per_family=5) == []
    assert "whose gold costs more than a tenth of the query limit" in capsys.readouterr().err


# ----------------------------------------------------------------------------------- importers
@pytest.fixture()
def tiny_benchmark(tmp_path: Path) -> Path:
    folder = tmp_path / "database" / "shop"
    folder.mkdir(parents=True)
    connection = sqlite3.connect(folder / "shop.sqlite")
    connection.execute("CREATE TABLE items (name TEXT, price REAL)")
    connection.executemany("INSERT INTO items VALUES (?, ?)", [(f"item{i}", i * 1.5) for i in range(50)])
    connection.commit()
    connection.close()
    return tmp_path


def test_importer_leaves_out_golds_that_differ_between_runs_or_cost_too_much(tiny_benchmark: Path) -> None:
    heavy = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000) "
             "SELECT COUNT(*) FROM c")
    examples = [
        ("ok", "test", {"db_id": "shop", "question": "How many items?", "query": "SELECT COUNT(*) FROM items"}),
        ("random", "test", {"db_id": "shop", "question": "Pick a number", "query": "SELECT random()"}),
        ("heavy", "test", {"db_id": "shop", "question": "Count to two million", "query": heavy}),
    ]
    report = import_examples(tiny_benchmark, examples, kind="spider")
    assert [task.id for task in report.tasks] == ["ok"]
    reasons = dict(report.failures)
    assert reasons["random"].startswith("gold result differs between two runs")
    assert reasons["heavy"].startswith("gold query too costly")


def test_importer_keeps_every_stable_spider_sample_gold(tmp_path: Path) -> None:
    sample = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "samples" / "spider"
    if not (sample / "train.json").exists():
        pytest.skip(f"the Spider sample is not at {sample}")
    records = json.loads((sample / "train.json").read_text())
    report = import_examples(sample, ((f"s{i}", "train", r) for i, r in enumerate(records)), kind="spider")
    assert report.tasks
    assert not [message for _id, message in report.failures if "differs between two runs" in message
                or "too costly" in message]


# ----------------------------------------------------------------------------------- column order
def _task(database: Path, sql: str, *, match: str = "set", column_order: str | None = None) -> Task:
    params: dict[str, Any] = {"match": match, "mode": "sql"}
    if column_order:
        params["column_order"] = column_order
    return Task(id=f"t-{abs(hash((sql, match, column_order)))}", domain="sql", family="t", split="test",
                prompt="Q", answer=None, solution=[submit(sql)],
                verifier=VerifierSpec(name="sql_execution", params=params),
                metadata={"database_path": str(database), "db_id": "shop", "dialect": "sqlite",
                          "gold_sql": {"sqlite": sql}})


def test_swapped_columns_score_1_unless_the_task_fixes_their_order(tiny_benchmark: Path) -> None:
    database = tiny_benchmark / "database" / "shop" / "shop.sqlite"
    listing = _task(database, "SELECT name, price FROM items WHERE price > 30")
    ordered = _task(database, "SELECT name, price FROM items WHERE price > 60 ORDER BY price DESC", match="ordered")
    two_counts = "SELECT COUNT(*), COUNT(*) * 2 FROM items WHERE price > 3"
    fixed = _task(database, two_counts, column_order="fixed")
    free = _task(database, two_counts + " ")
    env = SqlEnv(tasks=[listing, ordered, fixed, free], max_turns=2)
    try:
        assert play(env, listing.id, "SELECT price, name FROM items WHERE price > 30")[0] == 1.0
        assert play(env, listing.id, "SELECT price, name FROM items WHERE price >= 30")[0] == 0.0
        assert play(env, ordered.id, "SELECT price AS p, name FROM items WHERE price > 60 ORDER BY 1 DESC")[0] == 1.0
        assert play(env, ordered.id, "SELECT price, name FROM items WHERE price > 60 ORDER BY 1")[0] == 0.0
        swapped = "SELECT COUNT(*) * 2, COUNT(*) FROM items WHERE price > 3"
        assert play(env, fixed.id, two_counts)[0] == 1.0
        assert play(env, fixed.id, swapped)[0] == 0.0  # the prompt fixed the order: position is the only label
        assert play(env, free.id, swapped)[0] == 1.0
        assert play(env, free.id, "SELECT COUNT(*) * 3, COUNT(*) FROM items WHERE price > 3")[0] == 0.0
    finally:
        env.close()


def test_column_orders_only_pair_columns_holding_the_same_values() -> None:
    gold = [["a", 1, 2.5], ["b", 2, 3.5]]
    assert column_orders([[1, "a", 2.5], [2, "b", 3.5]], gold) == [[1, 0, 2]]
    assert column_orders([[1, "x", 2.5], [2, "b", 3.5]], gold) == []  # no column holds the gold's labels
    assert column_orders([[1, 2]], [[2, 1]]) == [[1, 0]]
    assert column_orders([[1, 3]], [[2, 1]]) == []  # no column holds the gold's 2
    assert column_orders([["a", 1]], [["a", 1, 2]]) == []  # other width


def test_a_fixed_order_two_value_task_refuses_its_values_swapped() -> None:
    made = SqlEnv(split="train", max_turns=2)
    try:
        fixed = [task for task in made.task_set if task.verifier.params.get("column_order") == "fixed"
                 and task.metadata["gold_sql"]["sqlite"].startswith("SELECT ROUND(AVG(")
                 and task.answer[0][0] != task.answer[0][1]]
        assert fixed, "the nulls family asks for two averages in a fixed order"
        task = fixed[0]
        assert "in this order" in task.prompt
        gold = task.metadata["gold_sql"]["sqlite"]
        head, rest = gold.removeprefix("SELECT ").split(" FROM ", 1)
        one, two = head.split(", ROUND(")
        assert play(made, task.id, gold)[0] == 1.0
        assert play(made, task.id, f"SELECT ROUND({two}, {one} FROM {rest}")[0] == 0.0
    finally:
        made.close()


# ----------------------------------------------------------------------------------- prompts
def test_every_template_states_row_order_empty_groups_and_missing_values() -> None:
    made = SqlEnv(max_turns=2)
    try:
        tasks = list(made.task_set)
    finally:
        made.close()
    assert tasks
    for task in tasks:
        gold = task.metadata["gold_sql"]["sqlite"]
        prompt = task.prompt
        if task.verifier.params.get("mode") == "sql":
            assert "columns may come in any order unless the question fixes it" in prompt
        if task.verifier.params.get("column_order") == "fixed":
            assert "in this order" in prompt, task.id
        if len(task.answer or []) > 1:
            assert "Rows may come in any order" in prompt or "Row order matters" in prompt, task.id
        if "GROUP BY month" in gold:
            assert "leave out months with none" in prompt, task.id
        if " IS NOT NULL GROUP BY" in gold:  # the group of missing values is left out: the prompt says so
            assert "Leave out" in prompt, task.id


def test_per_month_prompt_says_months_without_rows_are_left_out() -> None:
    made = SqlEnv(split="train", max_turns=2)
    try:
        monthly = next(task for task in made.task_set if "GROUP BY month ORDER BY month" in
                       task.metadata["gold_sql"]["sqlite"] and len(task.answer) < 12)
        assert "leave out months with none (no zero rows)" in monthly.prompt
        assert play(made, monthly.id, monthly.metadata["gold_sql"]["sqlite"])[0] == 1.0
    finally:
        made.close()
