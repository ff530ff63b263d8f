"""SQL-v0's diagnosis labels (docs/diagnosis.md, "SQL-v0"): each comes out of a real episode on the built-in
retail database, and none carries a gold value."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agentgym_sql.diagnosis import LABELS
from agentgym_sql.env import SqlEnv

FILTER_TASK = "sql-retail-filters-0000"   # product_name of products with unit_price <= 60.84 (set match)
MULTISET_TASK = "sql-retail-topk_ties-0000"  # the cheapest products' names (multiset match)
ANSWER_TASK = "sql-retail-aggregates-0001"  # a count, asked as a value (submit_answer)
GOLD = "SELECT product_name FROM products WHERE unit_price <= 60.84"


@pytest.fixture(scope="module")
def env() -> Any:
    made = SqlEnv(max_turns=6)
    yield made
    made.close()


def execute(sql: str) -> dict[str, Any]:
    return {"name": "execute_sql", "arguments": {"sql": sql}}


def submit(sql: str) -> dict[str, Any]:
    return {"name": "submit", "arguments": {"sql": sql}}


def answer(value: Any) -> dict[str, Any]:
    return {"name": "submit_answer", "arguments": {"value": value}}


def diagnosis(env: SqlEnv, task_id: str, actions: list[dict[str, Any]]) -> dict[str, Any]:
    env.reset(options={"task_id": task_id})
    for action in actions:
        *_, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return info["diagnosis"]
    raise AssertionError("the episode did not end")


def test_errors_of_queries_the_agent_ran(env: SqlEnv) -> None:
    found = diagnosis(env, FILTER_TASK, [
        execute("SELEC product_name FROM products"),          # a typo of the first word
        execute("SELECT product_name FROM products WHERE"),   # incomplete input
        execute("SELECT product_name FROM prods"),
        execute("SELECT nam FROM products"),
        execute("DELETE FROM products"),
        submit(GOLD),
    ])
    assert found["episode"] == "solved"
    assert found["domain"] == ["query_does_not_parse", "unknown_table", "unknown_column", "write_refused"]
    assert found["turns"] == ["tool_error"] * 5 + ["submitted"]


def test_a_submitted_query_that_fails_when_graded(env: SqlEnv) -> None:
    # submit checks a query without running it: the engine's error shows only when it is graded.
    assert diagnosis(env, FILTER_TASK, [submit("SELECT product_name FROM products WHERE unit_price <= 60.84 AND")]
                     )["domain"] == ["query_does_not_parse"]
    found = diagnosis(env, FILTER_TASK, [submit("SELECT first_name FROM customers")])
    assert found["domain"] == ["unknown_column", "wrong_table"]


def test_result_superset_subset_empty_and_shape(env: SqlEnv) -> None:
    assert diagnosis(env, FILTER_TASK, [submit("SELECT product_name FROM products")])["domain"] == ["result_superset"]
    assert diagnosis(env, FILTER_TASK, [submit("SELECT product_name FROM products WHERE unit_price <= 30")]
                     )["domain"] == ["result_subset"]
    assert diagnosis(env, FILTER_TASK, [submit("SELECT product_name FROM products WHERE unit_price > 1e9")]
                     )["domain"] == ["empty_result"]
    assert diagnosis(env, FILTER_TASK, [submit(GOLD.replace("product_name", "product_name, unit_price"))]
                     )["domain"] == ["wrong_shape"]
    assert diagnosis(env, FILTER_TASK, [submit(GOLD)]) == {
        "episode": "solved", "turns": ["submitted"], "counts": {"submitted": 1}, "domain": [], "truncated": False}


def test_wrong_order_and_duplicate_rows(env: SqlEnv) -> None:
    # An ordered task found by its gold (task ids move when the task set is rebuilt), its order reversed.
    order = "ORDER BY product_name, product_id"
    ordered = next(task for task in env.task_set if task.metadata.get("database") == "retail"
                   and task.verifier.params.get("match") == "ordered" and task.metadata["gold_sql"]["sqlite"].endswith(order)
                   and " WHERE " in task.metadata["gold_sql"]["sqlite"])
    reversed_order = ordered.metadata["gold_sql"]["sqlite"].replace(order, "ORDER BY product_name DESC, product_id")
    assert diagnosis(env, ordered.id, [submit(reversed_order)])["domain"] == ["wrong_order"]
    cheapest = env.task_set.get(MULTISET_TASK).metadata["gold_sql"]["sqlite"]
    assert diagnosis(env, MULTISET_TASK, [submit(f"{cheapest} UNION ALL {cheapest}")])["domain"] == ["duplicate_rows"]


def test_too_many_rows_and_timeout() -> None:
    slow = SqlEnv(max_turns=2, timeout_s=0.05)
    try:
        cross = "SELECT a.product_name FROM products a, products b, products c"
        assert diagnosis(slow, FILTER_TASK, [submit("SELECT a.product_name FROM products a, products b")]
                         )["domain"] == ["too_many_rows"]
        found = diagnosis(slow, FILTER_TASK, [execute(f"SELECT COUNT(*) FROM ({cross}) x, products d"),
                                              submit(GOLD)])
        assert found["domain"] == ["query_timeout"]
    finally:
        slow.close()


def test_answer_task_labels_and_the_wrong_submit_tool(env: SqlEnv) -> None:
    assert diagnosis(env, ANSWER_TASK, [answer([144, 145])])["domain"] == ["wrong_shape"]
    # submit(sql) on a question that asks for a value is refused: the generic wrong_tool label, per turn, and
    # for the episode when the turns run out.
    found = diagnosis(env, ANSWER_TASK, [execute("SELECT COUNT(*) FROM customers")]
                      + [submit("SELECT COUNT(*) FROM customers")] * 5)
    assert found["turns"] == ["ok"] + ["wrong_tool"] * 5
    assert found["episode"] == "wrong_tool" and found["truncated"]
    # An episode that also tried the right tool (refused for its query) is not a wrong_tool episode.
    found = diagnosis(env, FILTER_TASK, [answer(["Fjord Rake 2"])] * 2 + [submit("DELETE FROM products")] * 4)
    assert found["turns"] == ["wrong_tool"] * 2 + ["tool_error"] * 4 and found["episode"] == "tool_error"
    # and the other way round: a query task answered with a value.
    found = diagnosis(env, FILTER_TASK, [answer(["Fjord Rake 2"]), submit(GOLD)])
    assert found["turns"] == ["wrong_tool", "submitted"] and found["episode"] == "solved"


def test_labels_are_documented_and_carry_no_gold(env: SqlEnv) -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "diagnosis.md").read_text(encoding="utf-8")
    for label in LABELS:
        assert f"`{label}`" in doc, label
    found = diagnosis(env, FILTER_TASK, [submit("SELECT product_name FROM products")])
    text = json.dumps(found)
    gold_rows = env.task_set.get(FILTER_TASK).answer
    assert not any(str(row[0]) in text for row in gold_rows)
    assert "unit_price" not in text and "product_name" not in text
    assert diagnosis(env, FILTER_TASK, [submit("SELECT product_name FROM products")]) == found  # deterministic
