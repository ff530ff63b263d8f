"""Date arithmetic: counts in a year or a window, per-month breakdowns, and durations between two dates."""

from __future__ import annotations

from .base import Context, Draft, months_note, with_evidence

FAMILY = "dates"


def hours_between(start: str, end: str, dialect: str) -> str:
    """SQL for the hours from `start` to `end` in one dialect (sqlglot cannot transpile julianday faithfully)."""
    if dialect == "sqlite":
        return f"(JULIANDAY({end}) - JULIANDAY({start})) * 24"
    if dialect == "duckdb":
        return f"(EPOCH(CAST({end} AS TIMESTAMP)) - EPOCH(CAST({start} AS TIMESTAMP))) / 3600.0"
    return f"EXTRACT(EPOCH FROM (CAST({end} AS TIMESTAMP) - CAST({start} AS TIMESTAMP))) / 3600.0"


def generate(ctx: Context, count: int) -> list[Draft]:
    drafts: list[Draft] = []
    rng = ctx.rng
    for _ in range(count * 4):
        if len(drafts) >= count:
            break
        kind = rng.choice(("year", "window", "per_month", "duration"))
        table = ctx.pick_table("date")
        if table is None:
            break
        dates = table.with_role("date")
        date = rng.choice(dates)
        years = ctx.years(table, date)
        if not years:
            continue
        year = rng.choice(years)
        if kind == "year":
            condition = ctx.condition(table, kinds=("category",)) if rng.random() < 0.5 else None
            extra = f" AND {condition.sql}" if condition else ""
            gold = f"SELECT COUNT(*) FROM {table.name} WHERE STRFTIME('%Y', {date.name}) = '{year}'{extra}"
            scope = f"{table.plural} {condition.phrase}" if condition else table.plural
            question = rng.choice((
                f"How many {scope} have a {date.words} in {year}?",
                f"Count the {scope} whose {date.words} falls in the year {year}.",
            ))
            drafts.append(Draft(FAMILY, question, gold, difficulty="simple" if not condition else "moderate",
                                evidence=with_evidence(rng, condition), answer_mode=rng.random() < 0.5, single=True))
        elif kind == "window":
            month = rng.randint(1, 10)
            start = f"{year}-{month:02d}-01"
            end_month = min(12, month + rng.choice((1, 2, 3)))
            end = f"{year}-{end_month:02d}-01"
            gold = f"SELECT COUNT(*) FROM {table.name} WHERE {date.name} >= '{start}' AND {date.name} < '{end}'"
            question = rng.choice((
                f"How many {table.plural} have a {date.words} on or after {start} and before {end}?",
                (f"Between {start} (inclusive) and {end} (exclusive), how many {table.plural} are there by "
                f"{date.words}?"),
            ))
            drafts.append(Draft(FAMILY, question, gold, difficulty="simple", answer_mode=rng.random() < 0.5,
                                single=True))
        elif kind == "per_month":
            gold = (f"SELECT STRFTIME('%m', {date.name}) AS month, COUNT(*) FROM {table.name} WHERE "
                    f"STRFTIME('%Y', {date.name}) = '{year}' GROUP BY month ORDER BY month")
            question = rng.choice((
                (f"Break down the {table.plural} of {year} by month of {date.words}: two-digit month and count, "
                "in month order."),
                (f"For each month of {year}, how many {table.plural} have their {date.words} in it? Return the "
                "month as '01'..'12' and the count, ordered by month."),
            ))
            drafts.append(Draft(FAMILY, question, gold, match="ordered", difficulty="moderate",
                                notes=(months_note(table),)))
        elif len(dates) >= 2:
            start_column, end_column = dates[0], dates[1]
            # Plain range comparisons: the override queries reuse this text verbatim in every dialect.
            where = (f"{end_column.name} IS NOT NULL AND {start_column.name} >= '{year}-01-01' AND "
                     f"{start_column.name} < '{int(year) + 1}-01-01'"
                     if start_column is date else f"{end_column.name} IS NOT NULL")
            template = "SELECT ROUND(AVG({hours}), 1) FROM {table} WHERE {where}"
            gold = template.format(hours=hours_between(start_column.name, end_column.name, "sqlite"),
                                   table=table.name, where=where)
            overrides = {dialect: template.format(hours=hours_between(start_column.name, end_column.name, dialect),
                                                  table=table.name, where=where)
                         for dialect in ("duckdb", "postgres")}
            scope = f"{table.plural} with a {start_column.words} in {year}" if start_column is date else table.plural
            question = rng.choice((
                (f"On average, how many hours pass between the {start_column.words} and the {end_column.words} of "
                f"{scope}? Ignore those without a {end_column.words}; round to 1 decimal."),
                (f"What is the mean time in hours from {start_column.words} to {end_column.words} for {scope} "
                f"(only where the {end_column.words} is known), rounded to one decimal place?"),
            ))
            drafts.append(Draft(FAMILY, question, gold, difficulty="challenging", overrides=overrides,
                                evidence="a day has 24 hours; dates without a time count from midnight"
                                if rng.random() < 0.5 else None, answer_mode=rng.random() < 0.4, single=True))
    return drafts
