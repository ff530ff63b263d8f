"""Aggregates: one number over a table (COUNT, SUM, AVG, MIN, MAX), often asked as a plain question."""

from __future__ import annotations

from .base import Context, Draft, skip_missing, with_evidence

FAMILY = "aggregates"


def generate(ctx: Context, count: int) -> list[Draft]:
    drafts: list[Draft] = []
    rng = ctx.rng
    for _ in range(count * 3):
        if len(drafts) >= count:
            break
        # Large tables appear only here, with one indexed-friendly filter, so their golds stay quick.
        table = ctx.pick_table(large=rng.random() < 0.3)
        if table is None:
            break
        condition = ctx.condition(table) if rng.random() < 0.75 or table.large else None
        if table.large and condition is None:
            continue
        where = f" WHERE {condition.sql}" if condition else ""
        scope = f"{table.plural} {condition.phrase}" if condition else f"all {table.plural}"
        measures = table.with_role("measure")
        notes: tuple[str, ...] = ()
        kind = rng.choice(("count",) + (("sum", "avg", "min", "max") if measures else ()))
        if kind == "count":
            gold = f"SELECT COUNT(*) FROM {table.name}{where}"
            question = rng.choice((f"How many {scope.removeprefix('all ')} are there?",
                                   f"Count the {scope}.", f"What is the number of {scope}?"))
        else:
            measure = rng.choice(measures)
            function = kind.upper()
            expression = f"ROUND(AVG({measure.name}), 2)" if kind == "avg" else f"{function}({measure.name})"
            gold = f"SELECT {expression} FROM {table.name}{where}"
            words = {"sum": "sum of the", "avg": "average", "min": "smallest", "max": "largest"}[kind]
            question = rng.choice((
                f"What is the {words} {measure.words} of {scope}?",
                f"Compute the {words} {measure.words} across {scope}.",
                f"Across {scope}, what is the {words} {measure.words}?",
            ))
            if kind == "avg":
                question += " Round to 2 decimal places."
            notes = (skip_missing(table, measure),)
        drafts.append(Draft(FAMILY, question, gold, match="multiset",
                            difficulty="simple" if condition is None or not table.large else "moderate",
                            evidence=with_evidence(rng, condition), answer_mode=rng.random() < 0.5,
                            notes=notes, single=True))
    return drafts
