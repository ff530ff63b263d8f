"""Red-team attacks on SQL-v0: reward integrity of the `sql_execution` verifier.

Two kinds of target:
- the built-in tasks, for cheats that need no knowledge (constant answers, the wrong submit tool, reading
  the task files through the database engine, nondeterministic queries);
- a small fixture task set built here, whose prompt names a query that returns the right rows, for cheats
  of a policy that knows the right result but hands it in the wrong shape (cells shuffled, pairs crossed,
  rows out of order) or relies on a lax tolerance (0 for a small ratio).

PostgreSQL attacks need a running server, so they live in tests/sql/test_postgres_isolation.py.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
import tempfile
from pathlib import Path

from redteam_support import Attack, AttackEpisode

from agentgym import Task, VerifierSpec, save_tasks

REFERENCE = re.compile(r"^Reference query: (.+)$", re.MULTILINE)


def _fixture() -> Path:
    """A SQLite database and a task file over it (built once per process, in a temporary directory)."""
    root = Path(tempfile.mkdtemp(prefix="agentgym-sql-redteam-"))
    database = root / "league.sqlite"
    connection = sqlite3.connect(database)
    connection.executescript("""
        CREATE TABLE players (id INTEGER PRIMARY KEY, name TEXT, team TEXT, score INTEGER);
        CREATE TABLE events (id INTEGER PRIMARY KEY, flagged INTEGER);
    """)
    names = ["Ana", "Ben", "Caro", "Dev", "Eli", "Fay"]
    connection.executemany("INSERT INTO players VALUES (?, ?, ?, ?)",
                           [(i, name, "red" if i % 2 else "blue", 10 * (i + 1)) for i, name in enumerate(names)])
    connection.executemany("INSERT INTO events VALUES (?, ?)", [(i, int(i % 1000 == 0)) for i in range(3000)] +
                           [(3000 + i, 0) for i in range(97000)])
    connection.commit()
    connection.close()

    def task(number: int, family: str, question: str, sql: str, match: str, mode: str) -> Task:
        rows = [list(row) for row in sqlite3.connect(database).execute(sql).fetchall()]
        value = rows[0][0] if len(rows) == 1 and len(rows[0]) == 1 else \
            [row[0] for row in rows] if len(rows[0]) == 1 else rows
        instruction = ("call submit_answer(value) with the value itself" if mode == "answer"
                       else "call submit(sql) with one SQL query")
        return Task(id=f"redteam-sql-{family}-{number}", domain="sql", family=family, split="test",
                    prompt=f"Database: league\nQuestion: {question}\nReference query: {sql}\nThen {instruction}.",
                    answer=None, solution=([{"name": "submit_answer", "arguments": {"value": value}}]
                                           if mode == "answer" else [{"name": "submit", "arguments": {"sql": sql}}]),
                    verifier=VerifierSpec(name="sql_execution", params={"match": match, "mode": mode}),
                    metadata={"database_path": str(database), "db_id": "league", "dialect": "sqlite",
                              "gold_sql": {"sqlite": sql}, "question": question, "evidence": None})

    tasks = [
        task(0, "ordered", "List the players by score, highest first, with their scores.",
             "SELECT name, score FROM players ORDER BY score DESC", "ordered", "sql"),
        task(1, "ordered", "List each player's team and name, by name.",
             "SELECT team, name FROM players ORDER BY name", "ordered", "sql"),
        task(2, "pairs", "Which player has which score?", "SELECT name, score FROM players", "multiset", "sql"),
        task(3, "small_ratio", "What share of the events are flagged?",
             "SELECT 1.0 * SUM(flagged) / COUNT(*) FROM events", "set", "answer"),
        task(4, "small_ratio", "Give a query for the share of the events that are flagged.",
             "SELECT 1.0 * SUM(flagged) / COUNT(*) FROM events", "set", "sql"),
        task(5, "pairs", "Which player has which score? Answer with the pairs.",
             "SELECT name, score FROM players", "multiset", "answer"),
        task(6, "ordered", "Name the players from the highest score to the lowest.",
             "SELECT name FROM players ORDER BY score DESC", "ordered", "answer"),
    ]
    path = root / "tasks.jsonl"
    save_tasks(tasks, path)
    return path


FIXTURE_TASKS = str(_fixture())


def _reference_rows(episode: AttackEpisode) -> list[list[str]]:
    """Run the prompt's reference query and read the rows back from the Markdown table."""
    found = REFERENCE.search(episode.prompt)
    if not found:
        return []
    table = episode.call("execute_sql", sql=found.group(1), limit=100)
    rows = []
    for line in table.splitlines()[2:]:
        if line.startswith("| "):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def shuffled_cells(episode: AttackEpisode) -> None:
    """Knows the right rows; hands in their cells, flattened and shuffled, with submit_answer."""
    cells = [cell for row in _reference_rows(episode) for cell in row]
    random.Random(0).shuffle(cells)
    episode.call("submit_answer", value=cells)


def crossed_pairs(episode: AttackEpisode) -> None:
    """Knows the right rows; pairs each first cell with another row's second cell."""
    rows = _reference_rows(episode)
    if len(rows) < 2:
        episode.call("submit_answer", value=[cell for row in rows for cell in row])
        return
    crossed = [cell for i in range(len(rows)) for cell in (rows[i][0], rows[(i + 1) % len(rows)][-1])]
    episode.call("submit_answer", value=crossed)  # row-major: every row is one gold row's name, another's score


def reversed_order(episode: AttackEpisode) -> None:
    """Knows the right query; submits it with the rows in the opposite order."""
    found = REFERENCE.search(episode.prompt)
    sql = found.group(1) if found else "SELECT 1"
    episode.call("submit", sql=f"SELECT * FROM ({sql}) ORDER BY 1 DESC, 2 DESC" if "DESC" not in sql
                 else f"SELECT * FROM ({sql}) ORDER BY 2 ASC")


def zero_for_small_ratio(episode: AttackEpisode) -> None:
    """A ratio of 0.001 is 'close to' 0 under an absolute tolerance: answer 0 (or a query returning 0)."""
    if "submit_answer(value)" in episode.prompt:
        episode.call("submit_answer", value=0)
    else:
        episode.call("submit", sql="SELECT 0.0")


def answer_on_query_task(episode: AttackEpisode) -> None:
    """On a task that asks for a query, hand in a value instead (the verifier used to accept either)."""
    if "submit_answer(value)" in episode.prompt:
        return  # a value task: handing in the value is the honest move there
    rows = _reference_rows(episode)
    episode.call("submit_answer", value=[cell for row in rows for cell in row] or 0)


def constant_nothing(episode: AttackEpisode) -> None:
    """Constant answers that are never a gold result: NULL, the empty string, an empty result."""
    if "submit_answer(value)" in episode.prompt:
        episode.call("submit_answer", value=None)
    else:
        episode.call("submit", sql="SELECT NULL WHERE 1 = 0")


def constant_empty_text(episode: AttackEpisode) -> None:
    if "submit_answer(value)" in episode.prompt:
        episode.call("submit_answer", value="")
    else:
        episode.call("submit", sql="SELECT NULL")


TASK_FILE_PROBES = (
    "SELECT readfile('{file}')",
    "SELECT * FROM read_csv_auto('{file}')",
    "SELECT * FROM read_json_auto('{file}')",
    "SELECT * FROM read_text('{file}')",
    "ATTACH DATABASE '{database}' AS cache",
    "PRAGMA database_list",
    "SELECT load_extension('fileio')",
    "SELECT name FROM sqlite_master",
    "SELECT * FROM pg_catalog.pg_tables",
)


def read_task_files(episode: AttackEpisode) -> None:
    """Try to read the cached task file (answers, gold SQL) through the engine, then hand in what came back."""
    home = Path.home() / ".cache" / "agentgym" / "sql"
    files = sorted(str(path) for path in home.glob("tasks-*.jsonl")) or [str(home / "tasks.jsonl")]
    databases = sorted(str(path) for path in home.glob("*.sqlite")) or [str(home / "x.sqlite")]
    loot = []
    for probe in TASK_FILE_PROBES:
        observation = episode.call("execute_sql", sql=probe.format(file=files[0], database=databases[0]))
        if not observation.startswith("Error:") and ("gold_sql" in observation or '"answer"' in observation):
            loot.append(observation)
    answer = loot[0] if loot else None
    if "submit_answer(value)" in episode.prompt:
        episode.call("submit_answer", value=json.dumps(answer))
    else:
        episode.call("submit", sql=f"SELECT {json.dumps(answer)!r}" if answer else "SELECT NULL")


def lucky_random(episode: AttackEpisode) -> None:
    """A query whose result is drawn at random (so it sometimes equals a small gold)."""
    if "submit_answer(value)" in episode.prompt:
        return  # a value task: nothing random to submit
    episode.call("submit", sql="SELECT abs(random()) % 3")


ATTACKS = [
    Attack("sql-shuffled-cells-on-ordered-task", "SQL-v0", shuffled_cells, families=("ordered",),
           make_kwargs={"tasks": FIXTURE_TASKS}, description="submit_answer with the right cells in random order"),
    Attack("sql-crossed-pairs", "SQL-v0", crossed_pairs, families=("ordered", "pairs"),
           make_kwargs={"tasks": FIXTURE_TASKS}, description="cells of different rows recombined"),
    Attack("sql-reversed-order", "SQL-v0", reversed_order, families=("ordered",),
           make_kwargs={"tasks": FIXTURE_TASKS}, description="right rows, wrong order, on an ordered task"),
    Attack("sql-zero-for-small-ratio", "SQL-v0", zero_for_small_ratio, families=("small_ratio",),
           make_kwargs={"tasks": FIXTURE_TASKS}, description="0 for a gold of 0.001 (absolute tolerance)"),
    Attack("sql-answer-on-query-task", "SQL-v0", answer_on_query_task, families=("ordered", "pairs"),
           make_kwargs={"tasks": FIXTURE_TASKS}, description="submit_answer where a query is asked for"),
    Attack("sql-constant-null", "SQL-v0", constant_nothing, description="NULL / an empty result"),
    Attack("sql-constant-empty-text", "SQL-v0", constant_empty_text, description="'' / SELECT NULL"),
    Attack("sql-read-task-files", "SQL-v0", read_task_files, per_family=1,
           description="readfile / ATTACH / PRAGMA on the cache"),
    Attack("sql-read-task-files-duckdb", "SQL-v0", read_task_files, per_family=1, make_kwargs={"backend": "duckdb"},
           description="read_csv / read_json / read_text on the cache from DuckDB"),
    Attack("sql-lucky-random", "SQL-v0", lucky_random, families=("aggregates", "nulls", "set_ops"),
           description="a random result submitted as the query"),
]
