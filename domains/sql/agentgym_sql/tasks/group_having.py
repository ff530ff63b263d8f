"""Group by with having: per-category counts or averages kept only above a threshold."""

from __future__ import annotations

from .base import Context, Draft, group_note, quote, with_evidence

FAMILY = "group_having"


def generate(ctx: Context, count: int) -> list[Draft]:
    drafts: list[Draft] = []
    rng = ctx.rng
    for _ in range(count * 4):
        if len(drafts) >= count:
            break
        table = ctx.pick_table("category")
        if table is None:
            break
        groups = [c for c in table.with_role("category") if not c.messy]
        if not groups:
            continue
        group = rng.choice(groups)
        measures = table.with_role("measure")
        condition = ctx.condition(table, kinds=("measure", "date"), avoid=(group.name,)) if rng.random() < 0.4 else None
        where = f" WHERE {condition.sql}" if condition else ""
        if group.nullable:  # the NULL group is no value of the column: left out, and the prompt says so
            where = f"{where} AND {group.name} IS NOT NULL" if where else f" WHERE {group.name} IS NOT NULL"
        notes = [group_note(table, group)]
        scope = f"{table.plural} {condition.phrase}" if condition else table.plural
        if measures and rng.random() < 0.5:
            measure = rng.choice(measures)
            averages = [row[0] for row in ctx.run(
                f"SELECT AVG({measure.name}) FROM {table.name}{where} GROUP BY {group.name}") if row[0] is not None]
            if len(averages) < 2:
                continue
            cut = round(sorted(averages)[len(averages) // 2], 1)
            gold = (f"SELECT {group.name}, ROUND(AVG({measure.name}), 2) FROM {table.name}{where} "
                    f"GROUP BY {group.name} HAVING AVG({measure.name}) > {quote(cut)}")
            question = rng.choice((
                (f"For each {group.words} of {scope}, give the {group.words} and its average {measure.words} "
                f"(rounded to 2 decimals), keeping only those whose average exceeds {quote(cut)}."),
                (f"Which {group.words} values have an average {measure.words} above {quote(cut)} among {scope}? "
                "Return each with its average rounded to 2 decimals."),
            ))
            notes.append("Compare the average before rounding with the threshold." + (
                f" The average skips missing {measure.words} values." if measure.nullable else ""))
        else:
            counts = sorted(row[0] for row in ctx.run(
                f"SELECT COUNT(*) FROM {table.name}{where} GROUP BY {group.name}"))
            if len(counts) < 2:
                continue
            cut = counts[len(counts) // 2]
            op, words = rng.choice(((">", "more than"), (">=", "at least")))
            gold = (f"SELECT {group.name}, COUNT(*) FROM {table.name}{where} GROUP BY {group.name} "
                    f"HAVING COUNT(*) {op} {cut}")
            question = rng.choice((
                f"Which {group.words} values occur in {words} {cut} {scope}? Give each with its count.",
                f"Group {scope} by {group.words} and return the groups with {words} {cut} rows, with their counts.",
                f"For every {group.words} that has {words} {cut} {scope}, show the {group.words} and how many.",
            ))
        drafts.append(Draft(FAMILY, question, gold, match="set",
                            difficulty="moderate" if condition is None else "challenging",
                            evidence=with_evidence(rng, condition), notes=tuple(notes)))
    return drafts
