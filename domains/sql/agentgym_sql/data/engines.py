"""Read-only query engines over SQLite, DuckDB and PostgreSQL: the only way an episode touches a database.

Two layers stand between the agent and the data:
1. `check_query` rejects what is plainly not one read-only query (size over 100,000 characters, invalid
   UTF-8, several statements, anything but SELECT / WITH / VALUES) with a message that says what to do.
2. The engine itself cannot write: SQLite opens `mode=ro` with an authorizer that only allows reads (no
   writes, ATTACH, VACUUM INTO, PRAGMA writes or extension loading); DuckDB opens `read_only` with external
   access off; PostgreSQL connects as a role with SELECT only, `default_transaction_read_only` and a
   `statement_timeout`.
Limits: on SQLite a query is measured in engine work, not time: the progress handler counts the virtual
machine's instructions and stops a query past `max_steps` of them (`DEFAULT_MAX_STEPS`), so the same query
gets the same outcome on an idle or a busy machine; a wall-clock backstop (`timeout_s`, far above any
query within the step limit) only guards against a single instruction that runs away. DuckDB and PostgreSQL
have no such counter: their wall-clock limit (`DEFAULT_TIMEOUT_S`, DuckDB's `interrupt`, PostgreSQL's
`statement_timeout` backed by a client-side cancel) is set far above every gold. On PostgreSQL each query also runs in a transaction that
is rolled back, functions that reach other sessions or change settings are refused (`check_postgres_query`),
and `reset_session` clears the session between episodes.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_QUERY_CHARS = 100_000
DEFAULT_TIMEOUT_S = 30.0  # wall clock: the limit on DuckDB and PostgreSQL, a backstop on SQLite
# SQLite virtual-machine instructions one query may run. The slowest built-in gold costs about 3.5 million
# (`sql-finance-aggregates-0000`); task generation and the importers leave out a gold above a tenth of this.
DEFAULT_MAX_STEPS = 40_000_000
GOLD_STEP_SHARE = 10  # a gold may cost at most max_steps / GOLD_STEP_SHARE
STEPS_PER_CHECK = 1000  # instructions between two calls of the progress handler (the step count's grain)
_CLOCK_EVERY = 64  # progress calls between two looks at the wall clock (the backstop)
SQLITE_MAX_VALUE_BYTES = 50_000_000  # longest string or blob one SQLite value may hold (bounds one instruction)
ALLOWED_START = ("select", "with", "values")


class SqlError(Exception):
    """A query the engine refused or failed to run; the message is written for the agent to read."""


class QueryLimitError(SqlError):
    """A query stopped for going past its limit (work on SQLite, time elsewhere); diagnosed as `query_timeout`."""


def time_limit_message(limit: float) -> str:
    return (f"the query ran longer than {limit:g} s and was stopped (query limit); add filters or join "
            "conditions so it reads fewer rows")


def step_limit_message(steps: int) -> str:
    return (f"the query did more than {steps:,} steps of SQLite work and was stopped (query limit); add filters "
            "or join conditions so it reads fewer rows")


@dataclass
class QueryResult:
    """Column names, the first rows (up to the cap the caller asked for) and how many rows there were."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    total_rows: int

    @property
    def truncated(self) -> bool:
        return self.total_rows > len(self.rows)


@dataclass(frozen=True)
class QueryNames:
    """What an engine's compiler says about a query it did not need to run: whether its parser accepted the
    text, whether every table and column it names resolved, and which tables it reads (lower-cased)."""

    parses: bool
    names_exist: bool
    tables: frozenset[str]


@dataclass
class ColumnInfo:
    name: str
    type: str
    primary_key: bool = False
    references: str | None = None  # "table.column"
    nullable: bool = True


@dataclass
class TableInfo:
    name: str
    columns: list[ColumnInfo] = field(default_factory=list)


_COMMENT = re.compile(r"^\s*(?:--[^\n]*(?:\n|$)|/\*.*?\*/)", re.DOTALL)
_FIRST_WORD = re.compile(r"[(\s]*(\S+)")


_PLAIN_READ = re.compile(r"\s*(?:select|with|values)\b", re.IGNORECASE)


def check_query(sql: object) -> str:
    """Return `sql` cleaned for execution (trailing semicolons dropped) or raise `SqlError` saying why not."""
    if type(sql) is str and len(sql) <= MAX_QUERY_CHARS and ";" not in sql and "\x00" not in sql \
            and sql.isascii() and _PLAIN_READ.match(sql):
        return sql.strip()  # the common case: one plain ASCII read, nothing to split or decode
    if not isinstance(sql, str):
        raise SqlError(f"the query must be a string of SQL, got {type(sql).__name__}")
    if len(sql) > MAX_QUERY_CHARS:
        raise SqlError(f"the query is {len(sql):,} characters long; the limit is {MAX_QUERY_CHARS:,}. "
                       "Write a shorter query (filter with WHERE instead of listing values).")
    try:
        if not sql.isascii():
            sql.encode("utf-8")
    except UnicodeEncodeError as error:
        raise SqlError(f"the query is not valid UTF-8 (bad character at position {error.start}); "
                       "remove the invalid characters and retry") from None
    if "\x00" in sql:
        raise SqlError("the query contains a NUL character; remove it and retry")
    text = sql.strip()
    while text.endswith(";"):
        text = text[:-1].rstrip()
    if not text:
        raise SqlError("the query is empty; write one SELECT statement")
    if _has_several_statements(text):
        raise SqlError("only one statement per call is allowed; send each SELECT in its own execute_sql call")
    head = text
    while head[:1] in "-/" or head[:1].isspace():  # leading comments (only these can hide the first word)
        stripped = _COMMENT.sub("", head, count=1)
        if stripped == head:
            break
        head = stripped
    word = _FIRST_WORD.match(head)
    first = word.group(1).lower() if word else ""
    if first not in ALLOWED_START:
        raise SqlError(f"{first.upper() or 'this'} statements are not allowed: the database is read-only and "
                       "only SELECT queries (optionally starting with WITH) may run. Use list_tables and "
                       "describe_table to inspect the schema.")
    return text


def split_statements(text: str) -> list[str]:
    """The statements of `text`, split at semicolons outside strings, identifiers and comments."""
    statements: list[str] = []
    rest = text
    while True:
        cut = _statement_end(rest)
        if cut is None:
            break
        statements.append(rest[:cut])
        rest = rest[cut + 1:]
    statements.append(rest)
    return [statement.strip() for statement in statements if statement.strip()]


def _has_several_statements(text: str) -> bool:
    """True when a semicolon outside strings, identifiers and comments separates two statements."""
    cut = _statement_end(text)
    return cut is not None and bool(text[cut + 1:].strip())


# One token the statement splitter must step over (a string, quoted identifier or comment, each possibly
# unterminated) or the semicolon it looks for; everything else is skipped by the regex engine itself.
_SKIPPED_OR_SEMICOLON = re.compile(r"""'[^']*'?|"[^"]*"?|`[^`]*`?|\[[^\]]*\]?|--[^\n]*|/\*(?:.*?\*/|.*\Z)|;""", re.DOTALL)


def _statement_end(text: str) -> int | None:
    """Index of the first semicolon outside strings, identifiers and comments, or None."""
    if ";" not in text:
        return None
    for token in _SKIPPED_OR_SEMICOLON.finditer(text):
        if token.group() == ";":
            return token.start()
    return None


class Engine:
    """A read-only connection: `execute`, `tables`, `describe`, `close`. Subclasses per backend."""

    dialect: str = ""
    timeout_s: float = DEFAULT_TIMEOUT_S

    def execute(self, sql: str, max_rows: int | None = None, timeout_s: float | None = None, *,
                count_rest: bool = True) -> QueryResult:
        """Run one read-only query; return at most `max_rows` rows plus the total count. Raises SqlError.

        With `count_rest=False` the rows past `max_rows` are not read: `total_rows` is then `max_rows + 1`
        when there were more (enough for `truncated`), so a huge result costs no more than its first rows.
        """
        raise NotImplementedError

    def reset_session(self) -> None:
        """Forget anything a previous episode left in the session (nothing to do where a session holds none)."""

    def tables(self) -> list[str]:
        raise NotImplementedError

    def describe(self, table: str) -> TableInfo:
        raise NotImplementedError

    def sample_values(self, table: str, column: str, count: int = 3) -> list[Any]:
        quoted_table, quoted_column = self.quote(table), self.quote(column)
        result = self.execute(f"SELECT DISTINCT {quoted_column} FROM {quoted_table} WHERE {quoted_column} IS NOT "
                              f"NULL LIMIT {count}", max_rows=count)
        return [row[0] for row in result.rows]

    def quote(self, identifier: str) -> str:
        return '"' + identifier.replace('"', '""') + '"'

    driver_errors: tuple[type[Exception], ...] = ()

    def inspect(self, sql: str) -> QueryNames | None:
        """The engine's own judgement of `sql` (see `QueryNames`), without reading any row; None where this
        engine cannot tell (a statement `check_query` refuses, an error it cannot classify, or a backend with
        no such hook): callers then fall back to a parser of their own."""
        return None

    def schema_names(self) -> dict[str, set[str]]:
        """Lower-cased table name -> lower-cased column names (for the 'names exist' process signal).

        Raises `SqlError` when the database cannot be read (locked, corrupt, gone).
        """
        try:
            return {table.lower(): {c.name.lower() for c in self.describe(table).columns}
                    for table in self.tables()}
        except self.driver_errors as error:
            raise SqlError(f"cannot read the database schema: {error}") from error

    def close(self) -> None:
        raise NotImplementedError


def _collect(cursor_rows: Iterable[tuple[Any, ...]], fetch_more: Any, max_rows: int | None,
             count_rest: bool = True) -> tuple[list[tuple[Any, ...]], int]:
    rows = list(cursor_rows)
    if max_rows is None:
        return rows, len(rows)
    total = len(rows)
    if not count_rest:
        return rows, total + (1 if total >= max_rows and fetch_more(1) else 0)
    while True:
        batch = fetch_more()
        if not batch:
            break
        total += len(batch)
    return rows, total


# --------------------------------------------------------------------------------------------------- SQLite
_SQLITE_READ_PRAGMAS = frozenset({"table_info", "table_xinfo", "index_list", "index_info", "foreign_key_list",
                                  "table_list"})
_SQLITE_DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})


def _sqlite_authorizer(action: int, arg1: str | None, arg2: str | None, database: str | None,
                       source: str | None) -> int:
    """Allow reads only; everything else (writes, ATTACH, VACUUM INTO, PRAGMA writes, extensions) is denied."""
    if action in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE):
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_FUNCTION:
        return sqlite3.SQLITE_DENY if (arg2 or "").lower() in _SQLITE_DENIED_FUNCTIONS else sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() in _SQLITE_READ_PRAGMAS:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


class SqliteEngine(Engine):
    """SQLite opened `mode=ro` through a URI, with the read-only authorizer and a progress handler that stops a
    query past `max_steps` virtual-machine instructions (or, as a backstop, `timeout_s` seconds).

    `last_steps` is what the last `execute` cost, in instructions (to `STEPS_PER_CHECK`): the same query on the
    same database always costs the same, whatever the machine's load. With `memory_map`, reads go through a
    memory map (no page copies: a large table's scan costs about half the time); only for files nothing but
    SQLite writes (the generated databases), since a file truncated under a map stops the process."""

    dialect = "sqlite"
    driver_errors = (sqlite3.Error,)

    def __init__(self, path: str | Path, timeout_s: float = DEFAULT_TIMEOUT_S, *,
                 max_steps: int = DEFAULT_MAX_STEPS, memory_map: bool = False) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(f"no SQLite database at {self.path}")
        self.timeout_s = timeout_s
        self.max_steps = int(max_steps)
        self.last_steps = 0
        uri = f"file:{self.path.as_posix()}?mode=ro"
        self._connection = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
        self._connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        self._connection.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, MAX_QUERY_CHARS * 4)
        self._connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, SQLITE_MAX_VALUE_BYTES)
        if memory_map:
            try:
                self._connection.execute(f"PRAGMA mmap_size = {min(self.path.stat().st_size * 2, 1 << 32)}").close()
            except sqlite3.Error:
                pass  # a build without memory maps reads through the page cache
        # The authorizer sees every table a statement reads while SQLite compiles it; what it saw is kept per
        # query text, since a statement served from sqlite3's statement cache is not compiled (nor authorized)
        # again. `inspect` answers from them without a parser of our own.
        self._compiled: list[str | None] = []  # what the authorizer saw while the current statement compiled
        self._compiled_queries: dict[str, QueryNames] = {}  # query text -> what compiling it showed
        self._last_checked = ("", "")  # (a query `execute` was given, its text as check_query returned it)
        self._connection.set_authorizer(_recording_authorizer(self._compiled))
        self._deadline = float("inf")
        self._checks = 0  # progress calls in the current statement
        self._check_limit = self.max_steps // STEPS_PER_CHECK
        self._stopped_by = ""  # "steps" or "time" once the handler stopped the statement
        self._connection.set_progress_handler(self._progress, STEPS_PER_CHECK)
        self._describe_cache: dict[str, TableInfo] = {}

    def _progress(self) -> int:
        checks = self._checks = self._checks + 1
        if checks > self._check_limit:
            self._stopped_by = "steps"
            return 1
        if checks % _CLOCK_EVERY == 0 and time.monotonic() > self._deadline:
            self._stopped_by = "time"
            return 1
        return 0

    def _arm(self, timeout_s: float, max_steps: int) -> None:
        self._checks = 0
        self._check_limit = max_steps // STEPS_PER_CHECK
        self._stopped_by = ""
        self._deadline = time.monotonic() + timeout_s

    def execute(self, sql: str, max_rows: int | None = None, timeout_s: float | None = None, *,
                count_rest: bool = True, max_steps: int | None = None) -> QueryResult:
        """As `Engine.execute`; `max_steps` (default: the engine's) bounds the query's work in VM instructions."""
        text = check_query(sql)
        self._last_checked = (sql, text)
        limit = self.timeout_s if timeout_s is None else timeout_s
        steps = self.max_steps if max_steps is None else int(max_steps)
        self._arm(limit, steps)
        try:
            try:
                return self._run(text, max_rows, count_rest)
            except sqlite3.OperationalError as error:
                if not str(error).startswith("Could not decode to UTF-8") or self._connection.text_factory is not str:
                    raise
                # Text that is not valid UTF-8: from now on decode with replacement characters (valid text reads
                # the same either way), and run the query again within the same deadline.
                self._connection.text_factory = _decode_with_replacement
                return self._run(text, max_rows, count_rest)
        except sqlite3.OperationalError as error:
            if str(error) == "interrupted" and self._stopped_by:
                raise QueryLimitError(step_limit_message(steps) if self._stopped_by == "steps"
                                      else time_limit_message(limit)) from None
            raise SqlError(_sqlite_message(error)) from None
        except (sqlite3.DatabaseError, sqlite3.ProgrammingError, sqlite3.Warning) as error:
            raise SqlError(_sqlite_message(error)) from None
        except OverflowError as error:
            raise SqlError(f"SQLite error: {error}") from None
        finally:
            self.last_steps = self._checks * STEPS_PER_CHECK
            self._deadline = float("inf")
            self._check_limit = self.max_steps // STEPS_PER_CHECK

    def _run(self, text: str, max_rows: int | None, count_rest: bool) -> QueryResult:
        compiled = self._compiled
        compiled.clear()
        cursor = self._connection.execute(text)
        if compiled:  # compiled now, not served from the statement cache: remember what it reads
            self._remember(text, compiled)
        description = cursor.description
        columns = [d[0] for d in description] if description else []
        if max_rows is None:
            rows = cursor.fetchall()
            total = len(rows)
        else:
            rows = cursor.fetchmany(max_rows)
            total = len(rows)
            if total >= max_rows:  # fewer rows than asked for: the result is already exhausted
                if not count_rest:
                    total += 1 if cursor.fetchmany(1) else 0
                else:
                    while batch := cursor.fetchmany(4096):
                        total += len(batch)
        cursor.close()
        return QueryResult(columns, rows, total)

    def _remember(self, text: str, compiled: list[str | None]) -> QueryNames:
        names = set(compiled)
        names.discard(None)
        judged = QueryNames(parses=True, names_exist=True,
                            tables=frozenset(map(str.lower, names)))  # type: ignore[arg-type]  # no None left
        if len(self._compiled_queries) >= _REMEMBERED_QUERIES:  # far more than sqlite3 caches (128 statements)
            self._compiled_queries.clear()
        self._compiled_queries[text] = judged
        return judged

    def inspect(self, sql: str) -> QueryNames | None:
        """SQLite's compiler on `sql`: the tables the authorizer saw when the query last compiled, else an
        `EXPLAIN` of it (compiled, never run). A query that compiles parses and names only what exists."""
        checked, text = self._last_checked  # most often the query `execute` just ran
        if sql != checked:
            try:
                text = check_query(sql)
            except SqlError:
                return None
        judged = self._compiled_queries.get(text)
        if judged is not None:
            return judged
        compiled = self._compiled
        compiled.clear()
        self._arm(self.timeout_s, self.max_steps)
        try:
            self._connection.execute("EXPLAIN " + text).close()
        except sqlite3.Error as error:
            return _classify_compile_error(str(error))
        finally:
            self._deadline = float("inf")
        return self._remember(text, compiled)

    def tables(self) -> list[str]:
        rows = self._connection.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name").fetchall()
        return [row[0] for row in rows]

    def describe(self, table: str) -> TableInfo:
        if table in self._describe_cache:
            return self._describe_cache[table]
        quoted = self.quote(table)
        info = self._connection.execute(f"PRAGMA table_info({quoted})").fetchall()
        if not info:
            raise SqlError(f"no table named {table!r}; available: {', '.join(self.tables())}")
        keys = {row[3]: f"{row[2]}.{row[4] or 'rowid'}" for row in
                self._connection.execute(f"PRAGMA foreign_key_list({quoted})").fetchall()}
        result = TableInfo(table, [ColumnInfo(name=row[1], type=row[2] or "", primary_key=bool(row[5]),
                                              references=keys.get(row[1]), nullable=not (row[3] or row[5])) for row in info])
        self._describe_cache[table] = result
        return result

    def close(self) -> None:
        self._connection.close()


_REMEMBERED_QUERIES = 4096
_SQLITE_SYNTAX_ERRORS = ("syntax error", "incomplete input", "unrecognized token")
_NO_SUCH_TABLE = re.compile(r"^no such table: (?:\w+\.)?(.+)$")


def _recording_authorizer(compiled: list[str | None]) -> Any:
    """`_sqlite_authorizer`, noting in `compiled` each table read (and None for every other action)."""
    record = compiled.append
    read, select, allowed, judge = sqlite3.SQLITE_READ, sqlite3.SQLITE_SELECT, sqlite3.SQLITE_OK, _sqlite_authorizer
    function, denied, refused = sqlite3.SQLITE_FUNCTION, _SQLITE_DENIED_FUNCTIONS, sqlite3.SQLITE_DENY

    def authorize(action: int, arg1: str | None, arg2: str | None, database: str | None,
                  source: str | None) -> int:
        if action == read:  # the most frequent call by far: one per column read
            record(arg1)
            return allowed
        record(None)
        if action == select:
            return allowed
        if action == function:  # the next most frequent (COUNT, ROUND, ...): judged here, without a call
            return refused if (arg2 or "").lower() in denied else allowed
        return judge(action, arg1, arg2, database, source)

    return authorize


def _decode_with_replacement(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _classify_compile_error(message: str) -> QueryNames | None:
    """What a compile error says: the text does not parse, or names a table that does not exist; None when
    the message is neither (an unknown column, say, where only a parser can tell whether a table was named)."""
    if any(marker in message for marker in _SQLITE_SYNTAX_ERRORS):
        return QueryNames(parses=False, names_exist=False, tables=frozenset())
    missing = _NO_SUCH_TABLE.match(message)
    if missing:
        return QueryNames(parses=True, names_exist=False, tables=frozenset({missing.group(1).lower()}))
    return None


def _sqlite_message(error: Exception) -> str:
    message = str(error)
    if "not authorized" in message or "readonly" in message or "read-only" in message:
        return (f"SQLite error: {message}. The database is read-only: only SELECT queries run here, and ATTACH, "
                "PRAGMA changes and extensions are blocked.")
    if "one statement at a time" in message:
        return "SQLite error: only one statement per call is allowed"
    return f"SQLite error: {message}"


# --------------------------------------------------------------------------------------------------- DuckDB
# DuckDB refuses a second connection to a file with a different configuration: open others with this one.
DUCKDB_CONFIG = {"enable_external_access": False, "autoinstall_known_extensions": False,
                 "autoload_known_extensions": False, "lock_configuration": True, "threads": 2}
_duckdb_lock = threading.Lock()
_duckdb_databases: dict[str, Any] = {}


def _duckdb_database(path: Path) -> Any:
    """One read-only DuckDB instance per file, shared by every episode (cursors are cheap, instances are not)."""
    import duckdb

    key = str(path.resolve())
    with _duckdb_lock:
        database = _duckdb_databases.get(key)
        if database is None:
            database = duckdb.connect(key, read_only=True, config=dict(DUCKDB_CONFIG))
            _duckdb_databases[key] = database
        return database


class _Watchdog:
    """One daemon thread that interrupts DuckDB queries past their deadline (cheaper than a Timer per query)."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._deadlines: dict[int, tuple[float, Any]] = {}
        self._next = 0
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, interrupt: Any) -> int:
        with self._lock:
            self._next += 1
            self._deadlines[self._next] = (time.monotonic() + seconds, interrupt)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="agentgym-sql-watchdog", daemon=True)
                self._thread.start()
            self._lock.notify()
            return self._next

    def disarm(self, ticket: int) -> None:
        with self._lock:
            self._deadlines.pop(ticket, None)

    def _run(self) -> None:
        while True:
            with self._lock:
                now = time.monotonic()
                for ticket, (deadline, interrupt) in list(self._deadlines.items()):
                    if deadline <= now:
                        del self._deadlines[ticket]
                        interrupt()
                soonest = min((d for d, _ in self._deadlines.values()), default=now + 60)
                self._lock.wait(timeout=max(0.001, soonest - now))


_watchdog = _Watchdog()


class DuckdbEngine(Engine):
    """DuckDB opened read-only with external access off (no files, no extensions); timeout by `interrupt`."""

    dialect = "duckdb"

    def __init__(self, path: str | Path, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(f"no DuckDB database at {self.path}")
        import duckdb

        self.driver_errors = (duckdb.Error,)
        self.timeout_s = timeout_s
        self._cursor = _duckdb_database(self.path).cursor()
        self._describe_cache: dict[str, TableInfo] = {}
        self._bound: dict[str, None] = {}  # texts of queries that ran: DuckDB's binder resolved every name

    def execute(self, sql: str, max_rows: int | None = None, timeout_s: float | None = None, *,
                count_rest: bool = True) -> QueryResult:
        import duckdb

        text = check_query(sql)
        limit = self.timeout_s if timeout_s is None else timeout_s
        ticket = _watchdog.arm(limit, self._cursor.interrupt)
        try:
            self._cursor.execute(text)
            columns = [d[0] for d in self._cursor.description or ()]
            first = self._cursor.fetchall() if max_rows is None else self._cursor.fetchmany(max_rows)
            rows, total = _collect(first, lambda size=4096: self._cursor.fetchmany(size), max_rows, count_rest)
            if len(self._bound) >= _REMEMBERED_QUERIES:
                self._bound.clear()
            self._bound[text] = None
        except duckdb.InterruptException:
            raise QueryLimitError(time_limit_message(limit)) from None
        except duckdb.Error as error:
            message = str(error).split("\n\nLINE")[0].strip()
            if "read-only" in message.lower() or "external access" in message.lower():
                message += ". The database is read-only: only SELECT queries run here."
            raise SqlError(f"DuckDB error: {message}") from None
        finally:
            _watchdog.disarm(ticket)
        return QueryResult(columns, rows, total)

    def inspect(self, sql: str) -> QueryNames | None:
        """For a query that ran here (so DuckDB bound every name), the tables DuckDB's parser finds in it."""
        import duckdb

        try:
            text = check_query(sql)
        except SqlError:
            return None
        if text not in self._bound:
            return None
        try:
            tables = self._cursor.get_table_names(text)
        except duckdb.Error:
            return None
        return QueryNames(parses=True, names_exist=True, tables=frozenset(name.lower() for name in tables))

    def tables(self) -> list[str]:
        return [row[0] for row in self._cursor.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY 1").fetchall()]

    def describe(self, table: str) -> TableInfo:
        if table in self._describe_cache:
            return self._describe_cache[table]
        rows = self._cursor.execute(
            "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
            "WHERE table_schema = 'main' AND lower(table_name) = lower(?) ORDER BY ordinal_position",
            [table]).fetchall()
        if not rows:
            raise SqlError(f"no table named {table!r}; available: {', '.join(self.tables())}")
        keys = set()
        for (columns,) in self._cursor.execute(
                "SELECT constraint_column_names FROM duckdb_constraints() WHERE lower(table_name) = lower(?) "
                "AND constraint_type = 'PRIMARY KEY'", [table]).fetchall():
            keys.update(columns)
        result = TableInfo(table, [ColumnInfo(name, kind, primary_key=name in keys, nullable=nullable == "YES")
                                   for name, kind, nullable in rows])
        self._describe_cache[table] = result
        return result

    def close(self) -> None:
        self._cursor.close()


# ----------------------------------------------------------------------------------------------- PostgreSQL
# Functions and catalog views a read-only role may still use to reach beyond its own query: change session
# settings (set_config), sleep or hold locks, signal or watch other sessions (their query text included),
# read server files. Matched on the lower-cased text with double quotes removed, so quoting does not hide a name.
_POSTGRES_DENIED = re.compile(
    r"\b(set_config|pg_sleep\w*|pg_(?:try_)?advisory\w*|pg_terminate_backend|pg_cancel_backend|pg_notify"
    r"|pg_reload_conf|pg_rotate_logfile|pg_read_\w+|pg_ls_\w+|pg_stat\w*|pg_locks|pg_settings|pg_prepared_\w+"
    r"|pg_blocking_pids|pg_safe_snapshot_blocking_pids|pg_backend_memory_contexts|pg_file_settings"
    r"|pg_hba_file_rules|pg_shmem_allocations|pg_cursors|dblink\w*|lo_import|lo_export)\b")
_UNICODE_ESCAPE = re.compile(r"\bu&['\"]")
CANCEL_GRACE_S = 0.5  # the client cancels a statement this long after the server's own timeout should have


def check_postgres_query(text: str) -> None:
    """Raise `SqlError` when a query calls something that reaches beyond reading this database."""
    folded = text.lower()
    if _UNICODE_ESCAPE.search(folded):
        raise SqlError("Unicode-escaped names and strings (U&'...') are not allowed here; write the name plainly")
    found = _POSTGRES_DENIED.search(folded.replace('"', ""))
    if found:
        raise SqlError(f"{found.group(1)} is not available: queries here may only read the tables of this "
                       "database (no session settings, sleeps, locks, other sessions' activity or server files)")


class PostgresEngine(Engine):
    """A session as the read-only role, `search_path` set to one database's schema.

    Every query runs in its own read-only transaction that is rolled back afterwards, so nothing a query does
    to its session (a `set_config(..., false)` included) outlives it; `reset_session` (`DISCARD ALL`) clears the
    rest between episodes. Timeouts: the server's `statement_timeout`, backed by a client-side cancel.
    """

    dialect = "postgres"

    def __init__(self, dsn: str, schema: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        import psycopg

        self.driver_errors = (psycopg.Error,)
        self.schema = schema
        self.timeout_s = timeout_s
        options = (f"-c search_path={schema} -c default_transaction_read_only=on "
                   f"-c statement_timeout={int(timeout_s * 1000)}")
        # No automatic prepared statements: DISCARD ALL (each reset) drops them behind psycopg's back.
        self._connection = psycopg.connect(dsn, autocommit=True, options=options, prepare_threshold=None)
        self._describe_cache: dict[str, TableInfo] = {}

    def reset_session(self) -> None:
        self._connection.execute("DISCARD ALL")

    def execute(self, sql: str, max_rows: int | None = None, timeout_s: float | None = None, *,
                count_rest: bool = True) -> QueryResult:
        import psycopg

        text = check_query(sql)
        check_postgres_query(text)
        limit = self.timeout_s if timeout_s is None else timeout_s
        connection = self._connection
        ticket = _watchdog.arm(limit + CANCEL_GRACE_S, connection.cancel)
        try:
            connection.execute("BEGIN READ ONLY")
            if limit != self.timeout_s:
                connection.execute(f"SET LOCAL statement_timeout = {int(limit * 1000)}")
            # A server-side cursor when the rest is not counted, so a huge result is never fetched whole.
            streamed = not count_rest and max_rows is not None
            with connection.cursor(name="agentgym_query") if streamed else connection.cursor() as cursor:
                cursor.execute(text)  # no parameters: psycopg sends the text as is
                columns = [d.name for d in cursor.description or ()]
                first = cursor.fetchall() if max_rows is None else cursor.fetchmany(max_rows)
                rows, total = _collect(first, lambda size=4096: cursor.fetchmany(size), max_rows, count_rest)
        except psycopg.errors.QueryCanceled:
            raise QueryLimitError(time_limit_message(limit)) from None
        except psycopg.Error as error:
            diagnostic = getattr(error, "diag", None)
            message = (diagnostic.message_primary if diagnostic and diagnostic.message_primary else str(error))
            if "read-only" in message or "permission denied" in message:
                message += ". The database is read-only: only SELECT queries run here."
            raise SqlError(f"PostgreSQL error: {message}") from None
        finally:
            _watchdog.disarm(ticket)
            self._roll_back()
        return QueryResult(columns, rows, total)

    def _roll_back(self) -> None:
        """End the query's transaction, undoing whatever the query set in its session."""
        import psycopg

        try:
            self._connection.execute("ROLLBACK")
        except psycopg.OperationalError:
            # The connection is gone (server restart, network): the next query reports it to the agent, and
            # a session that no longer exists holds no settings to undo.
            return

    def tables(self) -> list[str]:
        return [row[0] for row in self._connection.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s ORDER BY 1",
            (self.schema,)).fetchall()]

    def describe(self, table: str) -> TableInfo:
        if table in self._describe_cache:
            return self._describe_cache[table]
        rows = self._connection.execute(
            "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
            "WHERE table_schema = %s AND lower(table_name) = lower(%s) ORDER BY ordinal_position",
            (self.schema, table)).fetchall()
        if not rows:
            raise SqlError(f"no table named {table!r}; available: {', '.join(self.tables())}")
        result = TableInfo(table, [ColumnInfo(name, kind, nullable=nullable == "YES") for name, kind, nullable in rows])
        self._describe_cache[table] = result
        return result

    def close(self) -> None:
        self._connection.close()
