"""Importers for Spider and BIRD: `agentgym tasks import spider|bird DIR --out T.jsonl`.

Both read the benchmark's question files and SQLite databases from a directory the user gives. Every gold
query is run twice (read-only, measured in SQLite steps) on its database: its result becomes the answer. A
gold query that fails, whose two runs disagree (random(), an unordered LIMIT), or that costs more than a
tenth of the env's query limit (so a right answer would come near being stopped) is reported with the
reason and left out. Imported tasks point at the SQLite file by absolute path,
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

from .data.engines import DEFAULT_MAX_STEPS, GOLD_STEP_SHARE, SqlError, SqliteEngine, split_statements
from .tasks import prompt_for
from .verify import ANSWER_FORMAT, compare, consistent_with_order, normalize_rows

MAX_STORED_ROWS = 1000  # larger gold results are recomputed at verification instead of stored
DATABASE_FOLDERS = ("database", "dev_databases", "train_databases", "databases", "test_database", "test_databases")
BIRD_LEVELS = ("simple", "moderate", "challenging")
MAX_GOLD_STEPS = DEFAULT_MAX_STEPS // GOLD_STEP_SHARE  # a gold costs at most a tenth of an agent's query limit
MEASURE_STEPS = DEFAULT_MAX_STEPS * GOLD_STEP_SHARE  # how far a gold is run to measure (and report) its cost


@dataclass
class ImportReport:
    """What an import kept and what it left out (with the reason for each)."""

    tasks: list[Task] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)  # (example id, reason)
    warnings: list[tuple[str, str]] = field(default_factory=list)  # (example id, an alternative left out)

    def summary(self, kind: str, examples: int = 3) -> list[str]:
        """Lines that count what was left out per reason, each with a few example ids and messages."""
        lines: list[str] = []
        for title, items in (("left out {} {} examples", self.failures), ("{} warnings on {} tasks", self.warnings)):
            by_reason: dict[str, list[tuple[str, str]]] = {}
            for example_id, message in items:
                by_reason.setdefault(reason_of(message), []).append((example_id, message))
            if by_reason:
                lines.append(title.format(len(items), kind) + ", by reason:")
            for reason, cases in sorted(by_reason.items(), key=lambda item: -len(item[1])):
                lines.append(f"  {len(cases)} x {reason}")
                lines += [f"    {example_id}: {message[:300]}" for example_id, message in cases[:examples]]
        return lines


def reason_of(message: str) -> str:
    """The kind of a failure message (its text up to the first detail), to count failures by reason."""
    return message.split(":", 1)[0] if ":" in message else message


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
            data = read_json(path)
        except ValueError:
            continue
        gold_key = "query" if kind == "spider" else "SQL"
        if isinstance(data, list) and data and isinstance(data[0], dict) and "question" in data[0] \
                and gold_key in data[0] and "db_id" in data[0]:
            files.append(path)
    return files


def read_json(path: Path) -> Any:
    """A JSON file's value; a UTF-8 byte-order mark (as Windows tools write) is allowed. Raises ValueError."""
    try:
        return json.loads(path.read_bytes().decode("utf-8-sig"))
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text ({error})") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None


def spider_difficulty(sql: str) -> str:
    """A rough BIRD-style level from the query's shape (Spider's own hardness needs its parser)."""
    text = sql.lower()
    score = text.count(" join ") + 2 * text.count("select", 1) + sum(
        word in text for word in (" group by ", " having ", " order by ", " union ", " intersect ", " except "))
    return "simple" if score <= 1 else "moderate" if score <= 3 else "challenging"


def _masked(sql: str) -> str:
    """`sql` with quoted text and everything inside parentheses blanked (same length): what is left is the
    outermost query, so clause keywords found in it are the outer query's."""
    out, depth, quote = [], 0, ""
    closing = {"'": "'", '"': '"', "`": "`", "[": "]"}
    for char in sql:
        if quote:
            out.append(" ")
            if char == closing[quote]:
                quote = ""
        elif char in closing:
            quote = char
            out.append(" ")
        elif char == "(":
            depth += 1
            out.append("(" if depth == 1 else " ")
        elif char == ")":
            depth = max(depth - 1, 0)
            out.append(")" if depth == 0 else " ")
        else:
            out.append(char if depth == 0 else " ")
    return "".join(out)


def _split_top(text: str, masked: str) -> list[str]:
    """`text` split at the commas its masked form has (commas of the outermost level)."""
    parts, start = [], 0
    for match in re.finditer(",", masked):
        parts.append(text[start:match.start()].strip())
        start = match.end()
    parts.append(text[start:].strip())
    return [part for part in parts if part]


def orders_result(sql: str) -> bool:
    """True when the outermost query has ORDER BY (then order matters for the reward)."""
    return re.search(r"\border\s+by\b", _masked(sql).lower()) is not None


@dataclass
class Ordering:
    """The outermost ORDER BY of a gold query, as the verifier's tie rules need it."""

    order_key: list[int]  # columns of the sort key in the result of `order_sql` (or of the gold)
    order_sql: str | None  # the gold without its LIMIT, the key appended when it is not among the gold's columns
    limited: bool


def _plain_name(expression: str) -> str:
    return re.sub(r"[\s`\"\[\]]", "", expression).lower()


def ordering_of(sql: str) -> Ordering | None:
    """How the outermost query orders its rows, or None when it has no ORDER BY or its clauses cannot be read
    (then the gold's order is compared strictly, as before)."""
    masked = _masked(sql).lower()
    order = re.search(r"\border\s+by\b", masked)
    if order is None:
        return None
    limit = re.search(r"\blimit\b", masked[order.end():])
    order_end = order.end() + limit.start() if limit else len(sql)
    limit_text = sql[order_end:].strip().rstrip(";").strip()
    if limit and not re.fullmatch(r"(?i)limit\s+\d+", limit_text):
        return None  # OFFSET, or an expression: ties at the start of the window too; compared strictly
    terms = []
    term_text = sql[order.end():order_end]
    for term in _split_top(term_text, masked[order.end():order_end]):
        term = re.sub(r"(?i)\s+(asc|desc)$|\s+nulls\s+(first|last)$", "", term.strip())
        term = re.sub(r"(?i)\s+(asc|desc)$", "", term)
        terms.append(term.strip())
    if not terms:
        return None
    compound = re.search(r"\b(union|intersect|except)\b", masked[:order.start()]) is not None
    select = re.match(r"\s*select\s+(distinct\s+|all\s+)?", sql, re.IGNORECASE)
    from_clause = re.search(r"\bfrom\b", masked)
    if select is None:
        return None
    items_end = from_clause.start() if from_clause else order.start()
    items = _split_top(sql[select.end():items_end], masked[select.end():items_end])
    names: list[set[str]] = []
    for item in items:
        alias = re.match(r"(?is)(.*?)\s+(?:as\s+)?([A-Za-z_][\w]*|\"[^\"]+\"|`[^`]+`)$", item)
        forms = {_plain_name(item)}
        if alias and not item.rstrip().endswith(")") and "." not in alias.group(2):
            forms |= {_plain_name(alias.group(1)), _plain_name(alias.group(2))}
        names.append(forms)
    keys: list[int] = []
    for term in terms:
        if term.isdigit() and 1 <= int(term) <= len(items):
            keys.append(int(term) - 1)
            continue
        plain = _plain_name(term)
        found = [index for index, forms in enumerate(names) if plain in forms]
        if not found and "." in plain:  # ORDER BY T1.name with `name` selected
            found = [index for index, forms in enumerate(names) if plain.split(".")[-1] in forms]
        if not found and "." not in plain:  # ORDER BY name with `T1.name` selected
            found = [index for index, forms in enumerate(names) if any(form.split(".")[-1] == plain
                                                                       for form in forms)]
        if len(found) != 1 or items[found[0]].strip().endswith("*"):
            break
        keys.append(found[0])
    head = sql[:order_end].rstrip().rstrip(";")
    if len(keys) == len(terms):
        return Ordering(keys, head if limit else None, bool(limit))
    if compound or select.group(1) or from_clause is None or any(item.strip().endswith("*") for item in items):
        return None  # appending the key would change the rows (DISTINCT, UNION) or the width is unknown (*)
    # The key is not among the gold's columns: append it, so the verifier can read each row's key.
    appended = sql[:items_end].rstrip() + ", " + ", ".join(terms) + " " + sql[items_end:order_end].strip()
    return Ordering(list(range(len(items), len(items) + len(terms))), appended.rstrip().rstrip(";"), bool(limit))


def match_for(kind: str, gold: str) -> str:
    """BIRD scores sets; Spider scores order where its gold has a top-level ORDER BY."""
    return "set" if kind == "bird" else ("ordered" if orders_result(gold) else "set")


def import_examples(root: Path, examples: Iterable[tuple[str, str, Any]], *, kind: str,
                    timeout_s: float = 30.0) -> ImportReport:
    """Validate and convert examples given as (id, split, record) into tasks."""
    report = ImportReport()
    engines: dict[Path, SqliteEngine] = {}
    gold_key = "query" if kind == "spider" else "SQL"
    try:
        for example_id, split, record in examples:
            if not isinstance(record, dict):
                report.failures.append((example_id, f"not a JSON object: {type(record).__name__}"))
                continue
            db_id, question = record.get("db_id"), record.get("question")
            golds = gold_queries(record, gold_key)
            if not (isinstance(db_id, str) and isinstance(question, str) and question.strip() and golds):
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
                rows = normalize_rows(engine.execute(gold, max_rows=None, max_steps=MEASURE_STEPS).rows)
                cost = engine.last_steps
                again = normalize_rows(engine.execute(gold, max_rows=None, max_steps=MEASURE_STEPS).rows)
            except SqlError as error:
                report.failures.append((example_id, f"gold query fails: {error}"))
                continue
            if cost > MAX_GOLD_STEPS:
                report.failures.append((example_id, (
                    f"gold query too costly: {cost:,} SQLite steps, more than a tenth of the env's query limit "
                    f"({DEFAULT_MAX_STEPS:,}); a right answer would come close to being stopped")))
                continue
            if not same_result(rows, again, ordered=orders_result(gold)):
                report.failures.append((example_id, (
                    "gold result differs between two runs: the task has no fixed answer (random(), an unordered "
                    f"LIMIT or similar); first run {len(rows)} rows, second {len(again)}")))
                continue
            if not rows:
                # Every query that returns nothing (`SELECT 1 WHERE 0`) would equal such a gold.
                empty = "gold result is empty: any query returning no rows would score 1"
                report.failures.append((example_id, empty))
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
            params.update(tie_params(engine, gold, rows, params["match"], example_id, report))
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


def same_result(first: list[list[Any]], second: list[list[Any]], *, ordered: bool) -> bool:
    """Whether two runs of a gold gave the same rows (in the same order when its order counts)."""
    return bool(compare(second, first)["ordered" if ordered else "multiset"])


def tie_params(engine: SqliteEngine, gold: str, rows: list[list[Any]], match: str, example_id: str,
               report: ImportReport) -> dict[str, Any]:
    """The verifier's `order_key`, `order_sql` and `limited` for a gold whose rows tie on its sort key (several
    right answers), or nothing when the gold has no ties or its ordering cannot be read."""
    ordering = ordering_of(gold)
    if ordering is None or (match == "set" and not ordering.limited):
        return {}
    try:
        full = normalize_rows(engine.execute(ordering.order_sql, max_rows=None).rows) if ordering.order_sql \
            else rows
    except SqlError as error:
        report.warnings.append((example_id, f"ties compared strictly, its sort key could not be read: {error}"))
        return {}
    if not consistent_with_order(rows, rows, full, ordering.order_key, limited=ordering.limited, match=match):
        report.warnings.append((example_id, "ties compared strictly: the gold without LIMIT disagrees with it"))
        return {}
    width = len(rows[0])
    keys = [json.dumps([row[index] for index in ordering.order_key], default=str) for row in full]
    count = len(rows)
    tied = len(set(keys[:count])) < count or (ordering.limited and keys[count:count + 1] == keys[count - 1:count])
    if not tied or width == 0:
        return {}
    params: dict[str, Any] = {"order_key": ordering.order_key, "limited": ordering.limited}
    if ordering.order_sql:
        params["order_sql"] = ordering.order_sql
    return params


def _split_of(path: Path) -> str:
    return "train" if "train" in path.stem.lower() else "test"


def read_benchmark(root: Path, kind: str) -> ImportReport:
    """Import every question file of a Spider or BIRD directory."""
    files = question_files(root, kind)
    if not files:
        gold_key = "query" if kind == "spider" else "SQL"
        raise click.ClickException(f"no {kind} question files in {root}: expected JSON lists of objects with "
                                   f"db_id, question and {gold_key}")

    def examples() -> Iterable[tuple[str, str, Any]]:
        for path in files:
            for index, record in enumerate(read_json(path)):
                yield f"{kind}-{path.stem}-{index:05d}", _split_of(path), record

    return import_examples(root, examples(), kind=kind)


def _run(kind: str, source: Path, out: Path) -> None:
    report = read_benchmark(source, kind)
    written = save_tasks(report.tasks, out)
    click.echo(f"wrote {written} {kind} tasks to {out}")
    for line in report.summary(kind, examples=5):
        click.echo(line)


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
