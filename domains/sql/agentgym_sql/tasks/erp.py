"""What the hard tier's families share: the SQL that reads the ERP databases' messy columns, and their facts.

The ERP databases (`data/erp.py`) write dates as text in four formats. `iso_day` is the expression that reads
any of them as 'YYYY-MM-DD' text; every gold uses it, and the decoys that compare the raw text show what a
query that never looked at the data gets wrong. It is plain SQL (LIKE, SUBSTR, REPLACE, CASE, ||), so sqlglot
carries it to DuckDB and PostgreSQL unchanged.
"""

from __future__ import annotations

import datetime as dt

from ..data.erp import MONTHS
from .base import Context

KIND = "erp"  # these families run on the databases whose spec has this kind
PER_DATABASE = 15  # tasks each hard family makes on each ERP database (every gold and decoy runs at build)
MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
               "November", "December")
ONE_NUMBER = "Answer with one number."


def iso_day(column: str) -> str:
    """SQL reading `column` (text in any of the ERP formats) as 'YYYY-MM-DD'."""
    months = " ".join(f"WHEN '{name}' THEN '{number:02d}'" for number, name in enumerate(MONTHS, 1))
    return (f"CASE WHEN {column} LIKE '____-__-__%' THEN SUBSTR({column}, 1, 10) "
            f"WHEN {column} LIKE '____/__/__' THEN REPLACE({column}, '/', '-') "
            f"WHEN {column} LIKE '________' THEN SUBSTR({column}, 1, 4) || '-' || SUBSTR({column}, 5, 2) || '-' || "
            f"SUBSTR({column}, 7, 2) "
            f"ELSE SUBSTR({column}, 8, 4) || '-' || CASE SUBSTR({column}, 4, 3) {months} END || '-' || "
            f"SUBSTR({column}, 1, 2) END")


def period(ctx: Context, last_year: int = 2024) -> tuple[str, str, str]:
    """A period of the ERP years up to `last_year`: (words for the question, first day, last day), a month,
    quarter, half or year."""
    rng = ctx.rng
    year = rng.choice(tuple(range(2023, last_year + 1)))
    kind = rng.choice(("month", "month", "quarter", "half", "year"))
    if kind == "month":
        month = rng.randint(1, 12)
        last = (31, 29 if year % 4 == 0 else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[month - 1]
        return f"{MONTH_NAMES[month - 1]} {year}", f"{year}-{month:02d}-01", f"{year}-{month:02d}-{last:02d}"
    if kind == "quarter":
        quarter = rng.randint(1, 4)
        ends = ("03-31", "06-30", "09-30", "12-31")
        return ((f"the {('first', 'second', 'third', 'fourth')[quarter - 1]} quarter of {year} "
                f"({MONTH_NAMES[quarter * 3 - 3]} to {MONTH_NAMES[quarter * 3 - 1]})"),
                f"{year}-{quarter * 3 - 2:02d}-01", f"{year}-{ends[quarter - 1]}")
    if kind == "half":
        first = rng.random() < 0.5
        return ((f"the first half of {year} (January to June)", f"{year}-01-01", f"{year}-06-30") if first else
                (f"the second half of {year} (July to December)", f"{year}-07-01", f"{year}-12-31"))
    return str(year), f"{year}-01-01", f"{year}-12-31"


def next_period(words: str, first: str, last: str) -> tuple[str, str, str]:
    """The period of the same length that follows a period of `period` (a month, quarter, half or year)."""
    start, end = dt.date.fromisoformat(first), dt.date.fromisoformat(last)
    months = (end.year - start.year) * 12 + end.month - start.month + 1
    following = dt.date(start.year + (start.month - 1 + months) // 12, (start.month - 1 + months) % 12 + 1, 1)
    after = dt.date(following.year + (following.month - 1 + months) // 12, (following.month - 1 + months) % 12 + 1, 1)
    closing = after - dt.timedelta(days=1)
    if months == 1:
        said = f"{MONTH_NAMES[following.month - 1]} {following.year}"
    elif months == 12:
        said = str(following.year)
    else:
        said = (f"{MONTH_NAMES[following.month - 1]} to {MONTH_NAMES[closing.month - 1]} {following.year}")
    return said, following.isoformat(), closing.isoformat()


def naive_between(column: str, first: str, last: str) -> str:
    """The reading of a period that compares the raw text, as if every date were ISO."""
    return f"{column} BETWEEN '{first}' AND '{last} 99'"


def countries_with_customers(ctx: Context) -> list[str]:
    return [row[0] for row in ctx.run(
        "SELECT DISTINCT co.country_name FROM customers AS c JOIN cities AS ci ON ci.city_id = c.city_id "
        "JOIN countries AS co ON co.country_code = ci.country_code ORDER BY 1")]


CHANNELS_ASKED = ("web", "phone", "partner")
