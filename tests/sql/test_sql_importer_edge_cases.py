"""What real Spider/BIRD files hold and the first importers assumed away: ties under ORDER BY (at a LIMIT
boundary, or among rows equal on a key that is only part of the row), gold queries with no rows, byte-order
marks, broken records, latin-1 text and NULL cells. Each fixture is a small database built here."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from click.testing import CliRunner

import agentgym  # noqa: F401
from agentgym.agents import OracleAgent
from agentgym.cli import main
from agentgym.rollout import run_episode
from agentgym.tasks import load_tasks


def make_spider(root: Path, examples: list[Any], *, bom: bool = False) -> Path:
    """A Spider-shaped folder: train.json plus database/league/league.sqlite with tied scores."""
    database = root / "database" / "league" / "league.sqlite"
    database.parent.mkdir(parents=True)
    connection = sqlite3.connect(database)
    connection.executescript("""
        CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT, team TEXT, goals INTEGER, nickname TEXT);
        INSERT INTO player VALUES (1, 'Ana', 'red', 9, NULL), (2, 'Ben', 'blue', 7, ''),
                                  (3, 'Caro', 'red', 7, 'None'), (4, 'Dan', 'blue', 3, 'D'),
                                  (5, 'Eve', 'green', 7, NULL);
    """)
    connection.execute("CREATE TABLE city (name TEXT)")
    connection.execute("INSERT INTO city VALUES (CAST(? AS TEXT))", ("Zürich".encode("latin-1"),))
    connection.commit()
    connection.close()
    text = json.dumps(examples, ensure_ascii=False)
    (root / "train.json").write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return root


def import_spider(tmp_path: Path, examples: list[Any], *, bom: bool = False) -> tuple[list[Any], str, Path]:
    root = make_spider(tmp_path / "spider", examples, bom=bom)
    out = tmp_path / "spider.jsonl"
    result = CliRunner().invoke(main, ["tasks", "import", "spider", str(root), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return load_tasks(out), result.output, out


def submit(out: Path, task_id: str, sql: str) -> float:
    env = gym.make("SQL-v0", tasks=str(out))
    env.reset(options={"task_id": task_id})
    _, reward, *_ = env.step({"name": "submit", "arguments": {"sql": sql}})
    env.close()
    return float(reward)


def oracle_rewards(out: Path) -> set[float]:
    env = gym.make("SQL-v0", tasks=str(out))
    rewards = {run_episode(env, OracleAgent(), task_id=t.id).reward for t in env.unwrapped.task_set}
    env.close()
    return rewards


TOP_SCORER_TIES = {"db_id": "league", "question": "Who scored the second most goals?",
                   "query": "SELECT name FROM player ORDER BY goals DESC LIMIT 2"}


def test_a_tie_at_the_limit_boundary_accepts_any_tied_row_and_nothing_else(tmp_path: Path) -> None:
    # Ben, Caro and Eve all have 7 goals: after Ana, any one of them is a right second row.
    tasks, _, out = import_spider(tmp_path, [TOP_SCORER_TIES])
    task = tasks[0]
    assert task.verifier.params["limited"] is True and task.verifier.params["order_key"] == [1]
    assert oracle_rewards(out) == {1.0}
    for tie in ("Ben", "Caro", "Eve"):
        sql = f"SELECT name FROM player ORDER BY goals DESC, name = '{tie}' DESC LIMIT 2"
        assert submit(out, task.id, sql) == 1.0, tie
    assert submit(out, task.id, "SELECT name FROM player WHERE name IN ('Ana', 'Dan') ORDER BY goals DESC") == 0.0
    assert submit(out, task.id, "SELECT name FROM player ORDER BY goals DESC LIMIT 4") == 0.0  # all the ties: too many
    assert submit(out, task.id, "SELECT name FROM player WHERE name IN ('Ben', 'Ana') ORDER BY goals") == 0.0  # order


def test_ties_on_a_key_outside_the_select_list_and_under_set_match(tmp_path: Path) -> None:
    examples = [{"db_id": "league", "question": "Which team has the most players?",
                 "query": "SELECT team FROM player GROUP BY team ORDER BY count(*) DESC LIMIT 1"}]
    tasks, _, out = import_spider(tmp_path, examples)
    params = tasks[0].verifier.params
    assert params["order_sql"].startswith("SELECT team, count(*) FROM player") and params["order_key"] == [1]
    assert oracle_rewards(out) == {1.0}
    for team in ("red", "blue"):
        assert submit(out, tasks[0].id, f"SELECT '{team}'") == 1.0
    assert submit(out, tasks[0].id, "SELECT 'green'") == 0.0
    assert submit(out, tasks[0].id, "SELECT 'red' UNION SELECT 'blue'") == 0.0


def test_rows_equal_on_the_sort_key_may_come_in_any_order(tmp_path: Path) -> None:
    examples = [{"db_id": "league", "question": "List players by goals, most first.",
                 "query": "SELECT name, goals FROM player ORDER BY goals DESC"}]
    tasks, _, out = import_spider(tmp_path, examples)
    task = tasks[0]
    assert task.verifier.params["match"] == "ordered" and task.verifier.params["order_key"] == [1]
    assert submit(out, task.id, "SELECT name, goals FROM player ORDER BY goals DESC, name DESC") == 1.0
    assert submit(out, task.id, "SELECT name, goals FROM player ORDER BY goals ASC") == 0.0  # order on the key
    assert submit(out, task.id, "SELECT name, goals FROM player ORDER BY goals DESC LIMIT 4") == 0.0


def test_bad_records_empty_golds_and_a_byte_order_mark_are_reported_not_fatal(tmp_path: Path) -> None:
    examples = [
        TOP_SCORER_TIES,
        "not an object",
        {"db_id": "league", "question": None, "query": "SELECT 1"},
        {"db_id": "league", "question": "   ", "query": "SELECT 1"},
        {"db_id": "league", "question": "Who scored 100 goals?", "query": "SELECT name FROM player WHERE goals = 100"},
        {"db_id": "league", "question": "Which city?", "query": "SELECT name FROM city"},
    ]
    tasks, output, out = import_spider(tmp_path, examples, bom=True)
    assert [task.id for task in tasks] == ["spider-train-00000", "spider-train-00005"]
    assert "left out 4 spider examples, by reason:" in output
    assert "2 x missing db_id, question or query" in output
    assert "spider-train-00001: not a JSON object: str" in output
    assert "spider-train-00004: gold result is empty" in output
    assert oracle_rewards(out) == {1.0}  # latin-1 text in the database still reads, and the oracle replays it
    # An empty gold is left out because any query returning nothing would have matched it.


def test_null_empty_text_and_the_text_none_stay_distinct(tmp_path: Path) -> None:
    examples = [{"db_id": "league", "question": "What are the nicknames of the players with 7 goals?",
                 "query": "SELECT nickname FROM player WHERE goals = 7"}]
    tasks, _, out = import_spider(tmp_path, examples)
    assert sorted(tasks[0].answer, key=str) == sorted([[""], ["None"], [None]], key=str)
    assert submit(out, tasks[0].id, "SELECT coalesce(nickname, 'None') FROM player WHERE goals = 7") == 0.0
    assert submit(out, tasks[0].id, "SELECT nickname FROM player WHERE id IN (2, 3, 5)") == 1.0


@pytest.mark.parametrize("gold, expected", [
    ("SELECT name FROM player ORDER BY goals DESC LIMIT 1 OFFSET 1", None),  # ties at both ends: strict
    ("SELECT DISTINCT team FROM player ORDER BY goals", None),
    ("SELECT name FROM player WHERE id IN (SELECT id FROM player ORDER BY goals LIMIT 2)", None),
    ("SELECT name AS who, goals FROM player ORDER BY 2 DESC, who", ([1, 0], None, False)),
])
def test_ordering_of_reads_only_the_outermost_order_by(gold: str, expected: Any) -> None:
    from agentgym_sql.importers import ordering_of

    ordering = ordering_of(gold)
    got = None if ordering is None else (ordering.order_key, ordering.order_sql, ordering.limited)
    assert got == expected


def test_spider_test_release_layout_finds_its_databases_in_test_database(tmp_path: Path) -> None:
    """Spider's test release ships test.json beside test_database/<db>/<db>.sqlite (no database/ folder)."""
    root = make_spider(tmp_path / "spider", [{"db_id": "league", "question": "How many players are there?",
                                             "query": "SELECT COUNT(*) FROM player"}])
    (root / "database").rename(root / "test_database")
    (root / "train.json").rename(root / "test.json")
    out = tmp_path / "spider.jsonl"
    result = CliRunner().invoke(main, ["tasks", "import", "spider", str(root), "--out", str(out)])
    assert result.exit_code == 0, result.output
    tasks = load_tasks(out)
    assert [(task.split, task.answer) for task in tasks] == [("test", [[5]])]
    assert "test_database" in tasks[0].metadata["database_path"]
    assert oracle_rewards(out) == {1.0}
