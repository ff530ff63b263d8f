"""A task's difficulty, measured from its gold query and its traps rather than guessed per template; and the
rounding its gold states.

The proxy (docs/sql.md, "Difficulty"): one point per distinct table the gold reads, two for a recursive CTE,
one for a window function, and one per trap the data sets (each of the draft's `traps`: the query that misses
one mess of the data, which task building checked gives another answer on this data). Levels: easy at 1 point (one table, no
trap), medium 2 to 4, hard from 5. A one-table filter is 1 point; the hard tier's revenue question (seven tables, four traps) 11.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlglot
from sqlglot import exp

LEVELS = ((1, "easy"), (4, "medium"))  # (most points, level); above the last: hard


def points(gold: str, traps: Sequence[str] = ()) -> int:
    """The difficulty points of a SQLite gold query whose data sets `traps` (near-miss queries)."""
    tree = sqlglot.parse_one(gold, read="sqlite")
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    tables = {table.name.lower() for table in tree.find_all(exp.Table) if table.name} - ctes
    recursive = any(with_.args.get("recursive") for with_ in tree.find_all(exp.With))
    window = any(True for _ in tree.find_all(exp.Window))
    return len(tables) + 2 * recursive + int(window) + len(traps)


def level(score: int) -> str:
    """The shared difficulty level of `score` points."""
    for most, name in LEVELS:
        if score <= most:
            return name
    return "hard"


def rounded_places(gold: str) -> int | None:
    """The decimal places the gold's result is rounded to (`ROUND(x, 2)` among its outermost columns), else None.
    An answer task's prompt states that rounding, and its verifier then matches to that place."""
    tree = sqlglot.parse_one(gold, read="sqlite")
    places = []
    for column in getattr(tree, "expressions", ()):
        node = column.this if isinstance(column, exp.Alias) else column
        if isinstance(node, exp.Round) and isinstance(node.args.get("decimals"), exp.Literal):
            places.append(int(node.args["decimals"].this))
    return min(places) if places else None
