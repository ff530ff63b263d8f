"""Filters: rows of one table that meet one or two conditions (BIRD 'simple', some 'moderate')."""

from __future__ import annotations

from .base import Context, Draft, output_column, with_evidence

FAMILY = "filters"


def generate(ctx: Context, count: int) -> list[Draft]:
    drafts: list[Draft] = []
    rng = ctx.rng
    for _ in range(count * 3):
        if len(drafts) >= count:
            break
        table = ctx.pick_table()
        if table is None:
            break
        first = ctx.condition(table)
        if first is None:
            continue
        second = ctx.condition(table, avoid=tuple(c.name for c in table.columns if c.name in first.sql)) \
            if rng.random() < 0.5 else None
        column, words = output_column(table)
        where = first.sql + (f" AND {second.sql}" if second else "")
        described = first.phrase + (f" and {second.phrase}" if second else "")
        # Sorting stored text with stray spaces and odd case has two readings (bytes or alphabet): not asked.
        ordered = rng.random() < 0.25 and not column.messy
        gold = f"SELECT {column.name} FROM {table.name} WHERE {where}"
        if ordered:
            key = table.key
            gold += f" ORDER BY {column.name}" + (f", {key.name}" if key and key is not column else "")
        question = rng.choice((
            f"List the {words} of every {table.noun} {described}.",
            f"Which {table.plural} are {described.replace('whose ', 'those whose ', 1)}? Give their {words}.",
            f"Show the {words} of {table.plural} {described}.",
            f"Find all {table.plural} {described} and return each one's {words}.",
        ))
        if ordered:
            question += f" Sort them by {words}" + (f", then by {table.key.words}." if table.key and
                                                      table.key is not column else ".")
        # A filter that keeps every row (or, with two conditions, one that the other already implies) is not asked.
        decoys = tuple(gold.replace(f" WHERE {where}", f" WHERE {kept}" if kept else "")
                       for kept in ("", *((first.sql, second.sql) if second else ())))
        drafts.append(Draft(FAMILY, question, gold, match="ordered" if ordered else "set",
                            difficulty="moderate" if second or ordered else "simple",
                            evidence=with_evidence(rng, first, second), decoys=decoys))
    return drafts
