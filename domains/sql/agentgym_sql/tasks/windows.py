"""Window functions: ranks within partitions, running totals, position in an ordering."""

from __future__ import annotations

from .base import Context, Draft, group_note, months_note, output_column, skip_missing, with_evidence

FAMILY = "windows"


def generate(ctx: Context, count: int) -> list[Draft]:
    drafts: list[Draft] = []
    rng = ctx.rng
    for _ in range(count * 4):
        if len(drafts) >= count:
            break
        kind = rng.choice(("rank_in_group", "running_total", "dense_rank"))
        if kind == "rank_in_group":
            table = ctx.pick_table("measure", "category")
            if table is None:
                continue
            groups = [c for c in table.with_role("category") if not c.messy]
            if not groups:
                continue
            group, measure = rng.choice(groups), rng.choice(table.with_role("measure"))
            column, words = output_column(table)
            places = rng.choice((1, 2, 3))
            gold = (f"SELECT {group.name}, {column.name}, {measure.name} FROM (SELECT {group.name}, {column.name}, "
                    f"{measure.name}, RANK() OVER (PARTITION BY {group.name} ORDER BY {measure.name} DESC) AS "
                    f"position FROM {table.name} WHERE {measure.name} IS NOT NULL"
                    f"{f' AND {group.name} IS NOT NULL' if group.nullable else ''}) AS ranked WHERE position <= "
                    f"{places}")
            top = "highest" if places == 1 else f"{places} highest"
            question = rng.choice((
                (f"Within each {group.words}, rank {table.plural} by {measure.words} (largest first, ties share a "
                f"rank) and return those ranked {places} or better: {group.words}, {words}, {measure.words}."),
                (f"Using a rank per {group.words}, list the {table.plural} with the {top} {measure.words} values "
                f"(ties included). Show {group.words}, {words} and {measure.words}."),
            ))
            overall = gold.replace(f"RANK() OVER (PARTITION BY {group.name} ORDER BY", "RANK() OVER (ORDER BY")
            drafts.append(Draft(FAMILY, question, gold, difficulty="challenging",
                                notes=(group_note(table, group), skip_missing(table, measure)), decoys=(overall,)))
        elif kind == "running_total":
            table = ctx.pick_table("date")
            if table is None:
                continue
            date = rng.choice(table.with_role("date"))
            years = ctx.years(table, date)
            if not years:
                continue
            year = rng.choice(years)
            gold = (f"SELECT month, SUM(n) OVER (ORDER BY month) FROM (SELECT STRFTIME('%m', {date.name}) AS month, "
                    f"COUNT(*) AS n FROM {table.name} WHERE {date.name} >= '{year}-01-01' AND {date.name} < "
                    f"'{int(year) + 1}-01-01' GROUP BY month) AS monthly ORDER BY month")
            question = rng.choice((
                (f"For {year}, give the running total of {table.plural} by month of {date.words}: each month "
                "('01' to '12') with the cumulative count so far, in month order."),
                (f"Month by month through {year}, how many {table.plural} dated (by {date.words}) within {year} had "
                 f"accumulated, counting from January {year}? Return the two-digit month and the cumulative count, "
                 "ordered by month."),
            ))
            drafts.append(Draft(FAMILY, question, gold, match="ordered", difficulty="challenging",
                                evidence="month is the two-digit month of the date, e.g. '03'"
                                if rng.random() < 0.5 else None,
                                notes=(months_note(table),)))
        else:
            table = ctx.pick_table("measure")
            if table is None:
                continue
            measure = rng.choice(table.with_role("measure"))
            condition = ctx.condition(table, kinds=("category",))
            if condition is None:
                continue
            column, words = output_column(table)
            size = ctx.run(f"SELECT COUNT(*) FROM {table.name} WHERE {condition.sql}")[0][0]
            if not 1 <= size <= 60:
                continue
            gold = (f"SELECT {column.name}, DENSE_RANK() OVER (ORDER BY {measure.name} DESC) FROM {table.name} "
                    f"WHERE {condition.sql} AND {measure.name} IS NOT NULL")
            question = rng.choice((
                (f"Rank the {table.plural} {condition.phrase} by {measure.words} from highest to lowest with a "
                f"dense rank (equal values share a rank, no gaps). Return {words} and rank."),
                (f"Give each {table.noun} {condition.phrase} its dense rank by descending {measure.words}, "
                f"together with its {words}."),
            ))
            drafts.append(Draft(FAMILY, question, gold, match="multiset", difficulty="challenging",
                                evidence=with_evidence(rng, condition), notes=(skip_missing(table, measure),)))
    return drafts
