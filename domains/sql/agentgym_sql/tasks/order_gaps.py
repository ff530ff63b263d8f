"""Hard tier (window functions): customers whose units jumped by at least a threshold between consecutive orders.

The work: order each customer's orders by their real date (text in four formats, so ordering the raw text
goes wrong, and order ids do not follow dates), count a merged duplicate record as its customer, compare each
order with the previous one in the period (LAG) and keep the customers whose change reaches the threshold. The
decoys order by the raw text or by id, read only the ISO-written dates, or keep duplicate records apart
(playtest #19, #29: a question about the one top customer could not make that last slip matter).
"""

from __future__ import annotations

from .base import Context, Draft
from .erp import KIND, PER_DATABASE, countries_with_customers, iso_day

FAMILY = "order_gaps"
__all__ = ["FAMILY", "KIND", "PER_DATABASE", "generate"]

HALVES = (("", "01", "12"), ("the first half of ", "01", "06"), ("the second half of ", "07", "12"))


def generate(ctx: Context, count: int) -> list[Draft]:
    drafts: list[Draft] = []
    rng = ctx.rng
    segments = [row[0] for row in ctx.run("SELECT segment_label FROM customer_segments ORDER BY 1")]
    countries = countries_with_customers(ctx)
    for _ in range(count):
        if rng.random() < 0.5:
            label = rng.choice(segments)
            scope = f"{label.lower()}-segment customers"
            joins = " JOIN customer_segments AS sg ON sg.segment_code = c.segment_code"
            where = f"sg.segment_label = '{label}'"
        else:
            country = rng.choice(countries)
            scope = f"customers living in {country}"
            joins = (" JOIN cities AS ci ON ci.city_id = c.city_id JOIN countries AS co ON co.country_code = "
                     "ci.country_code")
            where = f"co.country_name = '{country}'"
        year = rng.choice((2023, 2024))
        half, first, last = rng.choice(HALVES)
        words = f"{half}{year}"
        direction, word = rng.choice((("units - previous", "increase"), ("previous - units", "drop")))
        change = f"an {word}" if word == "increase" else f"a {word}"

        def changes(*, joins: str = joins, where: str = where, year: int = year, first: str = first,
                    last: str = last, direction: str = direction, day: str = iso_day("o.order_date"),
                    order: str = "day, order_id", kept: str = "",
                    who: str = "COALESCE(c.merged_into, c.customer_id)") -> str:
            """The CTEs up to `g`: every consecutive pair of a customer's orders in the period and its change."""
            previous = f"LAG(units) OVER (PARTITION BY customer ORDER BY {order})"
            return ("WITH u AS (SELECT order_id, SUM(quantity) AS units FROM order_lines GROUP BY order_id), "
                    f"o AS (SELECT {who} AS customer, o.order_id, {day} AS day, "
                    "u.units FROM orders AS o JOIN u ON u.order_id = o.order_id JOIN customers AS c ON c.customer_id = "
                    f"o.customer_id{joins} WHERE {where}), "
                    f"y AS (SELECT * FROM o WHERE {kept or iso_day('day') if day == 'o.order_date' else 'day'} BETWEEN "
                    f"'{year}-{first}-01' AND '{year}-{last}-31'), "
                    f"g AS (SELECT customer, {direction.replace('previous', previous)} AS change FROM y) ")

        # The threshold: the change the 5th to 20th customer reaches, so a handful of customers qualify and a
        # customer whose orders sit under two records likely among them (the merge must matter).
        best = [row[0] for row in ctx.run(changes() + "SELECT MAX(change) AS top FROM g GROUP BY customer "
                                                     "HAVING top IS NOT NULL ORDER BY top DESC")]
        if len(best) < 25 or best[5] <= 0:
            continue
        least = best[rng.randint(5, 20)]
        if least <= 0:
            continue

        def query(least: int = least, **reading: str) -> str:
            return changes(**reading) + f"SELECT DISTINCT customer FROM g WHERE change >= {least}"

        question = rng.choice((
            (f"Among {scope}, compare each order placed in {words} with the same customer's previous order "
             f"placed in {words}: which customers had {change} of at least {least} units ordered from one "
             "order to the next?"),
            (f"For {scope} and their orders of {words}, list the customers whose units ordered showed {change} "
             f"of {least} or more between two consecutive orders of that period."),
            (f"Which of the {scope} had, looking only at orders placed in {words}, {change} of at least "
             f"{least} units from one order to their next?"),
        ))
        notes = (("Take a customer's orders in date order (orders on the same day by order id); an order's units "
                  "are the sum of its lines' quantities. A customer registered twice is one customer, whichever "
                  "record an order was placed under. Return the customer ids (of the surviving records), one row "
                  "each."),)
        # Each reading that skips one step must change the answer: raw-text or id order, only the ISO-written
        # dates read, duplicate records kept apart (playtest #19, #29).
        traps = (query(day="o.order_date"), query(order="order_id"), query(day="o.order_date", kept="day"),
                 query(who="c.customer_id"))
        drafts.append(Draft(FAMILY, question, query(), difficulty="challenging", notes=notes, traps=traps))
    return drafts
