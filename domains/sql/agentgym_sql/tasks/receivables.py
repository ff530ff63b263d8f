"""Hard tier: invoices of a period still not fully paid on a given day.

The work: add up each invoice's payments up to the day, counting settled payments only (a payment that
bounced is logged as reversed, then paid again), and keep the invoices that have no payment at all (an inner
join or a GROUP BY over payments loses them). The decoys join instead of keeping unpaid invoices, count
reversed payments, or ignore the day.
"""

from __future__ import annotations

import datetime as dt

from ..data.erp import CURRENCY_NAMES
from .base import Context, Draft
from .erp import KIND, MONTH_NAMES, PER_DATABASE, period

FAMILY = "receivables"
__all__ = ["FAMILY", "KIND", "PER_DATABASE", "generate"]


def generate(ctx: Context, count: int) -> list[Draft]:
    drafts: list[Draft] = []
    rng = ctx.rng
    currencies = [row[0] for row in ctx.run("SELECT DISTINCT currency_code FROM invoices ORDER BY 1")]
    for _ in range(count):
        words, first, last = period(ctx)
        cutoff = dt.date.fromisoformat(last) + dt.timedelta(days=rng.choice((0, 15, 30, 45, 60, 90)))
        day = f"{MONTH_NAMES[cutoff.month - 1]} {cutoff.day}, {cutoff.year}"
        counted = rng.random() < 0.6
        currency = "" if counted else rng.choice(currencies)  # a balance adds amounts of one currency only
        in_currency = f" AND i.currency_code = '{currency}'" if currency else ""

        def query(*, counted: bool = counted, first: str = first, last: str = last, in_currency: str = in_currency,
                  settled: str = " AND p.payment_status = 'settled'", until: str = f" AND p.paid_on <= "
                  f"'{cutoff.isoformat()}'", keep_unpaid: bool = True) -> str:
            paid = (f"(SELECT SUM(p.amount) FROM payments AS p WHERE p.invoice_id = i.invoice_id{settled}{until})")
            what = "COUNT(*)" if counted else "ROUND(SUM(i.amount - COALESCE(paid, 0)), 2)"
            rows = (f"SELECT i.invoice_id, i.amount, {paid} AS paid FROM invoices AS i WHERE i.issued_on BETWEEN "
                    f"'{first}' AND '{last}'{in_currency}")
            unpaid = "ROUND(i.amount, 2) > ROUND(COALESCE(paid, 0), 2)" if keep_unpaid else \
                "paid IS NOT NULL AND ROUND(i.amount, 2) > ROUND(paid, 2)"
            return f"SELECT {what} FROM ({rows}) AS i WHERE {unpaid}"

        gold = query()
        if counted:
            question = rng.choice((
                f"How many invoices issued in {words} were not yet fully paid on {day}?",
                f"Count the invoices issued in {words} that still had an unpaid balance on {day}.",
            ))
            answer = "Answer with one number."
        else:
            money = f"{CURRENCY_NAMES[currency]} ({currency})"
            question = rng.choice((
                f"What unpaid balance was left on {day} on the invoices in {money} issued in {words}?",
                f"Add up what was still owed on {day} on the {money} invoices issued in {words}.",
            ))
            answer = (f"Give the sum of the amounts still owed (amount minus what was paid by then), in {currency}, "
                      "as one number rounded to 2 decimals.")
        notes = (("An invoice is fully paid once its settled payments made on or before that day add up to its "
                 f"amount; a reversed payment does not count. {answer}"),)
        traps = (query(keep_unpaid=False), query(settled=""), query(until=""))
        drafts.append(Draft(FAMILY, question, gold, difficulty="challenging", answer_mode=True, single=True,
                            notes=notes, traps=traps))
    return drafts
