"""NULL semantics: missing values counted, skipped by aggregates, replaced with COALESCE, filtered IS NULL."""

from __future__ import annotations

from .base import Context, Draft, output_column, with_evidence

FAMILY = "nulls"


def generate(ctx: Context, count: int) -> list[Draft]:
    drafts: list[Draft] = []
    rng = ctx.rng
    candidates = [(t, c) for t in ctx.tables() for c in t.columns if c.nullable and not c.primary_key]
    if not candidates:
        return drafts
    for _ in range(count * 4):
        if len(drafts) >= count:
            break
        table, column = rng.choice(candidates)
        kind = rng.choice(("count_missing", "count_present", "coalesce_avg", "list_missing"))
        words = column.words
        if kind == "count_missing":
            condition = ctx.condition(table, kinds=("category", "date"), avoid=(column.name,)) \
                if rng.random() < 0.5 else None
            also = f" AND {condition.sql}" if condition else ""
            scope = f"{table.plural} {condition.phrase}" if condition else table.plural
            gold = f"SELECT COUNT(*) FROM {table.name} WHERE {column.name} IS NULL{also}"
            question = rng.choice((f"How many {scope} have no {words} recorded?",
                                   f"Count the {scope} whose {words} is missing."))
            drafts.append(Draft(FAMILY, question, gold, difficulty="simple", answer_mode=rng.random() < 0.5,
                                evidence=with_evidence(rng, condition), single=True))
        elif kind == "count_present":
            gold = f"SELECT COUNT(*), COUNT({column.name}) FROM {table.name}"
            question = rng.choice((
                (f"How many {table.plural} are there in total, and how many of them have a {words}? Return both "
                "counts."),
                f"Give the total number of {table.plural} and the number with a non-missing {words}.",
            ))
            drafts.append(Draft(FAMILY, question, gold, difficulty="moderate", single=True, column_order="fixed",
                                notes=((f"Return two columns in this order: the total, then the number with a "
                                       f"{words}."),)))
        elif kind == "coalesce_avg" and column.role == "measure":
            gold = (f"SELECT ROUND(AVG({column.name}), 2), ROUND(AVG(COALESCE({column.name}, 0)), 2) "
                    f"FROM {table.name}")
            question = rng.choice((
                (f"What is the average {words} of {table.plural}, first ignoring missing values and then counting "
                "missing values as 0? Round both to 2 decimals."),
                (f"Compute two averages of {words} over {table.plural}: one skipping NULLs, one treating NULL as "
                "zero (2 decimals each)."),
            ))
            drafts.append(Draft(FAMILY, question, gold, difficulty="moderate",
                                evidence="AVG skips NULLs; COALESCE(x, 0) turns them into zeros"
                                if rng.random() < 0.4 else None, single=True, column_order="fixed",
                                notes=(("Return two columns in this order: the average that skips missing values, "
                                       "then the one that counts them as 0."),)))
        elif kind == "list_missing":
            output, output_words = output_column(table)
            if output is column:
                continue
            condition = ctx.condition(table, kinds=("category", "measure", "date"), avoid=(column.name,))
            if condition is None:
                continue
            gold = (f"SELECT {output.name} FROM {table.name} WHERE {column.name} IS NULL AND {condition.sql}")
            question = rng.choice((
                f"List the {output_words} of {table.plural} {condition.phrase} that have no {words}.",
                f"Which {table.plural} {condition.phrase} are missing their {words}? Give the {output_words}.",
            ))
            drafts.append(Draft(FAMILY, question, gold, difficulty="moderate",
                                evidence=with_evidence(rng, condition)))
    return drafts
