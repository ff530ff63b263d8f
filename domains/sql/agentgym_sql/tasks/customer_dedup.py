"""Hard tier: how many different customers ordered through a channel in a period.

The work: read the hand-typed channel ('web', 'Web ', ' WEB'), the order dates in four formats, and count a
customer registered twice once (the duplicate record points at the surviving one through `merged_into`, and
old orders still reference it). The decoys skip one of the three.
"""

from __future__ import annotations

from .base import Context, Draft
from .erp import CHANNELS_ASKED, KIND, PER_DATABASE, countries_with_customers, iso_day, naive_between, period

FAMILY = "customer_dedup"
__all__ = ["FAMILY", "KIND", "PER_DATABASE", "generate"]


def generate(ctx: Context, count: int) -> list[Draft]:
    drafts: list[Draft] = []
    rng = ctx.rng
    countries = countries_with_customers(ctx)
    segments = ctx.run("SELECT segment_code, segment_label FROM customer_segments ORDER BY 1")
    for _ in range(count):
        words, first, last = period(ctx)
        channel = rng.choice(CHANNELS_ASKED)
        scope, joins, where = "", "", ""
        pick = rng.random()
        if pick < 0.35:
            country = rng.choice(countries)
            scope = f" living in {country}"
            joins = (" JOIN cities AS ci ON ci.city_id = c.city_id JOIN countries AS co ON co.country_code = "
                     "ci.country_code")
            where = f" AND co.country_name = '{country}'"
        elif pick < 0.6:
            _code, label = rng.choice(segments)
            scope = f" of the {label.lower()} segment"
            joins = " JOIN customer_segments AS sg ON sg.segment_code = c.segment_code"
            where = f" AND sg.segment_label = '{label}'"

        def query(*, joins: str = joins, where: str = where, who: str = "COALESCE(c.merged_into, c.customer_id)",
                  chosen: str = f"LOWER(TRIM(o.channel)) = '{channel}'",
                  dates: str = f"{iso_day('o.order_date')} BETWEEN '{first}' AND '{last}'") -> str:
            return (f"SELECT COUNT(DISTINCT {who}) FROM orders AS o JOIN customers AS c ON c.customer_id = "
                    f"o.customer_id{joins} WHERE {chosen} AND {dates}{where}")

        gold = query()
        question = rng.choice((
            f"How many different customers{scope} placed at least one order through the {channel} channel in {words}?",
            f"Count the distinct customers{scope} who ordered through the {channel} channel in {words}.",
            f"In {words}, how many separate customers{scope} used the {channel} channel to place an order?",
        ))
        notes = (("A customer registered twice counts once: a customer record merged into another (merged_into) "
                 "is the customer it was merged into. Every order counts, cancelled ones included. "
                 "Answer with one number."),)
        traps = (query(who="c.customer_id"), query(chosen=f"o.channel = '{channel}'"),
                  query(dates=naive_between("o.order_date", first, last)))
        drafts.append(Draft(FAMILY, question, gold, difficulty="challenging", answer_mode=True, single=True,
                            notes=notes, traps=traps))
    return drafts
