"""`SqlEnv` (registered as SQL-v0): text-to-SQL episodes over SQLite, DuckDB or PostgreSQL.

Engines are shared: one read-only engine per (database, backend, connection settings, thread) serves every
episode of every env in that thread, because a read-only connection carries no state from one query to the
next (on PostgreSQL every query is rolled back, and the session is discarded at each reset). That keeps
`reset` to a dictionary lookup and a thousand concurrent episodes to a handful of connections. On PostgreSQL
the grader reads through a second session that no agent query ever runs on. An env releases its engines on
`close`; the last env to release one closes it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot import exp

from agentgym import Task, TaskSet, ToolEnv
from agentgym.actions import ToolCall
from agentgym.diagnosis import TurnRecord
from agentgym.rewards import Score
from agentgym.tools import ToolOutcome

from . import verify as _verify  # noqa: F401  (registers the sql_execution verifier)
from .data import DATABASES, ensure_duckdb, ensure_sqlite, load_postgres
from .data.build import READER_ROLE
from .data.engines import (
    DEFAULT_MAX_STEPS,
    DEFAULT_TIMEOUT_S,
    MAX_QUERY_CHARS,
    DuckdbEngine,
    Engine,
    PostgresEngine,
    SqlError,
    SqliteEngine,
)
from .diagnosis import sql_labels
from .tasks import default_tasks, transpile
from .tools import TOOLS, SqlEpisode, SqlGrading

BACKENDS = ("sqlite", "duckdb", "postgres")
# A hard task's careful solution reads up to 8 tables (describe each), looks once at each of up to 4 traps of
# the data, then runs and submits: at most 18 turns on the test split (docs/sql.md, "Difficulty"), so 30 leaves
# room to retry.
DEFAULT_MAX_TURNS = 30
POSTGRES_DSN_VARIABLE = "AGENTGYM_SQL_POSTGRES_DSN"

SYSTEM_PROMPT = (
    "You answer questions about a {engine} database by writing SQL. Use list_tables and describe_table to learn "
    "the schema and execute_sql to try queries (read-only: SELECT or WITH only, one statement per call). Finish "
    "with submit(sql) when asked for a query, or submit_answer(value) when asked for a value. Every query, the "
    "submitted one included, is stopped past a fixed amount of work (on SQLite 40 million virtual-machine steps; "
    "elsewhere 30 seconds): on large tables join to an aggregate rather than run a correlated subquery per row."
)
ENGINE_NAMES = {"sqlite": "SQLite", "duckdb": "DuckDB", "postgres": "PostgreSQL"}

_engines_lock = threading.Lock()
_engines: dict[tuple[str, str, str, int], tuple[Engine, int]] = {}  # (backend, source, role, thread) -> (engine, holders)
_loaded_postgres: set[tuple[str, str, int]] = set()


def _reader_dsn(admin_dsn: str, password: str = READER_ROLE) -> str:
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    parts = conninfo_to_dict(admin_dsn)
    parts.update(user=READER_ROLE, password=password)
    return make_conninfo(**{k: str(v) for k, v in parts.items() if v is not None})


@functools.lru_cache(maxsize=4096)
def _parse(sql: str, dialect: str) -> exp.Expression:
    """sqlglot's tree of `sql` (cached: agents often run a query, then submit the same text). Do not mutate."""
    return sqlglot.parse_one(sql, read=dialect)


class SqlEnv(ToolEnv):
    """Text-to-SQL over generated (or imported) databases, rewarded by execution accuracy.

    Args:
        tasks: A task file or list; default: the built-in tasks for `seed` (generated once, then cached).
        backend: "sqlite", "duckdb" or "postgres". Gold queries are transpiled with sqlglot as needed.
        postgres_dsn: Admin connection string of a PostgreSQL server (or `$AGENTGYM_SQL_POSTGRES_DSN`); the
            env loads the databases there and reads them as the read-only role `agentgym_reader`.
        seed: Seed of the built-in task set. db_seed: seed of the generated databases.
        max_steps: On SQLite, the most work a query may do, in virtual-machine instructions (the same
            outcome on any machine under any load; the slowest built-in gold is under a tenth of the default).
        timeout_s: Longest a query may run in seconds: the limit on DuckDB and PostgreSQL, a backstop on
            SQLite (far above any query within `max_steps`).
        **kwargs: `ToolEnv` options (split, families, difficulty, max_turns (default 30 here), reward_weights, ...).
    """

    def __init__(self, tasks: TaskSet | Sequence[Task] | str | Path | None = None, *, backend: str = "sqlite",
                 postgres_dsn: str | None = None, seed: int = 0, db_seed: int = 0,
                 timeout_s: float = DEFAULT_TIMEOUT_S, max_steps: int = DEFAULT_MAX_STEPS,
                 **kwargs: Any) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        self.backend = backend
        self.db_seed = db_seed
        self.timeout_s = timeout_s
        self.max_steps = int(max_steps)
        self.postgres_dsn = postgres_dsn or os.environ.get(POSTGRES_DSN_VARIABLE)
        if backend == "postgres" and not self.postgres_dsn:
            raise ValueError(f"backend='postgres' needs postgres_dsn=... (an admin connection string) or "
                             f"${POSTGRES_DSN_VARIABLE}")
        kwargs.setdefault("system_prompt", SYSTEM_PROMPT.format(engine=ENGINE_NAMES[backend]))
        kwargs.setdefault("max_turns", DEFAULT_MAX_TURNS)
        task_set = TaskSet.coerce(default_tasks(seed, db_seed) if tasks is None else tasks)
        if backend != "sqlite":
            task_set = _backend_task_set(task_set, backend)
        super().__init__(task_set, TOOLS, **kwargs)
        self._held: dict[tuple[str, str], tuple[tuple[str, str, str, int], Engine]] = {}
        self._schemas: dict[str, dict[str, set[str]]] = {}
        self._grading: SqlGrading | None = None  # the episode's grader side, never handed to a tool

    # ------------------------------------------------------------------ episode state
    def begin_episode(self, task: Task) -> SqlEpisode:
        source, database = self._source(task)
        engine = self._engine(source, task, "agent")
        engine.reset_session()
        # PostgreSQL sessions hold settings: the grader gets its own, which no agent query ever touches.
        grader = self._engine(source, task, "grader") if self.backend == "postgres" else engine
        gold = task.metadata.get("gold_sql", {})
        dialect = task.metadata.get("dialect", "sqlite")
        gold_sql = gold.get(self.backend) or transpile(gold[dialect], dialect, self.backend)
        spec = DATABASES.get(database) if "database_path" not in task.metadata else None
        episode = SqlEpisode(engine=engine, source=source, database=database, spec=spec,
                             mode=str(task.verifier.params.get("mode", "sql")))
        # The grader's side stays with the env: the tools and hints get `episode`, which holds no task or gold.
        self._grading = SqlGrading(episode=episode, task=task, gold_sql=gold_sql, grader=grader)
        return episode

    def verify(self, task: Task, submission: Any, state: Any) -> Score:
        """The task's named verifier, given the episode's grading side (`SqlGrading`: the episode, task and gold)."""
        grading = self._grading if self._grading is not None and state is self._grading.episode else state
        return super().verify(task, submission, grading)

    def end_episode(self, state: Any) -> None:
        """Nothing per episode: engines are read-only and shared, released on `close`."""

    def close(self) -> None:
        super().close()
        held, self._held = self._held, {}
        for key, _engine in held.values():
            with _engines_lock:
                engine, holders = _engines[key]
                if holders > 1:
                    _engines[key] = (engine, holders - 1)
                    continue
                del _engines[key]
            engine.close()

    def _source(self, task: Task) -> tuple[str, str]:
        """(a key naming the database and every setting of the connection to it, the database's display name).

        The key holds the file or server (a digest of the DSN), the seed and the timeout, so two envs share an
        engine (and cached gold results) only when their connections would be identical.
        """
        metadata = task.metadata
        settings = f"timeout={self.timeout_s!r}:steps={self.max_steps}"
        if "database_path" in metadata:
            if self.backend != "sqlite":
                raise ValueError(f"task {task.id} reads the SQLite file {metadata['database_path']}; imported "
                                 "tasks run on backend='sqlite'")
            return f"sqlite:{metadata['database_path']}:{settings}", str(metadata.get("db_id", "database"))
        name = metadata["database"]
        if self.backend == "postgres":
            assert self.postgres_dsn is not None
            settings += ":server=" + hashlib.sha256(self.postgres_dsn.encode()).hexdigest()[:16]
        return f"{self.backend}:{name}:{metadata.get('db_seed', self.db_seed)}:{settings}", name

    def _engine(self, source: str, task: Task, role: str) -> Engine:
        held = self._held.get((source, role))
        if held is not None:
            return held[1]
        key = (self.backend, source, role, threading.get_ident())
        with _engines_lock:
            if key in _engines:
                engine, holders = _engines[key]
                _engines[key] = (engine, holders + 1)
                self._held[(source, role)] = (key, engine)
                return engine
        engine = self._open(task)
        with _engines_lock:
            if key in _engines:  # another env in this thread won the race: use its engine
                existing, holders = _engines[key]
                _engines[key] = (existing, holders + 1)
                engine.close()
                engine = existing
            else:
                _engines[key] = (engine, 1)
        self._held[(source, role)] = (key, engine)
        return engine

    def _open(self, task: Task) -> Engine:
        metadata = task.metadata
        if "database_path" in metadata:
            return SqliteEngine(metadata["database_path"], self.timeout_s, max_steps=self.max_steps)
        spec = DATABASES[metadata["database"]]
        db_seed = int(metadata.get("db_seed", self.db_seed))
        if self.backend == "sqlite":
            return SqliteEngine(ensure_sqlite(spec, db_seed), self.timeout_s, max_steps=self.max_steps,
                                memory_map=True)
        if self.backend == "duckdb":
            return DuckdbEngine(ensure_duckdb(spec, db_seed), self.timeout_s)
        assert self.postgres_dsn is not None
        schema = spec.name if db_seed == 0 else f"{spec.name}_s{db_seed}"
        loaded = (self.postgres_dsn, schema, db_seed)
        if loaded not in _loaded_postgres:
            load_postgres(spec, self.postgres_dsn, db_seed, schema=schema)
            _loaded_postgres.add(loaded)
        return PostgresEngine(_reader_dsn(self.postgres_dsn), schema, self.timeout_s)

    def diagnose_extra(self, turns: Sequence[TurnRecord], score: Score) -> list[str]:
        """SQL-v0's diagnosis labels (`agentgym_sql.diagnosis`, docs/diagnosis.md)."""
        assert self.task is not None
        return sql_labels(self.task, self._grading, turns, score)

    def feedback_hints(self, call: ToolCall, outcome: ToolOutcome, view: Any) -> list[Any]:
        """SQL-v0's hints (`agentgym_sql.feedback`, docs/feedback.md): read from the schema, never the gold."""
        from .feedback import hints

        return hints(call, outcome, view)

    # ------------------------------------------------------------------ per-turn process signals
    def process_signals(self, call: ToolCall, outcome: ToolOutcome, state: Any) -> dict[str, float]:
        """For execute_sql and submit: parses (the query is valid SQL of this engine), names_exist (it names only
        real tables and columns) and, for execute_sql, executes.

        The engine answers where it can (`Engine.inspect`: SQLite's compiler and authorizer, DuckDB's binder
        and parser), so a step costs no parser of ours; elsewhere, and for errors the engine's message does not
        settle, sqlglot reads the query. Signals cannot be farmed: a query already seen in the episode (same
        text, ignoring case and spacing) earns none, nor does a query that reads no table ("SELECT 1"
        padding). How close a result is to the gold is not a per-call signal (repeating a near-miss would raise
        it); the verifier reports the submitted result's overlap once, as `verifier/overlap`.
        """
        if call.name not in ("execute_sql", "submit") or not isinstance(call.arguments, dict):
            return {}
        sql = call.arguments.get("sql")
        if not isinstance(sql, str) or not isinstance(state, SqlEpisode):
            return {}
        if len(sql) > MAX_QUERY_CHARS:  # refused by the engine anyway; parsing megabytes would stall the step
            sql = ""
        seen = f"{call.name}:{' '.join(sql.lower().split())}"
        if seen in state.seen_queries:
            return {}
        state.seen_queries.add(seen)
        names = state.engine.inspect(sql) if sql else None
        if names is None:
            signals = self._parsed_signals(sql, state)
            if signals is None:
                return {}
        elif names.parses and not names.tables:
            return {}
        else:
            signals = {"parses": float(names.parses), "names_exist": float(names.names_exist)}
        if call.name == "execute_sql":
            signals["executes"] = float(outcome.ok)
        return signals

    def _parsed_signals(self, sql: str, state: SqlEpisode) -> dict[str, float] | None:
        """parses and names_exist from sqlglot's tree of `sql` (None: it reads no table, so earns nothing)."""
        signals = {"parses": 0.0, "names_exist": 0.0}
        try:
            tree = _parse(sql, self.backend)
            if not any(table.name for table in tree.find_all(exp.Table)):
                return None
            signals["parses"] = 1.0
            signals["names_exist"] = float(self._names_exist(tree, state))
        except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, RecursionError, ValueError, SqlError):
            pass  # a query that does not parse, or a database that cannot be read, earns no signal
        return signals

    def _names_exist(self, tree: exp.Expression, state: SqlEpisode) -> bool:
        schema = self._schemas.get(state.source)
        if schema is None:
            schema = self._schemas[state.source] = state.engine.schema_names()
        ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
        tables = {table.name.lower() for table in tree.find_all(exp.Table) if table.name}
        if any(name not in schema and name not in ctes for name in tables):
            return False
        known = set().union(*(schema[name] for name in tables if name in schema)) if tables else set()
        aliases = {alias.alias.lower() for alias in tree.find_all(exp.Alias)}
        aliases |= {column.lower() for cte in tree.find_all(exp.CTE) for column in cte.named_selects}
        return all(column.name.lower() in known or column.name.lower() in aliases or column.name == "*"
                   for column in tree.find_all(exp.Column) if column.name)


_backend_task_sets: dict[tuple[int, str], tuple[TaskSet, TaskSet]] = {}


def _backend_task_set(task_set: TaskSet, backend: str) -> TaskSet:
    """The task set rewritten for `backend`, shared by every env made from the same task set."""
    key = (id(task_set), backend)
    cached = _backend_task_sets.get(key)
    if cached is None or cached[0] is not task_set:
        cached = _backend_task_sets[key] = (task_set, TaskSet(for_backend(task, backend) for task in task_set))
    return cached[1]


def for_backend(task: Task, backend: str) -> Task:
    """`task` with its solution's SQL in `backend`'s dialect (the stored gold, else a sqlglot transpilation)."""
    dialect = task.metadata.get("dialect", "sqlite")
    if dialect == backend:
        return task
    gold = task.metadata.get("gold_sql", {})
    solution = []
    for call in task.solution:
        arguments = call.get("arguments", {})
        if call.get("name") in ("submit", "execute_sql") and isinstance(arguments.get("sql"), str):
            sql = gold.get(backend) if arguments["sql"] == gold.get(dialect) else None
            arguments = {**arguments, "sql": sql or transpile(arguments["sql"], dialect, backend)}
        solution.append({**call, "arguments": arguments})
    return task.model_copy(update={"solution": solution})


def make_env(**kwargs: Any) -> SqlEnv:
    """Factory for `gym.make("SQL-v0", ...)`; see `SqlEnv` for the arguments."""
    return SqlEnv(**kwargs)

