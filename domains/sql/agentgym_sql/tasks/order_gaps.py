"""Hard tier (window functions): the largest jump in units between a customer's consecutive orders.

The work: order each customer's orders by their real date (text in four formats, so ordering the raw text
goes wrong, and order ids do not follow dates), count a merged duplicate record as its customer, compare each
order with the previous one in the period (LAG) and keep every customer tied at the top. The decoys order by
the raw text or by id, or read only the ISO-written dates (playtest #19).
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
    for _ in range(count * 2):  # three traps must each change the answer: many drafts are left out
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

        def query(*, joins: str = joins, where: str = where, year: int = year, first: str = first, last: str = last,
                  direction: str = direction, day: str = iso_day("o.order_date"), order: str = "day, order_id",
                  kept: str = "") -> str:
            previous = f"LAG(units) OVER (PARTITION BY customer ORDER BY {order})"
            return ("WITH u AS (SELECT order_id, SUM(quantity) AS units FROM order_lines GROUP BY order_id), "
                    f"o AS (SELECT COALESCE(c.merged_into, c.customer_id) AS customer, o.order_id, {day} AS day, "
                    "u.units FROM orders AS o JOIN u ON u.order_id = o.order_id JOIN customers AS c ON c.customer_id = "
                    f"o.customer_id{joins} WHERE {where}), "
                    f"y AS (SELECT * FROM o WHERE {kept or iso_day('day') if day == 'o.order_date' else 'day'} BETWEEN "
                    f"'{year}-{first}-01' AND '{year}-{last}-31'), "
                    f"g AS (SELECT customer, {direction.replace('previous', previous)} AS change FROM y) "
                    "SELECT customer, change FROM g WHERE change = (SELECT MAX(change) FROM g)")

        question = rng.choice((
            (f"Among {scope}, compare each order placed in {words} with the same customer's previous order "
             f"placed in {words}: which customer had the largest {word} in the number of units ordered from one "
             "order to the next?"),
            (f"For {scope} and their orders of {words}, find the customer whose units ordered showed the biggest "
             f"{word} between two consecutive orders of that period."),
            (f"Which of the {scope} had the largest {word} in units from one order to their next, looking only at "
             f"orders placed in {words}?"),
        ))
        notes = (("Take a customer's orders in date order (orders on the same day by order id); an order's units "
                 "are the sum of its lines' quantities. A customer registered twice is one customer, whichever record "
                 "an order was placed under. Return the customer id (of the surviving record) and the "
                 f"{word} in units; if several customers tie, return them all."),)
        # Each reading that skips one step must change the answer: raw-text or id order, or only the ISO-written
        # dates read. Keeping duplicate records apart changes the top customer too rarely to be required (one
        # draft in ten), so on some tasks that slip goes unpunished: stated, not a trap (docs/sql.md).
        traps = (query(day="o.order_date"), query(order="order_id"), query(day="o.order_date", kept="day"))
        drafts.append(Draft(FAMILY, question, query(), difficulty="challenging", notes=notes, traps=traps))
    return drafts
