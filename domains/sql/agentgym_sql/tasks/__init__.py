"""Task families and `generate`, which turns them into validated `Task`s over the generated databases.

Each family module (one per file) exposes `FAMILY` and `generate(context, count) -> list[Draft]`. `generate`
runs every draft's gold query on SQLite, drops drafts that fail, return nothing or too many rows, cost more
than a tenth of the env's query limit (SQLite steps; reported on stderr), or that one of their near-miss
queries (`Draft.decoys`, `Draft.traps`) would answer, stores the normalised result as the answer, and
transpiles the gold to DuckDB and PostgreSQL with sqlglot (or uses the family's hand-written override where
transpiling is not faithful). A family runs on the databases of its
`KIND` (the generic families on the narrow databases, the hard tier's on the ERP ones, at most `PER_DATABASE`
tasks each), and a task's difficulty is measured from its gold (`difficulty.points`). Splits follow the
databases: train tasks use retail, hospital, flights, hr, erp_north and erp_east; test tasks use school,
finance, erp_south and erp_west, so no database is in both.
"""

from __future__ import annotations

import hashlib
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import sqlglot

from agentgym import Task, VerifierSpec, load_tasks, save_tasks

from ..data import DATABASES, cache_dir, ensure_sqlite
from ..data.engines import DEFAULT_MAX_STEPS, GOLD_STEP_SHARE
from ..verify import ANSWER_FORMAT, answer_matches, compare, normalize_rows
from . import (
    aggregates,
    customer_dedup,
    dates,
    filters,
    group_having,
    joins,
    nested,
    nulls,
    order_gaps,
    org_chart,
    receivables,
    revenue,
    rollups,
    set_ops,
    topk_ties,
    windows,
)
from .base import Context, Draft, answer_contract
from .difficulty import level, points, rounded_places

FAMILY_MODULES = (filters, aggregates, group_having, joins, nested, windows, dates, topk_ties, nulls, set_ops,
                  revenue, rollups, org_chart, receivables, customer_dedup, order_gaps)
FAMILIES = tuple(module.FAMILY for module in FAMILY_MODULES)
DIALECTS = ("sqlite", "duckdb", "postgres")
MAX_ANSWER_ROWS = 200
MAX_GOLD_STEPS = DEFAULT_MAX_STEPS // GOLD_STEP_SHARE  # a gold costs at most a tenth of an agent's query limit
TASKS_VERSION = 13  # bump when families change so cached task files are regenerated

SQL_INSTRUCTION = ("Explore the database with the tools, then call submit(sql) with one SQL query whose result "
                   "answers the question. Only the result's values are compared: column names do not matter, and "
                   "columns may come in any order unless the question fixes it.")
ANSWER_INSTRUCTION = ("Explore the database with the tools, find the answer, then call submit_answer(value) with "
                      "the value itself.")


def transpile(sql: str, source: str, target: str) -> str:
    """`sql` rewritten from dialect `source` to `target` with sqlglot (unchanged when they are the same)."""
    if source == target:
        return sql
    return sqlglot.transpile(sql, read=source, write=target, unsupported_level=sqlglot.ErrorLevel.IGNORE)[0]


def prompt_for(database: str, question: str, evidence: str | None, answer_mode: bool, contract: str = "") -> str:
    lines = [f"Database: {database}", f"Question: {question}" + (f" {contract}" if contract else "")]
    if evidence:
        lines.append(f"Evidence: {evidence}")
    lines.append(ANSWER_INSTRUCTION if answer_mode else SQL_INSTRUCTION)
    return "\n".join(lines)


def _task(draft: Draft, database: str, split: str, number: int, rows: list[list[Any]], db_seed: int) -> Task:
    gold = {dialect: draft.overrides.get(dialect) or transpile(draft.gold, "sqlite", dialect) for dialect in DIALECTS}
    if draft.answer_mode:
        solution = [{"name": "execute_sql", "arguments": {"sql": draft.gold}},
                    {"name": "submit_answer", "arguments": {"value": [c for row in rows for c in row]
                                                            if len(rows) * len(rows[0]) > 1 else rows[0][0]}}]
    else:
        solution = [{"name": "submit", "arguments": {"sql": draft.gold}}]
    score = points(draft.gold, draft.traps)
    decimals = rounded_places(draft.gold) if draft.answer_mode else None
    return Task(
        id=f"sql-{database}-{draft.family}-{number:04d}",
        domain="sql",
        family=draft.family,
        split=split,
        prompt=prompt_for(database, draft.question, draft.evidence, draft.answer_mode, answer_contract(draft)),
        answer=rows,
        solution=solution,
        verifier=VerifierSpec(name="sql_execution", params={
            "match": draft.match, "mode": "answer" if draft.answer_mode else "sql",
            **({"column_order": "fixed"} if draft.column_order == "fixed" else {}),
            **({"decimals": decimals} if decimals is not None else {})}),
        metadata={"database": database, "db_seed": db_seed, "dialect": "sqlite", "gold_sql": gold,
                  "question": draft.question, "evidence": draft.evidence, "answer_format": ANSWER_FORMAT,
                  "difficulty_points": score, "traps": len(draft.traps), "generator_level": draft.difficulty,
                  **({"decoys": [*draft.decoys, *draft.traps]} if draft.decoys or draft.traps else {})},
        difficulty=level(score),
    )


def generate(seed: int = 0, *, split: str | None = None, families: Sequence[str] | str | None = None,
             databases: Sequence[str] | str | None = None, per_family: int | str = 40,
             db_seed: int | str = 0) -> list[Task]:
    """Generate the built-in task set deterministically from `seed`.

    Args:
        seed: Seed of the question generator (parameters, phrasings).
        split: Keep only databases of this split ("train" or "test").
        families: Keep only these families (names or a comma-separated string).
        databases: Keep only these databases.
        per_family: Tasks each family tries to make on each database (the default gives about 2,300 tasks).
        db_seed: Seed of the generated databases.
    Returns:
        Tasks in a fixed order; ids are `sql-<database>-<family>-<n>`.
    """
    wanted_families = _names(families, FAMILIES, "family")
    wanted_databases = _names(databases, tuple(DATABASES), "database")
    per_family, db_seed = int(per_family), int(db_seed)
    tasks: list[Task] = []
    too_costly: list[str] = []
    for name in wanted_databases:
        spec = DATABASES[name]
        if split is not None and spec.split != split:
            continue
        path = ensure_sqlite(spec, db_seed)
        for module in FAMILY_MODULES:
            if module.FAMILY not in wanted_families or getattr(module, "KIND", "generic") != spec.kind:
                continue
            wanted = min(per_family, getattr(module, "PER_DATABASE", per_family))
            context = Context(spec, path, random.Random(f"{seed}:{name}:{module.FAMILY}"))
            seen: set[str] = set()
            number = 0
            try:
                # Families over-produce; drafts whose result is empty or too long are dropped below.
                for draft in module.generate(context, wanted * 3):
                    if number >= wanted:
                        break
                    if draft.gold in seen:
                        continue
                    seen.add(draft.gold)
                    try:
                        result, steps = context.run_counted(draft.gold)
                        rows = normalize_rows(result)
                    except Exception as error:  # a family bug: fail loudly rather than ship a broken task
                        raise RuntimeError(f"{module.FAMILY} on {name} wrote a failing gold query: {draft.gold}\n"
                                           f"{error}") from error
                    if not rows or len(rows) > MAX_ANSWER_ROWS or all(c is None for r in rows for c in r):
                        continue
                    if rows == [[0]]:  # a count of nothing: every query that matches nothing would answer it
                        continue
                    if steps > MAX_GOLD_STEPS:  # the gold must sit far below the env's query limit
                        too_costly.append(f"{name}/{module.FAMILY}: {steps:,} steps: {draft.gold[:200]}")
                        continue
                    if _answered_by_decoy(context, draft, rows):
                        continue
                    tasks.append(_task(draft, name, spec.split, number, rows, db_seed))
                    number += 1
            finally:
                context.close()
    if too_costly:
        print(f"agentgym: left out {len(too_costly)} SQL-v0 drafts whose gold costs more than a tenth of the query "
              f"limit ({MAX_GOLD_STEPS:,} of {DEFAULT_MAX_STEPS:,} SQLite steps):", *too_costly[:10], sep="\n  ",
              file=sys.stderr)
    return tasks


def _answered_by_decoy(context: Context, draft: Draft, rows: list[list[Any]]) -> bool:
    """Whether a near-miss query of `draft` returns its gold result (under the task's match), so that on this
    data the task could be solved without doing what it asks."""
    for decoy in (*draft.decoys, *draft.traps):
        result = normalize_rows(context.run(decoy))
        if draft.answer_mode:  # the tolerance a typed answer gets
            value = [cell for row in result for cell in row] if len(result) * len(result[0] if result else ()) > 1 \
                else (result[0][0] if result else None)
            if answer_matches(value, rows, ordered=draft.match == "ordered", distinct=draft.match == "set",
                              decimals=rounded_places(draft.gold)):
                return True
        elif compare(result, rows)[draft.match]:
            return True
    return False


def _names(value: Sequence[str] | str | None, known: tuple[str, ...], kind: str) -> tuple[str, ...]:
    if value is None:
        return known
    names = tuple(part.strip() for part in value.split(",")) if isinstance(value, str) else tuple(value)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown {kind} {', '.join(unknown)}; known: {', '.join(known)}")
    return names


def default_tasks(seed: int = 0, db_seed: int = 0) -> Path:
    """The built-in task file for `seed`, generated once and cached next to the databases."""
    digest = hashlib.sha1(",".join(FAMILIES).encode()).hexdigest()[:8]
    path = cache_dir() / f"tasks-s{seed}-d{db_seed}-v{TASKS_VERSION}-{digest}.jsonl"
    if not path.exists():
        from agentgym.cache import building

        for spec in DATABASES.values():
            ensure_sqlite(spec, db_seed)  # each database announces its own build first
        with building("the SQL-v0 task set (every gold query run on its database)", path,
                      estimate="about 1-3 min", total=len(DATABASES), unit="databases") as progress:
            tasks: list[Task] = []
            for name in DATABASES:  # one database at a time (the same tasks, in the same order, as one call)
                tasks.extend(generate(seed, db_seed=db_seed, databases=[name]))
                progress.advance()
            save_tasks(tasks, path)
    return path


__all__ = ["DIALECTS", "FAMILIES", "default_tasks", "generate", "load_tasks", "transpile"]
