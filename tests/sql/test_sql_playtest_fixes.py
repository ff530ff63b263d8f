"""Verdicts of the SQL-v0 playtest (/work/playtest/SQL-v0.md), each fixed at its cause and kept fixed here.

#1 (lenient by degenerate data): "for each title, the teacher with the highest salary" was solved by the global
maximum, because every title's top salary was the overall top (salaries take five values). Task building now
runs each draft's near-miss queries (`Draft.decoys`: the question without its grouping) and leaves out a draft
one of them answers; every built task keeps its decoys in `metadata["decoys"]`, and each scores 0.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from agentgym_sql.data import DATABASES, ensure_sqlite
from agentgym_sql.env import SqlEnv
from agentgym_sql.tasks import base, generate, nested

from agentgym import Task


@pytest.fixture(scope="module")
def test_env() -> Iterator[SqlEnv]:
    env = SqlEnv(split="test")
    yield env
    env.close()


def _decoy_action(env: SqlEnv, task: Task, decoy: str) -> dict[str, Any]:
    if task.verifier.params["mode"] == "sql":
        return {"name": "submit", "arguments": {"sql": decoy}}
    env.reset(options={"task_id": task.id})
    rows = env.state.engine.execute(decoy).rows
    value = [cell for row in rows for cell in row] if len(rows) * len(rows[0]) > 1 else rows[0][0]
    return {"name": "submit_answer", "arguments": {"value": value}}


def test_every_stored_near_miss_scores_0(test_env: SqlEnv) -> None:
    with_decoys = [task for task in test_env.task_set if task.metadata.get("decoys")]
    assert len(with_decoys) >= 4, "the per-group families keep their group-free decoys"
    won = []
    for task in with_decoys:
        for decoy in task.metadata["decoys"]:
            action = _decoy_action(test_env, task, decoy)
            test_env.reset(options={"task_id": task.id})
            _obs, reward, terminated, _truncated, _info = test_env.step(action)
            assert terminated
            if reward:
                won.append((task.id, decoy))
    assert not won, won[:5]


MAX_PER_GROUP = re.compile(r"SELECT t\.(\w+), t\.(\w+), t\.(\w+) FROM (\w+) AS t JOIN \(SELECT")


def test_the_playtest_task_kind_is_not_solved_by_the_global_maximum(test_env: SqlEnv) -> None:
    """Playtest #1's replay: per-title maxima of teachers' salaries answered by `salary = MAX(salary)`."""
    played = 0
    for task in test_env.task_set:
        found = MAX_PER_GROUP.match(task.metadata["gold_sql"]["sqlite"])
        if task.family != "nested" or not found:
            continue
        group, label, measure, table = found.groups()
        overall = (f"SELECT {group}, {label}, {measure} FROM {table} WHERE {measure} = "
                   f"(SELECT MAX({measure}) FROM {table})")
        test_env.reset(options={"task_id": task.id})
        _obs, reward, *_ = test_env.step({"name": "submit", "arguments": {"sql": overall}})
        assert reward == 0.0, task.id
        played += 1
    assert played >= 1


def test_a_draft_its_decoy_answers_is_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    ensure_sqlite(DATABASES["school"])
    gold = "SELECT title, MAX(salary) FROM teachers GROUP BY title"
    same = "SELECT title, MAX(salary) FROM teachers WHERE salary > 0 GROUP BY title"  # answers it on this data
    different = "SELECT title, MIN(salary) FROM teachers GROUP BY title"

    def family(_context: base.Context, _count: int) -> list[base.Draft]:
        return [base.Draft(nested.FAMILY, "kept?", gold, decoys=(same,)),
                base.Draft(nested.FAMILY, "kept!", gold + " ", decoys=(different,))]

    # A family whose draft a decoy answers, built on purpose: the real data no longer makes one.
    monkeypatch.setattr(nested, "generate", family)
    tasks = generate(0, databases=["school"], families=["nested"], per_family=5)
    assert [task.metadata["question"] for task in tasks] == ["kept!"]
    assert tasks[0].metadata["decoys"] == [different]


def test_a_group_average_question_is_not_solved_by_the_table_average(test_env: SqlEnv) -> None:
    """Playtest #16 and #17: "above the average of that group" answered with the whole table's average (or a
    hard-coded `>= 3` on a 1-4 integer) scored 1 where both averages split the group the same way."""
    played = 0
    for task in test_env.task_set:
        gold = task.metadata["gold_sql"]["sqlite"]
        if task.family != "nested" or "> (SELECT AVG(" not in gold:
            continue
        overall = f"{gold.rsplit(' WHERE ', 1)[0]})"
        test_env.reset(options={"task_id": task.id})
        _obs, reward, *_ = test_env.step({"name": "submit", "arguments": {"sql": overall}})
        assert reward == 0.0, task.id
        played += 1
    assert played >= 5


def _one_cell_task(env: SqlEnv) -> Task:
    return next(task for task in env.task_set if task.verifier.params["mode"] == "answer"
                and len(task.answer) == 1 and len(task.answer[0]) == 1 and isinstance(task.answer[0][0], int)
                and task.answer[0][0] > 1)


def test_a_one_cell_answer_may_be_written_as_the_result_table(test_env: SqlEnv) -> None:
    """Playtest #18: `[[231]]` for a one-row, one-column answer scored 0 while `[231]` and `231` scored 1."""
    task = _one_cell_task(test_env)
    value = task.answer[0][0]
    right = [value, str(value), [value], [[value]], f"[[{value}]]", f"[{value}]", [[str(value)]], float(value)]
    wrong = [[[value, value - 1]], [[value], [value - 1]], [[value - 1]], f"[[{value}, {value - 1}]]", [[[value]]]]
    for answer, expected in [(item, 1.0) for item in right] + [(item, 0.0) for item in wrong]:
        test_env.reset(options={"task_id": task.id})
        _obs, reward, *_ = test_env.step({"name": "submit_answer", "arguments": {"value": answer}})
        assert reward == expected, (task.id, answer)


def test_money_rounded_to_2_decimals_is_matched_to_the_cent(test_env: SqlEnv) -> None:
    """Playtest #24 and #27: a relative 1e-4 let a total off by $11.60 (a whole missing line) score 1 on a
    question that asks for 2 decimals. Such tasks now match within one cent."""
    task = next(task for task in test_env.task_set if task.family == "revenue")
    assert task.verifier.params["decimals"] == 2 and "rounded to 2 decimals" in task.prompt
    gold = task.answer[0][0]
    right = [gold, f"{gold:.2f}", f"${gold:,.2f}", f"{gold:.2f} USD", gold + 0.004, gold - 0.01, [[gold]]]
    wrong = [gold + 0.02, round(gold, 1) + 0.05, gold * (1 + 4e-5), round(gold), f"{gold - 11.6:.2f}"]
    for answer, expected in [(item, 1.0) for item in right] + [(item, 0.0) for item in wrong]:
        test_env.reset(options={"task_id": task.id})
        _obs, reward, *_ = test_env.step({"name": "submit_answer", "arguments": {"value": answer}})
        assert reward == expected, (task.id, answer)


def test_no_task_is_a_count_of_nothing(test_env: SqlEnv) -> None:
    """Playtest #31: a count of 0 is answered by any query that matches nothing (a misspelt city included)."""
    assert not [task.id for task in test_env.task_set if task.answer == [[0]]]


def test_a_set_operation_is_not_answered_by_one_of_its_sides(test_env: SqlEnv) -> None:
    """Playtest #34: an EXCEPT that removes nothing was answered by its first operand alone."""
    played = 0
    for task in test_env.task_set:
        gold = task.metadata["gold_sql"]["sqlite"]
        operation = next((word for word in (" EXCEPT ", " INTERSECT ", " UNION ") if word in gold), None)
        if task.family != "set_ops" or operation is None or task.verifier.params["mode"] != "sql":
            continue
        for side in gold.split(operation):
            test_env.reset(options={"task_id": task.id})
            _obs, reward, *_ = test_env.step({"name": "submit", "arguments": {"sql": side}})
            assert reward == 0.0, (task.id, side)
        played += 1
    assert played >= 20


def test_order_gaps_refuses_keeping_duplicate_records_apart(test_env: SqlEnv) -> None:
    """Playtest #19 and #29: on the one-top-customer question, ignoring merged records still scored 1. The family
    now asks for every customer past a threshold, and each task's data makes the merge change the answer."""
    tasks = [task for task in test_env.task_set if task.family == "order_gaps"]
    assert len(tasks) >= 20
    for task in tasks[::3]:
        gold = task.metadata["gold_sql"]["sqlite"]
        apart = gold.replace("COALESCE(c.merged_into, c.customer_id) AS customer", "c.customer_id AS customer")
        assert apart != gold
        test_env.reset(options={"task_id": task.id})
        _obs, reward, *_ = test_env.step({"name": "submit", "arguments": {"sql": apart}})
        assert reward == 0.0, task.id


def test_trimmed_text_names_the_same_rows(test_env: SqlEnv) -> None:
    """Playtest #44: the right 18 students with their names trimmed (' Grace Quispe' -> 'Grace Quispe') scored 0."""
    task = next(task for task in test_env.task_set if task.verifier.params["mode"] == "sql"
                and len(task.answer[0]) == 1 and len(task.answer) >= 3
                and any(isinstance(row[0], str) and row[0] != row[0].strip() for row in task.answer))
    gold = task.metadata["gold_sql"]["sqlite"]
    trimmed = f"WITH g(v) AS ({gold}) SELECT TRIM(v) FROM g"
    for sql, expected in ((trimmed, 1.0), (f"{trimmed} LIMIT {len(task.answer) - 1}", 0.0),
                          (f"WITH g(v) AS ({gold}) SELECT TRIM(v) || 'x' FROM g", 0.0)):
        test_env.reset(options={"task_id": task.id})
        _obs, reward, *_ = test_env.step({"name": "submit", "arguments": {"sql": sql}})
        assert reward == expected, (task.id, sql)


def test_no_task_sorts_text_stored_with_stray_spaces(test_env: SqlEnv) -> None:
    """Playtest #40: "sort them by name" over names stored with stray spaces and odd case has two readings."""
    messy = {(table.name, column.name) for spec in DATABASES.values() for table in spec.tables
             for column in table.columns if column.messy}
    for task in test_env.task_set:
        found = re.search(r"SELECT (\w+) FROM (\w+) WHERE .* ORDER BY (\w+)", task.metadata["gold_sql"]["sqlite"])
        if task.family == "filters" and found:
            assert (found.group(2), found.group(3)) not in messy, task.id


def test_the_work_limit_is_stated_to_the_agent(test_env: SqlEnv) -> None:
    """Playtest #42: a correct correlated subquery stopped by the SQLite work limit, which no text mentioned."""
    assert "40 million" in test_env.system_prompt and "correlated subquery" in test_env.system_prompt


def test_a_running_total_says_where_it_starts(test_env: SqlEnv) -> None:
    """Playtest #53: "how many teachers had accumulated" read as the headcount hired to date, while the gold
    counts from January of the year asked. Every running-total prompt says where its count starts."""
    running = [task for task in test_env.task_set if task.family == "windows" and "SUM(n) OVER" in
               task.metadata["gold_sql"]["sqlite"]]
    assert running
    for task in running:
        year = re.search(r">= '(\d{4})-01-01'", task.metadata["gold_sql"]["sqlite"]).group(1)
        assert f"For {year}, give the running total" in task.prompt or f"counting from January {year}" in \
            task.prompt, task.id
