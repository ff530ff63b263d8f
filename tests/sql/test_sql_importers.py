"""Spider and BIRD importers through the real CLI, and the oracle on what they produce."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import gymnasium as gym
import pytest
from click.testing import CliRunner

import agentgym  # noqa: F401
from agentgym.agents import OracleAgent
from agentgym.cli import main
from agentgym.rollout import run_episode
from agentgym.tasks import load_tasks

SPIDER_SAMPLE = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "samples" / "spider"


def oracle_failures(path: Path) -> list[str]:
    env = gym.make("SQL-v0", tasks=str(path))
    failures = [t.id for t in env.unwrapped.task_set if run_episode(env, OracleAgent(), task_id=t.id).reward != 1.0]
    env.close()
    return failures


def test_spider_sample_imports_and_oracle_solves_it(tmp_path: Path) -> None:
    if not (SPIDER_SAMPLE / "train.json").exists():
        pytest.skip(f"the Spider sample is not at {SPIDER_SAMPLE}")
    out = tmp_path / "spider.jsonl"
    result = CliRunner().invoke(main, ["tasks", "import", "spider", str(SPIDER_SAMPLE), "--out", str(out)])
    assert result.exit_code == 0, result.output
    tasks = load_tasks(out)
    expected = len(json.loads((SPIDER_SAMPLE / "train.json").read_text()))
    assert f"wrote {len(tasks)} spider tasks" in result.output
    left_out = re.search(r"left out (\d+) spider examples", result.output)
    assert len(tasks) + (int(left_out.group(1)) if left_out else 0) == expected
    assert all(Path(t.metadata["database_path"]).exists() for t in tasks)
    assert not oracle_failures(out)


def make_bird(root: Path) -> None:
    """A tiny folder shaped like BIRD's dev set: dev.json and dev_databases/<db>/<db>.sqlite."""
    database = root / "dev_databases" / "shop" / "shop.sqlite"
    database.parent.mkdir(parents=True)
    connection = sqlite3.connect(database)
    connection.executescript("""
        CREATE TABLE client (id INTEGER PRIMARY KEY, name TEXT, tier TEXT);
        CREATE TABLE purchase (id INTEGER PRIMARY KEY, client_id INTEGER REFERENCES client(id), total REAL);
        INSERT INTO client VALUES (1, 'Ana', 'gold'), (2, 'Ben', 'silver'), (3, 'Caro', 'gold');
        INSERT INTO purchase VALUES (1, 1, 10.5), (2, 1, 20), (3, 2, 7.25), (4, 3, 99);
    """)
    connection.commit()
    connection.close()
    examples = [
        {"question_id": 0, "db_id": "shop", "question": "How many premium clients are there?",
         "evidence": "premium refers to tier = 'gold'", "SQL": "SELECT COUNT(*) FROM client WHERE tier = 'gold'",
         "difficulty": "simple"},
        {"question_id": 1, "db_id": "shop", "question": "Which premium clients spent more than 30 in total?",
         "evidence": "premium refers to tier = 'gold'; spent refers to SUM(total)",
         "SQL": "SELECT c.name FROM client c JOIN purchase p ON p.client_id = c.id WHERE c.tier = 'gold' "
                "GROUP BY c.id HAVING SUM(p.total) > 30", "difficulty": "moderate"},
        {"question_id": 2, "db_id": "shop", "question": "List clients by spend.", "evidence": "",
         "SQL": "SELECT name FROM clients ORDER BY spend", "difficulty": "challenging"},
        {"question_id": 3, "db_id": "missing_db", "question": "?", "evidence": "", "SQL": "SELECT 1",
         "difficulty": "simple"},
    ]
    (root / "dev.json").write_text(json.dumps(examples))


def test_bird_import_keeps_evidence_levels_and_reports_failing_gold(tmp_path: Path) -> None:
    make_bird(tmp_path / "bird")
    out = tmp_path / "bird.jsonl"
    result = CliRunner().invoke(main, ["tasks", "import", "bird", str(tmp_path / "bird"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    tasks = load_tasks(out)
    assert [t.difficulty for t in tasks] == ["easy", "medium"]  # the shared levels; BIRD's own in metadata
    assert [t.metadata["source_difficulty"] for t in tasks] == ["simple", "moderate"]
    assert "Evidence: premium refers to tier = 'gold'" in tasks[0].prompt
    assert tasks[0].answer == [[2]] and tasks[1].answer == [["Ana"], ["Caro"]]
    assert "left out 2 bird examples" in result.output
    assert "bird-dev-00002: gold query fails: SQLite error: no such table: clients" in result.output
    assert "bird-dev-00003: database 'missing_db' not found" in result.output
    assert not oracle_failures(out)
    env = gym.make("SQL-v0", tasks=str(out))
    env.reset(options={"task_id": tasks[1].id})
    _, reward, *_ = env.step({"name": "submit", "arguments": {"sql": "SELECT name FROM client WHERE tier = 'gold'"}})
    assert reward == 1.0  # same set of names: BIRD's set equality
    env.close()


def test_alternative_golds_are_read_and_any_of_them_scores(tmp_path: Path) -> None:
    root = tmp_path / "spider"
    make_bird(tmp_path / "bird")  # reuse its database, laid out as Spider's database/<db>/<db>.sqlite
    (root / "database" / "shop").mkdir(parents=True)
    (tmp_path / "bird" / "dev_databases" / "shop" / "shop.sqlite").rename(root / "database" / "shop" / "shop.sqlite")
    examples = [
        {"db_id": "shop", "question": "Who are the premium clients?",
         "query": ["SELECT name FROM client WHERE tier = 'gold'", "SELECT name, tier FROM client WHERE tier = 'gold'"]},
        {"db_id": "shop", "question": "How many purchases are there?",
         "query": "SELECT COUNT(*) FROM purchase; SELECT COUNT(id) FROM purchase",
         "query_alternatives": ["SELECT ghost FROM nowhere"]},
    ]
    (root / "train.json").write_text(json.dumps(examples))
    out = tmp_path / "spider.jsonl"
    result = CliRunner().invoke(main, ["tasks", "import", "spider", str(root), "--out", str(out)])
    assert result.exit_code == 0, result.output
    tasks = load_tasks(out)
    assert tasks[0].verifier.params["alternatives"] == ["SELECT name, tier FROM client WHERE tier = 'gold'"]
    assert tasks[1].verifier.params["alternatives"] == ["SELECT COUNT(id) FROM purchase"]
    assert "spider-train-00001: alternative gold 2 left out: SQLite error: no such table: nowhere" in result.output
    assert not oracle_failures(out)
    env = gym.make("SQL-v0", tasks=str(out))
    env.reset(options={"task_id": tasks[0].id})
    _, reward, *_ = env.step({"name": "submit", "arguments": {"sql": "SELECT name, tier FROM client WHERE id != 2"}})
    assert reward == 1.0
    env.close()
