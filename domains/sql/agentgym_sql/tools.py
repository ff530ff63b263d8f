"""What the agent may call: list_tables, describe_table, execute_sql, submit(sql) and submit_answer(value).

Every tool reads through the episode's read-only `Engine`; none can change a database. Tool docstrings are
what the model reads.
"""

from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from agentgym import Task, ToolError, tool

from .data.engines import GOLD_STEP_SHARE, Engine, SqlError, SqliteEngine, check_query
from .data.schema import DatabaseSpec
from .verify import ANSWER_FORMAT, GoldResult, normalize_rows

DEFAULT_ROW_CAP = 20
MAX_ROW_CAP = 100
CELL_WIDTH = 60
GOLD_TIMEOUT_S = 60.0

_gold_lock = threading.Lock()
_gold_results: dict[tuple[str, str], GoldResult] = {}  # (database key, gold SQL) -> its result, once per process
_stored_golds: dict[int, tuple[list[list[Any]], GoldResult]] = {}  # id(task.answer) -> (it, its GoldResult)
_table_counts: dict[tuple[str, str], int] = {}

# A submitted query is run once by the grader; one whose result is drawn at random could match by luck.
_NONDETERMINISTIC = re.compile(r"\b(random|randomblob|rand|random_normal|gen_random_uuid|uuid|uuidv4|setseed)\s*\(")


@functools.lru_cache(maxsize=4096)
def _in_dialect(sql: str, source: str, target: str) -> str:
    from .tasks import transpile

    return transpile(sql, source, target)


@dataclass
class SqlEpisode:
    """The state tools receive: a read-only engine on the task's database and what the episode saw. It holds no
    task and no gold (the grader's side is `SqlGrading`, which the env keeps apart), so no tool or hint can
    reach the answer."""

    engine: Engine
    source: str  # identifies the database the engine reads (cache key), never shown to the agent
    database: str
    mode: str = "sql"  # "sql": the answer is a query (submit); "answer": a value (submit_answer)
    spec: DatabaseSpec | None = None
    seen_queries: set[str] = field(default_factory=set, repr=False)


@dataclass
class SqlGrading:
    """What the verifier and the diagnosis receive: the episode, its task and the gold, kept by the env and never
    handed to a tool. Reads the episode's fields through (`grading.engine` is the episode's engine).

    `grader` is the engine gold queries run on: the agent's own engine where a session holds no state (SQLite,
    DuckDB), on PostgreSQL a separate session on which no agent-written SQL ever runs (a submitted query runs
    on the agent's session, like its execute_sql calls).
    """

    episode: SqlEpisode
    task: Task
    gold_sql: str
    grader: Engine
    _golds: list[GoldResult] | None = field(default=None, repr=False)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.episode, name)

    def gold_rows(self) -> GoldResult:
        """The gold query's normalised result on this engine (the stored answer when it was made here)."""
        return self.golds()[0]

    def golds(self) -> list[GoldResult]:
        """Every gold result: the task's gold query first, then its `verifier.params.alternatives`.

        Each is computed (or read from the task) once per process and database, with its row keys, and shared
        by every episode of the task."""
        if self._golds is None:
            dialect = self.task.metadata.get("dialect", "sqlite")
            stored = self.task.answer if (self.grader.dialect == dialect and self.task.answer is not None
                                          and self.task.metadata.get("answer_format") == ANSWER_FORMAT) else None
            golds = [_stored_gold(stored) if stored is not None else self._run_gold(self.gold_sql)]
            for alternative in self.task.verifier.params.get("alternatives", ()) or ():
                golds.append(self._run_gold(_in_dialect(str(alternative), dialect, self.grader.dialect)))
            self._golds = golds
        return self._golds

    def _run_gold(self, sql: str) -> GoldResult:
        """The result of gold `sql` on the grader's engine, run once per process and database."""
        key = (self.episode.source, sql)
        with _gold_lock:
            cached = _gold_results.get(key)
        if cached is None:
            try:
                grader = self.grader
                result = (grader.execute(sql, max_rows=None, timeout_s=GOLD_TIMEOUT_S,
                                         max_steps=grader.max_steps * GOLD_STEP_SHARE)
                          if isinstance(grader, SqliteEngine) else
                          grader.execute(sql, max_rows=None, timeout_s=GOLD_TIMEOUT_S))
            except SqlError as error:
                raise RuntimeError(f"task {self.task.id}: a gold query fails on {self.grader.dialect}: "
                                   f"{error}") from None
            with _gold_lock:
                cached = _gold_results.setdefault(key, GoldResult(normalize_rows(result.rows)))
        return cached


def _stored_gold(stored: list[list[Any]]) -> GoldResult:
    """A task's stored answer as a `GoldResult`, made once per answer object. The cache holds the answer itself,
    so its id cannot be reused by another object while the entry lives."""
    with _gold_lock:
        entry = _stored_golds.get(id(stored))
        if entry is None or entry[0] is not stored:
            entry = _stored_golds[id(stored)] = (stored, GoldResult(stored))
    return entry[1]


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    kind = type(value)
    if kind is int or kind is float:
        text = str(value)  # digits, sign, point, exponent, inf or nan: nothing to escape
    else:
        text = repr(value) if kind is str and value != value.strip() else str(value)
        if "\n" in text or "|" in text:
            text = text.replace("\n", "\\n").replace("|", "\\|")
    return text if len(text) <= CELL_WIDTH else text[:CELL_WIDTH - 1] + "…"


def render_table(columns: list[str], rows: list[tuple[Any, ...]] | list[list[Any]], total: int) -> str:
    """A Markdown table of `rows` with a footer saying how many rows the query returned in all."""
    if not columns:
        return "The statement returned no columns."
    cell = _cell
    lines = ["| " + " | ".join(map(cell, columns)) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(map(cell, row)) + " |" for row in rows]
    if total == 0:
        lines.append("(0 rows)")
    elif total > len(rows):
        lines.append(f"(showing {len(rows)} of {total} rows; add a WHERE clause or aggregate to see the rest)")
    else:
        lines.append(f"({total} row{'s' if total != 1 else ''})")
    return "\n".join(lines)


@tool
def list_tables(state: SqlEpisode) -> str:
    """List the tables of the database with their row counts."""
    lines = [f"Tables in database '{state.database}' ({state.engine.dialect}):"]
    for table in state.engine.tables():
        key = (state.source, table)
        if key not in _table_counts:
            counted = state.engine.execute(f"SELECT COUNT(*) FROM {state.engine.quote(table)}", max_rows=1)
            _table_counts[key] = int(counted.rows[0][0])
        lines.append(f"- {table} ({_table_counts[key]} rows)")
    return "\n".join(lines)


@tool
def describe_table(state: SqlEpisode, table: str) -> str:
    """Show a table's columns: type, primary and foreign keys, whether NULL occurs, and a few sample values.

    Args:
        table: The table name, as list_tables shows it.
    """
    names = state.engine.tables()
    match = next((name for name in names if name.lower() == table.strip().lower()), None)
    if match is None:
        raise ToolError(f"no table named {table!r}; available: {', '.join(names)}")
    try:
        info = state.engine.describe(match)
    except SqlError as error:
        raise ToolError(str(error)) from None
    declared = {c.name: c for c in state.spec.table(match).columns} if state.spec else {}
    lines = [f"Table {match}:"]
    for column in info.columns:
        notes = [column.type]
        spec_column = declared.get(column.name)
        if column.primary_key or (spec_column and spec_column.primary_key):
            notes.append("primary key")
        reference = column.references or (spec_column.references if spec_column else None)
        if reference:
            notes.append(f"references {reference}")
        if spec_column is not None and spec_column.nullable or spec_column is None and column.nullable \
                and not column.primary_key:
            notes.append("may be NULL")
        try:
            samples = ", ".join(_cell(v) for v in state.engine.sample_values(match, column.name))
        except SqlError:
            samples = ""
        lines.append(f"- {column.name}: {', '.join(notes)}" + (f"; e.g. {samples}" if samples else ""))
    return "\n".join(lines)


@tool
def execute_sql(state: SqlEpisode, sql: str, limit: int = DEFAULT_ROW_CAP) -> str:
    """Run one read-only SQL query (SELECT or WITH) and show its result as a table with the total row count.

    Args:
        sql: A single SELECT statement in the database's dialect. Writes are refused.
        limit: Most rows to show (1 to 100); the total count is always reported.
    """
    shown = max(1, min(int(limit), MAX_ROW_CAP))
    try:
        result = state.engine.execute(sql, max_rows=shown)
    except SqlError as error:
        raise ToolError(str(error)) from None
    return render_table(result.columns, result.rows, result.total_rows)


@tool(terminal=True)
def submit(state: SqlEpisode, sql: str) -> dict[str, str]:
    """Submit your final SQL query; its result is compared with the correct one. Ends the episode.

    Args:
        sql: One SELECT statement whose result answers the question.
    """
    if state.mode == "answer":
        raise ToolError("this question asks for the value itself: find it with execute_sql, then call "
                        "submit_answer(value); submit(sql) is for questions that ask for a query")
    try:
        text = check_query(sql)
    except SqlError as error:
        raise ToolError(f"cannot submit this query: {error}") from None
    found = _NONDETERMINISTIC.search(text.lower().replace('"', ""))
    if found:
        raise ToolError(f"cannot submit this query: {found.group(1)}() makes its result change from run to run; "
                        "submit a query whose result is the same every time it runs")
    return {"sql": sql}


@tool(terminal=True)
def submit_answer(state: SqlEpisode,
                  value: str | float | list[str | int | float | None] | list[list[str | int | float | None]] | None,
                  ) -> dict[str, Any]:
    """Submit the answer itself when the question asks for a value (not a query). Ends the episode.

    Args:
        value: The answer: one value (42, "Boston"), a list with one item per result row (["Boston", "Lyon"]),
            or a list of rows when each row has several values ([["Boston", 12], ["Lyon", 7]]).
    """
    if state.mode != "answer":
        raise ToolError("this task asks for a query: call submit(sql) with one SELECT statement whose result "
                        "answers the question; submit_answer(value) is for questions that ask for a value")
    return {"answer": value}


TOOLS = (list_tables, describe_table, execute_sql, submit, submit_answer)
