"""Importers for Spider and BIRD: `agentgym tasks import spider|bird DIR --out T.jsonl`.

Both read the benchmark's question files and SQLite databases from a directory the user gives. Every gold
query is run (read-only, with a timeout) on its database: its result becomes the answer, and a gold query
that fails is reported with the reason and left out. Imported tasks point at the SQLite file by absolute path,
so `gym.make("SQL-v0", tasks="T.jsonl")` runs them where the files are.

Spider: `*.json` lists of `{"db_id", "question", "query"}` and `database/<db_id>/<db_id>.sqlite`.
BIRD: `*.json` lists of `{"db_id", "question", "evidence", "SQL", "difficulty"}` and databases under
`dev_databases/`, `train_databases/` or `database/` as `<db_id>/<db_id>.sqlite`.

Alternative golds (a question with several right queries) are read from, in this order: a list under the
gold key (`"query": [sql, ...]` / `"SQL": [...]`, the first is the gold); a gold string holding several
statements separated by `;` (defog's style); and a list or string under `query_alternatives`,
`SQL_alternatives` or `alternatives`. They go to `verifier.params.alternatives`; a submission matching any
gold scores 1. An alternative that fails to run is left out and reported; the task keeps its other golds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from agentgym import Task, VerifierSpec, save_tasks

from .data.engines import SqlError, SqliteEngine, split_statements
from .tasks import prompt_for
from .verify import ANSWER_FORMAT, normalize_rows

MAX_STORED_ROWS = 1000  # larger gold results are recomputed at verification instead of stored
DATABASE_FOLDERS = ("database", "dev_databases", "train_databases", "databases", "test_databases")
BIRD_LEVELS = ("simple", "moderate", "challenging")


@dataclass
class ImportReport:
    """What an import kept and what it left out (with the reason for each)."""

    tasks: list[Task] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)  # (example id, reason)
    warnings: list[tuple[str, str]] = field(default_factory=list)  # (example id, an alternative left out)


ALTERNATIVE_KEYS = ("query_alternatives", "SQL_alternatives", "alternatives")


def gold_queries(record: dict[str, Any], gold_key: str) -> list[str] | None:
    """Every gold query of a record (the gold first, then its alternatives), or None without a usable gold."""
    value = record.get(gold_key)
    if isinstance(value, str):
        golds = split_statements(value)
    elif isinstance(value, list) and value and all(isinstance(item, str) for item in value):
        golds = [statement for item in value for statement in split_statements(item)]
    else:
        return None
    for key in ALTERNATIVE_KEYS:
        extra = record.get(key)
        if isinstance(extra, str):
            extra = [extra]
        if isinstance(extra, list):
            golds += [statement for item in extra if isinstance(item, str) for statement in split_statements(item)]
    unique = list(dict.fromkeys(golds))
    return unique or None


def find_database(root: Path, db_id: str) -> Path | None:
    for folder in DATABASE_FOLDERS:
        for candidate in (root / folder / db_id / f"{db_id}.sqlite", root / folder / db_id / f"{db_id}.db"):
            if candidate.exists():
                return candidate.resolve()
    return None


def question_files(root: Path, kind: str) -> list[Path]:
    """The JSON files under `root` (not inside database folders) that hold question lists of this format."""
    files = []
    for path in sorted(root.rglob("*.json")):
        if any(part in DATABASE_FOLDERS for part in path.relative_to(root).parts[:-1]):
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
        gold_key = "query" if kind == "spider" else "SQL"
        if isinstance(data, list) and data and isinstance(data[0], dict) and "question" in data[0] \
                and gold_key in data[0] and "db_id" in data[0]:
            files.append(path)
    return files


def spider_difficulty(sql: str) -> str:
    """A rough BIRD-style level from the query's shape (Spider's own hardness needs its parser)."""
    text = sql.lower()
    score = text.count(" join ") + 2 * text.count("select", 1) + sum(
        word in text for word in (" group by ", " having ", " order by ", " union ", " intersect ", " except "))
    return "simple" if score <= 1 else "moderate" if score <= 3 else "challenging"


def orders_result(sql: str) -> bool:
    """True when the outermost query has ORDER BY (then order matters for the reward)."""
    depth, text = 0, sql.lower()
    for match in re.finditer(r"\(|\)|\border\s+by\b", text):
        token = match.group(0)
        if token == "(":
            depth += 1
        elif token == ")":
            depth -= 1
        elif depth == 0:
            return True
    return False


def match_for(kind: str, gold: str) -> str:
    """BIRD scores sets; Spider scores order where its gold has a top-level ORDER BY."""
    return "set" if kind == "bird" else ("ordered" if orders_result(gold) else "set")


def import_examples(root: Path, examples: Iterable[tuple[str, str, dict[str, Any]]], *, kind: str,
                    timeout_s: float = 30.0) -> ImportReport:
    """Validate and convert examples given as (id, split, record) into tasks."""
    report = ImportReport()
    engines: dict[Path, SqliteEngine] = {}
    gold_key = "query" if kind == "spider" else "SQL"
    try:
        for example_id, split, record in examples:
            db_id, question = record.get("db_id"), record.get("question")
            golds = gold_queries(record, gold_key)
            if not (isinstance(db_id, str) and isinstance(question, str) and golds):
                report.failures.append((example_id, f"missing db_id, question or {gold_key}"))
                continue
            gold, alternatives = golds[0], []
            database = find_database(root, db_id)
            if database is None:
                report.failures.append((example_id, (f"database {db_id!r} not found under "
                                                    f"{' or '.join(DATABASE_FOLDERS)}/{db_id}/{db_id}.sqlite")))
                continue
            engine = engines.get(database) or engines.setdefault(database, SqliteEngine(database, timeout_s))
            try:
                rows = normalize_rows(engine.execute(gold, max_rows=None).rows)
            except SqlError as error:
                report.failures.append((example_id, f"gold query fails: {error}"))
                continue
            for number, alternative in enumerate(golds[1:], start=1):
                try:
                    engine.execute(alternative, max_rows=1)
                except SqlError as error:
                    report.warnings.append((example_id, f"alternative gold {number} left out: {error}"))
                    continue
                alternatives.append(alternative)
            params: dict[str, Any] = {"match": match_for(kind, gold), "mode": "sql"}
            if alternatives:
                params["alternatives"] = alternatives
            evidence = (record.get("evidence") or "").strip() or None
            difficulty = record.get("difficulty") if kind == "bird" else spider_difficulty(gold)
            if difficulty not in BIRD_LEVELS:
                difficulty = spider_difficulty(gold)
            report.tasks.append(Task(
                id=example_id, domain="sql", family=kind, split=split,
                prompt=prompt_for(db_id, question.strip(), evidence, answer_mode=False),
                answer=rows if len(rows) <= MAX_STORED_ROWS else None,
                solution=[{"name": "submit", "arguments": {"sql": gold}}],
                verifier=VerifierSpec(name="sql_execution", params=params),
                metadata={"database_path": str(database), "db_id": db_id, "dialect": "sqlite",
                          "gold_sql": {"sqlite": gold}, "question": question.strip(), "evidence": evidence,
                          "source": kind, "answer_format": ANSWER_FORMAT},
                difficulty=difficulty,
            ))
    finally:
        for engine in engines.values():
            engine.close()
    return report


def _split_of(path: Path) -> str:
    return "train" if "train" in path.stem.lower() else "test"


def read_benchmark(root: Path, kind: str) -> ImportReport:
    """Import every question file of a Spider or BIRD directory."""
    files = question_files(root, kind)
    if not files:
        gold_key = "query" if kind == "spider" else "SQL"
        raise click.ClickException(f"no {kind} question files in {root}: expected JSON lists of objects with "
                                   f"db_id, question and {gold_key}")

    def examples() -> Iterable[tuple[str, str, dict[str, Any]]]:
        for path in files:
            records = json.loads(path.read_text(encoding="utf-8"))
            for index, record in enumerate(records):
                yield f"{kind}-{path.stem}-{index:05d}", _split_of(path), record

    return import_examples(root, examples(), kind=kind)


def _run(kind: str, source: Path, out: Path) -> None:
    report = read_benchmark(source, kind)
    written = save_tasks(report.tasks, out)
    click.echo(f"wrote {written} {kind} tasks to {out}")
    if report.failures:
        click.echo(f"left out {len(report.failures)} examples whose gold query does not run:")
        for example_id, reason in report.failures:
            click.echo(f"  {example_id}: {reason}")
    if report.warnings:
        click.echo(f"left out {len(report.warnings)} alternative golds that do not run:")
        for example_id, reason in report.warnings:
            click.echo(f"  {example_id}: {reason}")


@click.command("spider")
@click.argument("source", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="Task file (JSONL).")
def spider_command(source: Path, out: Path) -> None:
    """Import Spider: question files (*.json with db_id, question, query) and database/<db>/<db>.sqlite.

    Example: agentgym tasks import spider ~/data/spider --out spider.jsonl
    """
    _run("spider", source, out)


@click.command("bird")
@click.argument("source", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="Task file (JSONL).")
def bird_command(source: Path, out: Path) -> None:
    """Import BIRD: question files (*.json with db_id, question, evidence, SQL, difficulty) and
    dev_databases/<db>/<db>.sqlite (or train_databases/, database/).

    Example: agentgym tasks import bird ~/data/bird/dev --out bird.jsonl
    """
    _run("bird", source, out)
