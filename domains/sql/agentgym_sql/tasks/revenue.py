"""Hard tier: net revenue in US dollars over a period and a place, from an ERP database's raw orders.

The work: find where the place lives (customers -> cities -> countries -> regions), read order dates written
in four formats, treat a missing discount as none, leave out cancelled orders (a status label in a lookup
table) and convert each order from its own currency at its month's rate. Each of those, skipped, is a decoy
the task must not accept.
"""

from __future__ import annotations

from .base import Context, Draft
from .erp import KIND, PER_DATABASE, countries_with_customers, iso_day, naive_between, period

FAMILY = "revenue"
__all__ = ["FAMILY", "KIND", "PER_DATABASE", "generate"]

# The sum is cast to NUMERIC before rounding: PostgreSQL rounds to decimals only a NUMERIC (the rate is a float).
NET = "l.quantity * l.unit_price * (1 - COALESCE(l.discount_pct, 0) / 100.0)"


def generate(ctx: Context, count: int) -> list[Draft]:
    drafts: list[Draft] = []
    rng = ctx.rng
    countries = countries_with_customers(ctx)
    regions = [row[0] for row in ctx.run(
        "SELECT DISTINCT r.region_name FROM customers AS c JOIN cities AS ci ON ci.city_id = c.city_id JOIN "
        "countries AS co ON co.country_code = ci.country_code JOIN regions AS r ON r.region_id = co.region_id "
        "ORDER BY 1")]
    for _ in range(count):
        words, first, last = period(ctx)
        if rng.random() < 0.7 or len(regions) < 2:
            place, where = rng.choice(countries), "co.country_name"
        else:
            place, where = rng.choice(regions), "r.region_name"
        gold = _query(first, last, where, place)
        question = rng.choice((
            f"What was the net revenue, in US dollars, of the orders placed in {words} by customers in {place}?",
            f"How much net revenue (in US dollars) did orders from customers in {place} bring in {words}?",
            f"Give the US-dollar net revenue of all orders that customers located in {place} placed in {words}.",
        ))
        notes = (("Leave out cancelled orders. A line's net revenue is its quantity times its unit price, less its "
                 "discount percentage; a line with no discount recorded was sold at full price. Prices are in each "
                 "order's currency: convert every order at the rate of the month it was placed in. Answer with one "
                 "number, rounded to 2 decimals."),)
        traps = (
            _query(first, last, where, place, dates=naive_between("o.order_date", first, last)),
            _query(first, last, where, place, net=NET.replace("COALESCE(l.discount_pct, 0)", "l.discount_pct")),
            _query(first, last, where, place, convert=""),
            _query(first, last, where, place, cancelled=""),
        )
        drafts.append(Draft(FAMILY, question, gold, difficulty="challenging", answer_mode=True, single=True,
                            notes=notes, traps=traps,
                            evidence="net revenue of a line = quantity * unit_price * (1 - discount_pct / 100)"))
    return drafts


def _query(first: str, last: str, where: str, place: str, *, dates: str | None = None, net: str = NET,
           convert: str = " * f.rate_to_usd", cancelled: str = " AND s.status_label <> 'Cancelled'") -> str:
    dates = dates or f"o.day BETWEEN '{first}' AND '{last}'"
    return (f"WITH o AS (SELECT order_id, customer_id, status_id, currency_code, order_date, "
            f"{iso_day('order_date')} AS day FROM orders) "
            f"SELECT ROUND(CAST(SUM({net}{convert}) AS NUMERIC), 2) FROM o JOIN order_lines AS l ON l.order_id = o.order_id "
            "JOIN customers AS c ON c.customer_id = o.customer_id JOIN cities AS ci ON ci.city_id = c.city_id "
            "JOIN countries AS co ON co.country_code = ci.country_code JOIN regions AS r ON r.region_id = co.region_id "
            "JOIN order_statuses AS s ON s.status_id = o.status_id "
            "JOIN fx_rates AS f ON f.currency_code = o.currency_code AND f.month = SUBSTR(o.day, 1, 7) "
            f"WHERE {where} = '{place}' AND {dates}{cancelled}")
