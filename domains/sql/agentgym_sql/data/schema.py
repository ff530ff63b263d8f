"""Declarative schemas for the generated databases.

A `DatabaseSpec` names its tables and columns once; the loaders turn it into DDL for SQLite, DuckDB and
PostgreSQL, and the task families read the column *roles* (label, category, measure, date, reference) to write
questions that fit any schema without knowing it in advance.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

ColumnType = Literal["integer", "real", "money", "text", "date", "timestamp"]
Role = Literal["key", "label", "category", "measure", "date", "ref", "text"]

# Declared types per engine. SQLite keeps dates as ISO-8601 text (its date functions read that form);
# money is REAL there and an exact decimal in DuckDB and PostgreSQL.
TYPE_NAMES: dict[str, dict[str, str]] = {
    "sqlite": {"integer": "INTEGER", "real": "REAL", "money": "REAL", "text": "TEXT", "date": "DATE",
               "timestamp": "TIMESTAMP"},
    "duckdb": {"integer": "BIGINT", "real": "DOUBLE", "money": "DECIMAL(12,2)", "text": "VARCHAR",
               "date": "DATE", "timestamp": "TIMESTAMP"},
    "postgres": {"integer": "BIGINT", "real": "DOUBLE PRECISION", "money": "NUMERIC(12,2)", "text": "TEXT",
                 "date": "DATE", "timestamp": "TIMESTAMP"},
}


@dataclass(frozen=True)
class Column:
    """One column: its name, storage type and the role task families may use it for.

    `phrase` is how a question names the column ("unit price"); `references` is `"table.column"` for a
    foreign key; `messy` marks text stored with inconsistent case and stray spaces on purpose.
    """

    name: str
    type: ColumnType
    role: Role = "text"
    phrase: str = ""
    primary_key: bool = False
    references: str | None = None
    nullable: bool = False
    messy: bool = False

    @property
    def words(self) -> str:
        return self.phrase or self.name.replace("_", " ")


@dataclass(frozen=True)
class Table:
    """One table with the nouns questions use for it ("patient" / "patients")."""

    name: str
    noun: str
    plural: str
    columns: tuple[Column, ...]
    large: bool = False  # task families avoid heavy queries over tables marked large

    def column(self, name: str) -> Column:
        for column in self.columns:
            if column.name == name:
                return column
        raise KeyError(f"table {self.name} has no column {name!r}")

    @property
    def key(self) -> Column | None:
        return next((c for c in self.columns if c.primary_key), None)

    @property
    def label(self) -> Column | None:
        return next((c for c in self.columns if c.role == "label"), None)

    def with_role(self, role: Role) -> list[Column]:
        return [c for c in self.columns if c.role == role]


Rows = dict[str, list[tuple[Any, ...]]]


@dataclass(frozen=True)
class DatabaseSpec:
    """A generated database: schema, a row builder deterministic from a seed, its split and a blurb."""

    name: str
    description: str
    tables: tuple[Table, ...]
    build_rows: Callable[[random.Random, int], Rows]
    split: str
    indexes: tuple[str, ...] = field(default=())  # "table.column" to index (foreign keys are indexed anyway)
    version: int = 1  # bump when the generator changes so cached files are rebuilt
    kind: str = "generic"  # which task families run on it: "generic" (role-based) or "erp" (the hard tier's)

    def table(self, name: str) -> Table:
        for table in self.tables:
            if table.name == name:
                return table
        raise KeyError(f"database {self.name} has no table {name!r}")

    def ddl(self, dialect: str) -> list[str]:
        """CREATE TABLE and CREATE INDEX statements for one engine, in dependency order."""
        types = TYPE_NAMES[dialect]
        statements: list[str] = []
        for table in self.tables:
            parts = []
            for column in table.columns:
                part = f"{column.name} {types[column.type]}"
                if column.primary_key:
                    part += " PRIMARY KEY"
                elif not column.nullable:
                    part += " NOT NULL"
                parts.append(part)
            # DuckDB checks foreign keys row by row on COPY and rejects self-references (employees.manager_id),
            # so its files carry the keys in the spec only (describe_table reads them from there).
            for column in table.columns if dialect != "duckdb" else ():
                if column.references:
                    ref_table, ref_column = column.references.split(".")
                    parts.append(f"FOREIGN KEY ({column.name}) REFERENCES {ref_table}({ref_column})")
            statements.append(f"CREATE TABLE {table.name} (\n  " + ",\n  ".join(parts) + "\n)")
        if dialect != "duckdb":  # DuckDB scans are fast enough; its ART indexes only slow loading
            indexed = {f"{t.name}.{c.name}" for t in self.tables for c in t.columns if c.references}
            for target in sorted(indexed | set(self.indexes)):
                table_name, column_name = target.split(".")
                statements.append(
                    f"CREATE INDEX idx_{table_name}_{column_name} ON {table_name}({column_name})")
        return statements


def key(name: str) -> Column:
    return Column(name, "integer", role="key", primary_key=True, phrase="id")


def ref(name: str, target: str, *, nullable: bool = False, phrase: str = "") -> Column:
    return Column(name, "integer" if not target.endswith("code") else "text", role="ref", references=target,
                  nullable=nullable, phrase=phrase)
