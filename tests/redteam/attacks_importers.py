"""Red-team attacks on imported benchmark tasks (Spider/BIRD shaped): the ways an importer's assumptions about
real files turn into free reward.

The fixture is a Spider-shaped folder built here (train.json and database/league/league.sqlite) and run through
the real importer, so what is attacked is what `agentgym tasks import spider` writes. Its questions have ties
under ORDER BY ... LIMIT, an ordering on part of a row, and one gold that returns no rows.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path

from redteam_support import Attack, AttackEpisode

from agentgym import save_tasks

QUESTIONS = {
    "second": ("Who scored the second most goals?", "SELECT name FROM player ORDER BY goals DESC LIMIT 2"),
    "team": ("Which team has the most players?",
             "SELECT team FROM player GROUP BY team ORDER BY count(*) DESC LIMIT 1"),
    "ranking": ("List players and goals, most goals first.", "SELECT name, goals FROM player ORDER BY goals DESC"),
    "nobody": ("Who scored 100 goals?", "SELECT name FROM player WHERE goals = 100"),
}


def _fixture() -> Path:
    from agentgym_sql.importers import read_benchmark

    root = Path(tempfile.mkdtemp(prefix="agentgym-importers-redteam-"))
    database = root / "database" / "league" / "league.sqlite"
    database.parent.mkdir(parents=True)
    connection = sqlite3.connect(database)
    connection.executescript("""
        CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT, team TEXT, goals INTEGER);
        INSERT INTO player VALUES (1, 'Ana', 'red', 9), (2, 'Ben', 'blue', 7), (3, 'Caro', 'red', 7),
                                  (4, 'Dan', 'blue', 3), (5, 'Eve', 'green', 7);
    """)
    connection.commit()
    connection.close()
    examples = [{"db_id": "league", "question": question, "query": sql} for question, sql in QUESTIONS.values()]
    (root / "train.json").write_text(json.dumps(examples))
    report = read_benchmark(root, "spider")
    path = root / "tasks.jsonl"
    save_tasks(report.tasks, path)
    return path


FIXTURE_TASKS = str(_fixture())


def _which(episode: AttackEpisode) -> str:
    return next(name for name, (question, _) in QUESTIONS.items() if question in episode.prompt)


def nothing_at_all(episode: AttackEpisode) -> None:
    """A query with no rows: right only where an empty gold was imported (the importer leaves those out)."""
    episode.call("submit", sql="SELECT name FROM player WHERE 0")


def every_tied_row(episode: AttackEpisode) -> None:
    """The gold without its LIMIT: every row of the tie group, more rows than the question asks for."""
    sql = {"second": "SELECT name FROM player ORDER BY goals DESC LIMIT 4",
           "team": "SELECT team FROM player GROUP BY team HAVING count(*) = 2",
           "ranking": "SELECT name, goals FROM player UNION ALL SELECT 'x', 0"}[_which(episode)]
    episode.call("submit", sql=sql)


def outside_the_tie_group(episode: AttackEpisode) -> None:
    """The right number of rows, but the last one from beyond the tie group (or the runs out of order)."""
    sql = {"second": "SELECT name FROM player WHERE name IN ('Ana', 'Dan') ORDER BY goals DESC",
           "team": "SELECT 'green'",
           "ranking": "SELECT name, goals FROM player ORDER BY goals ASC"}[_which(episode)]
    episode.call("submit", sql=sql)


ATTACKS = [
    Attack("importers-empty-result", "SQL-v0", nothing_at_all, families=("spider",),
           make_kwargs={"tasks": FIXTURE_TASKS}, per_family=4, description="a 0-row query against imported tasks"),
    Attack("importers-every-tied-row", "SQL-v0", every_tied_row, families=("spider",),
           make_kwargs={"tasks": FIXTURE_TASKS}, per_family=4,
           description="the whole tie group where the gold's LIMIT keeps part of it"),
    Attack("importers-outside-tie-group", "SQL-v0", outside_the_tie_group, families=("spider",),
           make_kwargs={"tasks": FIXTURE_TASKS}, per_family=4,
           description="a row from outside the tie group, or the sort key's runs out of order"),
]
