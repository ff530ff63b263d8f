"""What every task family shares: the `Draft` a family returns, and `Context`, its view of one database.

A family never hard-codes a schema. It asks the context for tables with columns of some role (label,
category, measure, date) and for values that occur in the data, and phrases its question from the nouns and
phrases the schema declares. So every family works on every generated database, including ones added later.
"""

from __future__ import annotations

import random
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data.engines import STEPS_PER_CHECK
from ..data.schema import Column, DatabaseSpec, Table

Match = str  # "set" | "multiset" | "ordered"


@dataclass
class Draft:
    """A task before validation: question, gold SQL (SQLite dialect) and how its result is compared.

    `overrides` maps a dialect to a hand-written gold query where sqlglot's transpilation of the SQLite one
    would not be faithful (date arithmetic). `answer_mode` makes it a question answered with `submit_answer`.

    The prompt states every reading the gold takes (see `answer_contract`): `notes` say what the question alone
    leaves open (groups with no rows left out, rows with a missing value skipped, rounding); `single` marks a
    one-row answer (no word on row order); `column_order="fixed"` when the question fixes the columns' order
    (columns of the same kind that only their position tells apart), else any order is accepted.

    `decoys` are near-miss queries, readings the question rules out (the same question without its grouping or
    its filter). A draft that one of them would answer is left out: on that data the task would not test what
    it asks (every title's top salary is the global one, so the global maximum scores 1). `traps` are decoys
    too, each the query that misses one mess of the data (dates in mixed formats, merged duplicates, NULL
    discounts); they also count towards the task's difficulty (`difficulty.points`).
    """

    family: str
    question: str
    gold: str
    match: Match = "set"
    difficulty: str = "simple"
    evidence: str | None = None
    overrides: dict[str, str] = field(default_factory=dict)
    answer_mode: bool = False
    notes: tuple[str, ...] = ()
    single: bool = False
    column_order: str = "any"
    decoys: tuple[str, ...] = ()
    traps: tuple[str, ...] = ()


ROW_ORDER_NOTES = {
    "set": "Rows may come in any order; repeated rows do not matter.",
    "multiset": "Rows may come in any order, but repeated rows count: give one row per item the question asks for.",
    "ordered": "Row order matters: order the rows as the question says.",
}


def answer_contract(draft: Draft) -> str:
    """The sentences that close every reading the gold takes and the question leaves open."""
    parts = [note for note in draft.notes if note]
    if not draft.single and not draft.answer_mode:
        parts.append(ROW_ORDER_NOTES[draft.match])
    return " ".join(parts)


def skip_missing(table: Table, column: Column) -> str:
    """The note for a gold that leaves out rows where `column` is NULL (empty when it never is)."""
    return f"Leave out {table.plural} with no {column.words}." if column.nullable else ""


def group_note(table: Table, group: Column) -> str:
    """The note for a gold that groups by `group` and leaves out the group of missing values."""
    return (f"Leave out {table.plural} with no {group.words} (they form no group)." if group.nullable else "")


def months_note(table: Table) -> str:
    """The note for a per-month gold: months without rows are absent, not zero."""
    return f"Only months with at least one such {table.noun} appear: leave out months with none (no zero rows)."


@dataclass
class Condition:
    """A WHERE fragment, the words that say it ("whose status is 'shipped'") and an optional hint."""

    sql: str
    phrase: str
    evidence: str | None = None
    always_explain: bool = False  # messy text needs the hint, or the question is unfair


def quote(value: Any) -> str:
    """A SQL literal for a value read from the data."""
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


class Context:
    """One database as the families see it: its spec, a SQLite connection and a seeded random generator."""

    def __init__(self, spec: DatabaseSpec, path: Path, rng: random.Random) -> None:
        self.spec = spec
        self.rng = rng
        self.connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        self._cache: dict[tuple[str, ...], list[Any]] = {}

    def close(self) -> None:
        self.connection.close()

    def run(self, sql: str) -> list[tuple[Any, ...]]:
        return self.connection.execute(sql).fetchall()

    def run_counted(self, sql: str) -> tuple[list[tuple[Any, ...]], int]:
        """`run(sql)` and what it cost in SQLite virtual-machine steps (to `STEPS_PER_CHECK`), the unit of the
        env's query limit."""
        checks = [0]

        def count() -> int:
            checks[0] += 1
            return 0

        self.connection.set_progress_handler(count, STEPS_PER_CHECK)
        try:
            return self.run(sql), checks[0] * STEPS_PER_CHECK
        finally:
            self.connection.set_progress_handler(None, 0)

    # ------------------------------------------------------------------ schema queries
    def tables(self, *roles: str, large: bool = False) -> list[Table]:
        """Tables having at least one column of each role (tables marked large only when `large`)."""
        return [t for t in self.spec.tables if (large or not t.large) and all(t.with_role(r) for r in roles)]  # type: ignore[arg-type]

    def pick_table(self, *roles: str, large: bool = False) -> Table | None:
        candidates = self.tables(*roles, large=large)
        return self.rng.choice(candidates) if candidates else None

    def references(self) -> list[tuple[Table, Column, Table, Column]]:
        """(child table, foreign-key column, parent table, parent key) for every non-self foreign key."""
        edges = []
        for table in self.spec.tables:
            for column in table.columns:
                if column.references:
                    parent_name, parent_column = column.references.split(".")
                    if parent_name != table.name:
                        parent = self.spec.table(parent_name)
                        edges.append((table, column, parent, parent.column(parent_column)))
        return edges

    # ------------------------------------------------------------------ data queries
    def values(self, table: Table, column: Column, limit: int = 12) -> list[Any]:
        """Frequent non-null values of a column (lower-cased and trimmed for messy text), most common first."""
        key = ("values", table.name, column.name)
        if key not in self._cache:
            expression = f"TRIM(LOWER({column.name}))" if column.messy else column.name
            self._cache[key] = [row[0] for row in self.run(
                f"SELECT {expression} AS v, COUNT(*) AS n FROM {table.name} WHERE {column.name} IS NOT NULL "
                f"GROUP BY v ORDER BY n DESC, v LIMIT {limit}")]
        return self._cache[key]

    def sorted_values(self, table: Table, column: Column) -> list[Any]:
        key = ("sorted", table.name, column.name)
        if key not in self._cache:
            self._cache[key] = [row[0] for row in self.run(
                f"SELECT DISTINCT {column.name} FROM {table.name} WHERE {column.name} IS NOT NULL ORDER BY 1")]
        return self._cache[key]

    def threshold(self, table: Table, column: Column, low: float = 0.5, high: float = 0.97) -> Any:
        """A value from the column's distinct values between the `low` and `high` quantiles."""
        values = self.sorted_values(table, column)
        if not values:
            return None
        return values[min(len(values) - 1, int(len(values) * self.rng.uniform(low, high)))]

    def years(self, table: Table, column: Column) -> list[str]:
        key = ("years", table.name, column.name)
        if key not in self._cache:
            self._cache[key] = [row[0] for row in self.run(
                f"SELECT DISTINCT SUBSTR({column.name}, 1, 4) FROM {table.name} WHERE {column.name} IS NOT NULL "
                "ORDER BY 1")]
        return self._cache[key]

    # ------------------------------------------------------------------ conditions
    def condition(self, table: Table, alias: str = "", kinds: tuple[str, ...] = ("category", "measure", "date"),
                  avoid: tuple[str, ...] = ()) -> Condition | None:
        """A random filter on one column of `table`, phrased for a question."""
        prefix = f"{alias}." if alias else ""
        columns = [c for c in table.columns if c.role in kinds and c.name not in avoid]
        if not columns:
            return None
        column = self.rng.choice(columns)
        name = f"{prefix}{column.name}"
        rng = self.rng
        if column.role == "category":
            values = self.values(table, column)
            if not values:
                return None
            value = rng.choice(values[:8])
            if column.messy:
                return Condition(
                    f"TRIM(LOWER({name})) = {quote(value)}",
                    rng.choice((f"whose {column.words} is {value}", f"with {column.words} '{value}'")),
                    f"{column.name} is stored with inconsistent case and stray spaces: compare "
                    f"TRIM(LOWER({column.name})) = {quote(value)}", always_explain=True)
            phrase = rng.choice((f"whose {column.words} is '{value}'", f"with {column.words} {value}",
                                 f"having {value} as {column.words}"))
            return Condition(f"{name} = {quote(value)}", phrase,
                             f"{column.words} {value} refers to {column.name} = {quote(value)}")
        if column.role == "measure":
            value = self.threshold(table, column)
            if value is None:
                return None
            if rng.random() < 0.5:
                return Condition(f"{name} > {quote(value)}", rng.choice((
                    f"with a {column.words} above {quote(value)}", f"whose {column.words} exceeds {quote(value)}",
                    f"with {column.words} greater than {quote(value)}")),
                    f"above {quote(value)} means {column.name} > {quote(value)}")
            low = self.threshold(table, column, 0.02, 0.4)
            return Condition(f"{name} <= {quote(low)}", rng.choice((
                f"with a {column.words} of at most {quote(low)}", f"whose {column.words} is {quote(low)} or less")),
                f"at most {quote(low)} means {column.name} <= {quote(low)}")
        if column.role == "date":
            years = self.years(table, column)
            if not years:
                return None
            year = rng.choice(years)
            next_year = str(int(year) + 1)
            return Condition(f"{name} >= '{year}-01-01' AND {name} < '{next_year}-01-01'", rng.choice((
                f"with a {column.words} in {year}", f"whose {column.words} falls in {year}",
                f"dated (by {column.words}) within {year}")),
                f"in {year} refers to {column.name} between '{year}-01-01' and '{year}-12-31'")
        return None


def output_column(table: Table) -> tuple[Column, str]:
    """The column a listing question returns (the label, else the key) and the words that name it."""
    label = table.label
    if label is not None:
        return label, label.words
    key = table.key
    assert key is not None, f"table {table.name} has neither label nor key"
    return key, f"{table.noun} {key.words}"


def pick_phrase(rng: random.Random, *options: str) -> str:
    return rng.choice(options)


def with_evidence(rng: random.Random, *conditions: Condition | None, rate: float = 0.35) -> str | None:
    """Join the hints of the conditions that need one, plus some others at `rate` (as BIRD does)."""
    notes = [c.evidence for c in conditions if c is not None and c.evidence and
             (c.always_explain or rng.random() < rate)]
    return "; ".join(n for n in notes if n) or None
