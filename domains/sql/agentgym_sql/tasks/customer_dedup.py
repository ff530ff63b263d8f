"""Hard tier: how many different customers ordered through a channel in a period.

The work: read the hand-typed channel ('web', 'Web ', ' WEB'), the order dates in four formats, and count a
customer registered twice once (the duplicate record points at the surviving one through `merged_into`, and
old orders still reference it). Half the questions ask who ordered in one period and not at all in the next,
where a customer whose orders sit under both of their records must not look lapsed. The decoys skip one of
the three.
"""

from __future__ import annotations

from .base import Context, Draft
from .erp import (
    CHANNELS_ASKED,
    KIND,
    PER_DATABASE,
    countries_with_customers,
    iso_day,
    naive_between,
    next_period,
    period,
)

FAMILY = "customer_dedup"
__all__ = ["FAMILY", "KIND", "PER_DATABASE", "generate"]


def generate(ctx: Context, count: int) -> list[Draft]:
    drafts: list[Draft] = []
    rng = ctx.rng
    countries = countries_with_customers(ctx)
    segments = ctx.run("SELECT segment_code, segment_label FROM customer_segments ORDER BY 1")
    for _ in range(count):
        words, first, last = period(ctx, last_year=2023)
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

        who = "COALESCE(c.merged_into, c.customer_id)"
        chosen = f"LOWER(TRIM(o.channel)) = '{channel}'"
        day = iso_day("o.order_date")
        churn = rng.random() < 0.5
        later_words, later_first, later_last = next_period(words, first, last)

        def query(*, joins: str = joins, where: str = where, who: str = who, chosen: str = chosen, day: str = day,
                  first: str = first, last: str = last, churn: bool = churn, later_first: str = later_first,
                  later_last: str = later_last, naive: bool = False) -> str:
            def within(start: str, end: str) -> str:
                return naive_between("o.order_date", start, end) if naive else f"{day} BETWEEN '{start}' AND '{end}'"

            rows = f"FROM orders AS o JOIN customers AS c ON c.customer_id = o.customer_id{joins}"
            asked = f"SELECT COUNT(DISTINCT {who}) {rows} WHERE {chosen} AND {within(first, last)}{where}"
            if not churn:
                return asked
            return (f"{asked} AND {who} NOT IN (SELECT {who} {rows} WHERE {within(later_first, later_last)})")

        if churn:
            question = rng.choice((
                (f"How many different customers{scope} who ordered through the {channel} channel in {words} placed "
                 f"no order at all (through any channel) in {later_words}?"),
                (f"Count the distinct customers{scope} with at least one {channel}-channel order in {words} but no "
                 f"order of any kind in {later_words}."),
            ))
        else:
            question = rng.choice((
                (f"How many different customers{scope} placed at least one order through the {channel} channel in "
                 f"{words}?"),
                f"Count the distinct customers{scope} who ordered through the {channel} channel in {words}.",
                f"In {words}, how many separate customers{scope} used the {channel} channel to place an order?",
            ))
        notes = (("A customer registered twice counts once, whichever of their records an order was placed under. "
                  "Every order counts, cancelled ones included. Answer with one number."),)
        traps = (query(who="c.customer_id"), query(chosen=f"o.channel = '{channel}'"), query(naive=True))
        drafts.append(Draft(FAMILY, question, query(), difficulty="challenging", answer_mode=True, single=True,
                            notes=notes, traps=traps))
    return drafts
