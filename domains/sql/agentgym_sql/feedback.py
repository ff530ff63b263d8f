"""SQL-v0 hints (feedback="hints" | "adaptive"): closest table or column names, column types, the dialect.

Every hint is read from the database's schema, which the agent can list with list_tables and describe_table
anyway, and from the engine's error message; never from the task, its gold query or its result, and never
from the data (no cell value appears in a hint). See docs/feedback.md.
"""

from __future__ import annotations

import re
import threading

from agentgym.actions import ToolCall
from agentgym.feedback import AgentView, Hint, closest
from agentgym.tools import ToolOutcome

from .data.engines import SqlError
from .tools import SqlEpisode

_QUOTED = r"""["'`]?([^"'`\s!,()]+)["'`]?"""
_UNKNOWN_TABLE = (
    re.compile(r"no such table: " + _QUOTED),                              # SQLite
    re.compile(r"Table with name " + _QUOTED + r" does not exist"),        # DuckDB
    re.compile(r'relation "([^"]+)" does not exist'),                      # PostgreSQL
    re.compile(r"no table named '([^']+)'"),                               # describe_table
)
_UNKNOWN_COLUMN = (
    re.compile(r"no such column: " + _QUOTED),                             # SQLite
    re.compile(r'Referenced column "([^"]+)" not found'),                  # DuckDB
    re.compile(r'does not have a column named "([^"]+)"'),                 # DuckDB, qualified
    re.compile(r'column "?([^"\s]+)"? does not exist'),                    # PostgreSQL
)
_UNKNOWN_FUNCTION = (
    re.compile(r"no such function: ([A-Za-z_][A-Za-z0-9_]*)"),
    re.compile(r"Function with name ([A-Za-z_][A-Za-z0-9_]*) does not exist"),
    re.compile(r"function ([A-Za-z_][A-Za-z0-9_.]*)\(.*\) does not exist"),
)
_SYNTAX = re.compile(r"syntax error|incomplete input|unrecognized token|Parser Error|unterminated", re.IGNORECASE)
_TYPES = re.compile(r"Conversion Error|No function matches|operator does not exist|datatype mismatch|"
                    r"invalid input syntax for type|cannot be cast|Cannot compare", re.IGNORECASE)
# Functions of other dialects that agents often write by habit.
_FOREIGN = re.compile(r"\b(dateadd|datediff|datepart|getdate|isnull|nvl|top|to_date|date_format|str_to_date|"
                      r"ifnull|strftime|julianday|date_trunc|extract|interval)\b", re.IGNORECASE)
_FROM_NAMES = re.compile(r"\b(?:from|join)\s+[\"`\[]?([A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)

DIALECT_NOTES = {
    "sqlite": ("This database is SQLite.",
               ("Dates are text: use date(x), strftime('%Y', x), julianday(b) - julianday(a); concatenate with ||; "
               "LIKE is case-insensitive for ASCII; LIMIT n; there is no DATEADD, DATEDIFF, EXTRACT or TOP.")),
    "duckdb": ("This database is DuckDB.",
               ("Use date_diff('day', a, b), date_add(d, INTERVAL 1 DAY), EXTRACT(year FROM d), strftime(d, "
               "'%Y'), ILIKE, LIMIT n; quote identifiers with double quotes, strings with single quotes.")),
    "postgres": ("This database is PostgreSQL.",
                 ("Use d + INTERVAL '1 day', b - a for days between dates, EXTRACT(YEAR FROM d), date_trunc, "
                 "to_char, ILIKE, LIMIT n; quote identifiers with double quotes, strings with single quotes; "
                 "integer / integer truncates (cast to numeric).")),
}

_schemas_lock = threading.Lock()
_schemas: dict[str, dict[str, list[str]]] = {}  # database key -> table -> column names, as the engine shows them


def schema(state: SqlEpisode) -> dict[str, list[str]]:
    """Table name -> column names of the episode's database (what describe_table shows), read once per database."""
    with _schemas_lock:
        known = _schemas.get(state.source)
    if known is None:
        engine = state.engine
        known = {table: [column.name for column in engine.describe(table).columns] for table in engine.tables()}
        with _schemas_lock:
            _schemas[state.source] = known
    return known


def hints(call: ToolCall, outcome: ToolOutcome, view: AgentView) -> list[Hint]:
    """Hints for a failed execute_sql, submit or describe_table call (none for anything else)."""
    state = view.state
    if outcome.ok or call.name not in ("execute_sql", "submit", "describe_table") or not isinstance(state, SqlEpisode):
        return []
    message = outcome.text
    sql = call.arguments.get("sql") if isinstance(call.arguments, dict) else None
    sql = sql if isinstance(sql, str) else ""
    try:
        tables = schema(state)
    except SqlError:
        return []
    found: list[Hint] = []
    table = _first_match(_UNKNOWN_TABLE, message)
    column = _first_match(_UNKNOWN_COLUMN, message)
    function = _first_match(_UNKNOWN_FUNCTION, message)
    if table is not None:
        found.append(_table_hint(table, tables))
    elif column is not None:
        found.append(_column_hint(column, sql, tables))
    if _TYPES.search(message):
        found.append(Hint("column_types", "A value does not fit the column's type.",
                          "describe_table shows each column's type; compare numbers with numbers and dates in "
                          "the form the column stores them."))
    dialect = state.engine.dialect
    if function is not None or _SYNTAX.search(message) or (column is not None and _FOREIGN.search(sql)):
        short, detail = DIALECT_NOTES.get(dialect, (f"This database is {dialect}.", ""))
        found.append(Hint("dialect", short + (f" There is no function {function}() here." if function else ""),
                          detail))
    return found


def _first_match(patterns: tuple[re.Pattern[str], ...], message: str) -> str | None:
    for pattern in patterns:
        match = pattern.search(message)
        if match:
            return match.group(1)
    return None


def _table_hint(name: str, tables: dict[str, list[str]]) -> Hint:
    name = name.split(".")[-1]
    match = closest(name, tables)
    if match is None:
        return Hint("closest_table", f"There is no table '{name}'. The tables are: {', '.join(tables)}.")
    return Hint("closest_table", f"There is no table '{name}'; the closest table name is '{match}'.",
                f"{match} has the columns {', '.join(tables[match])}.")


def _column_hint(name: str, sql: str, tables: dict[str, list[str]]) -> Hint:
    name = name.split(".")[-1]
    lowered = {table.lower(): table for table in tables}
    named = [lowered[word.lower()] for word in _FROM_NAMES.findall(sql) if word.lower() in lowered]
    searched = list(dict.fromkeys(named)) or list(tables)
    candidates = [(column, table) for table in searched for column in tables[table]]
    match = closest(name, [column for column, _ in candidates])
    if match is None:
        where = ", ".join(f"{table} ({', '.join(tables[table])})" for table in searched[:4])
        return Hint("closest_column", f"No column is named '{name}' in the tables the query reads.",
                    f"Their columns: {where}.")
    owner = next(table for column, table in candidates if column == match)
    return Hint("closest_column", f"No column is named '{name}'; the closest column name is '{match}' "
                f"(table {owner}).", f"{owner} has the columns {', '.join(tables[owner])}.")
