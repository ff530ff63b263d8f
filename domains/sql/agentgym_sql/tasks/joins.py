"""Joins over 2 to 4 tables along foreign keys, filtered on the far end of the path."""

from __future__ import annotations

from ..data.schema import Column, Table
from .base import Context, Draft, output_column, with_evidence

FAMILY = "joins"

Edge = tuple[Table, Column, Table, Column]


def _paths(ctx: Context, length: int) -> list[list[Edge]]:
    """Chains child -> parent -> grandparent ... of `length` foreign-key edges (no table twice)."""
    edges = [e for e in ctx.references() if not e[0].large and not e[2].large]
    paths: list[list[Edge]] = [[e] for e in edges]
    for _ in range(length - 1):
        paths = [path + [e] for path in paths for e in edges
                 if e[0] is path[-1][2] and e[2] not in {p[0] for p in path} | {path[0][0]}]
    return paths


def generate(ctx: Context, count: int) -> list[Draft]:
    drafts: list[Draft] = []
    rng = ctx.rng
    for _ in range(count * 4):
        if len(drafts) >= count:
            break
        length = rng.choice((1, 1, 2, 2, 3))
        paths = _paths(ctx, length)
        if not paths:
            continue
        path = rng.choice(paths)
        # Filter on the child end, report the parent end, or the reverse.
        reverse = rng.random() < 0.5
        start_table = path[0][0]
        end_table = path[-1][2]
        filtered, reported = (end_table, start_table) if reverse else (start_table, end_table)
        aliases = {start_table.name: "t0"}
        joins = []
        for index, (child, column, parent, key) in enumerate(path, 1):
            aliases[parent.name] = f"t{index}"
            joins.append(f"JOIN {parent.name} AS t{index} ON t{index - 1}.{column.name} = t{index}.{key.name}")
        condition = ctx.condition(filtered, alias=aliases[filtered.name])
        if condition is None:
            continue
        column, words = output_column(reported)
        alias = aliases[reported.name]
        counting = rng.random() < 0.3
        select = f"COUNT(DISTINCT {alias}.{reported.key.name})" if counting and reported.key else \
            f"DISTINCT {alias}.{column.name}"
        gold = f"SELECT {select} FROM {start_table.name} AS t0 {' '.join(joins)} WHERE {condition.sql}"
        everything = f"SELECT {select} FROM {reported.name} AS {alias}"
        if sorted(map(repr, ctx.run(gold))) == sorted(map(repr, ctx.run(everything))):
            continue  # the filter keeps every reported row: the whole list would answer without reading the filter
        via = " and ".join(t.plural for t in [p[2] for p in path[:-1]]) if length > 1 else ""
        link = f" (through their {via})" if via else ""
        if counting:
            question = rng.choice((
                f"How many different {reported.plural} are connected{link} to {filtered.plural} {condition.phrase}?",
                (f"Count the distinct {reported.plural} linked{link} to at least one {filtered.noun} "
                f"{condition.phrase}."),
            ))
        else:
            question = rng.choice((
                (f"List the distinct {words} of {reported.plural} connected{link} to {filtered.plural} "
                f"{condition.phrase}."),
                (f"Which {reported.plural} are linked{link} to a {filtered.noun} {condition.phrase}? "
                f"Give their {words}, without repeats."),
                (f"Find every {reported.noun} that has{link} some {filtered.noun} {condition.phrase}; "
                f"return the {words}."),
            ))
        drafts.append(Draft(FAMILY, question, gold, match="set",
                            difficulty="moderate" if length == 1 else "challenging",
                            evidence=with_evidence(rng, condition), single=select.startswith("COUNT")))
    return drafts
