"""Finance: branches, clients, accounts, loans and a million card and bank transactions.

The largest database: built once and cached (see `build.py`), since writing a million rows takes seconds.
"""

from __future__ import annotations

import random

from .schema import Column, DatabaseSpec, Rows, Table, key, ref
from .vocab import CITIES, add_days, day, maybe, messy, person_name

MERCHANTS = ("Alpine Grocers", "Beacon Fuel", "Cedar Pharmacy", "Delta Books", "Echo Cinema", "Fern Cafe",
             "Granite Hardware", "Harbor Fish", "Iris Florist", "Juniper Travel", "Kite Electronics",
             "Lotus Spa")
TRANSACTIONS = 1_000_000

TABLES = (
    Table("branches", "branch", "branches", (
        key("branch_id"),
        Column("branch_name", "text", role="label", phrase="name"),
        Column("city", "text", role="category"),
        Column("opened_on", "date", role="date", phrase="opening date"),
    )),
    Table("clients", "client", "clients", (
        key("client_id"),
        Column("full_name", "text", role="label", phrase="name", messy=True),
        Column("city", "text", role="category", messy=True),
        Column("risk_rating", "text", role="category", phrase="risk rating", nullable=True),
        Column("birth_date", "date", role="date", phrase="date of birth"),
    )),
    Table("accounts", "account", "accounts", (
        key("account_id"),
        Column("iban", "text", role="label", phrase="IBAN"),
        ref("client_id", "clients.client_id"),
        ref("branch_id", "branches.branch_id"),
        Column("account_type", "text", role="category", phrase="account type"),
        Column("opened_on", "date", role="date", phrase="opening date"),
        Column("closed_on", "date", role="date", phrase="closing date", nullable=True),
        Column("balance", "money", role="measure"),
    )),
    Table("loans", "loan", "loans", (
        key("loan_id"),
        ref("account_id", "accounts.account_id"),
        Column("principal", "money", role="measure"),
        Column("interest_rate", "real", role="measure", phrase="interest rate"),
        Column("issued_on", "date", role="date", phrase="issue date"),
        Column("loan_status", "text", role="category", phrase="loan status"),
    )),
    Table("transactions", "transaction", "transactions", (
        key("transaction_id"),
        ref("account_id", "accounts.account_id"),
        Column("posted_at", "timestamp", role="date", phrase="posting time"),
        Column("amount", "money", role="measure"),
        Column("kind", "text", role="category", phrase="transaction kind"),
        Column("merchant", "text", role="category", nullable=True),
    ), large=True),
)


def build_rows(rng: random.Random, scale: int) -> Rows:
    branches = [(i, f"{city} Branch", city, day(rng, "1990-01-01", "2015-12-31")) for i, city in enumerate(CITIES, 1)]
    clients = [(i, messy(rng, person_name(rng), 0.08), messy(rng, rng.choice(CITIES), 0.1),
                maybe(rng, rng.choice(("low", "medium", "high")), 0.2), day(rng, "1940-01-01", "2005-12-31"))
               for i in range(1, 6001)]
    accounts = []
    for i in range(1, 9001):
        opened = day(rng, "2010-01-01", "2024-06-30")
        closed = maybe(rng, add_days(opened, rng.randint(30, 2000)), 0.85)
        accounts.append((i, f"XX{rng.randint(10, 99)}BANK{i:010d}", rng.randint(1, 6000), rng.randint(1, len(CITIES)),
                         rng.choice(("checking", "savings", "business")), opened, closed,
                         round(rng.uniform(-500, 50000), 2)))
    loans = [(i, rng.randint(1, 9000), float(rng.choice((5000, 10000, 20000, 50000, 100000))),
              rng.choice((2.5, 3.1, 3.9, 4.5, 5.25, 6.0)), day(rng, "2015-01-01", "2024-06-30"),
              rng.choice(("current", "current", "current", "late", "repaid", "default")))
             for i in range(1, 2501)]
    count = TRANSACTIONS * scale
    # Drawn column by column (rng.choices is vectorised in C), which keeps a million rows to a few seconds.
    account_ids = rng.choices(range(1, 9001), k=count)
    days = rng.choices(range(731), k=count)
    minutes = rng.choices(range(1440), k=count)
    cents = rng.choices(range(100, 50000), k=count)
    kinds = rng.choices(("card", "transfer", "deposit", "fee", "withdrawal"), (50, 20, 15, 5, 10), k=count)
    merchants = rng.choices(MERCHANTS + (None,) * 6, k=count)
    import datetime as dt
    base = dt.datetime(2023, 1, 1)
    stamps = [(base + dt.timedelta(days=d)).strftime("%Y-%m-%d") for d in range(731)]
    transactions = [
        (i + 1, account_ids[i], f"{stamps[days[i]]} {minutes[i] // 60:02d}:{minutes[i] % 60:02d}:00",
         (cents[i] if kinds[i] == "deposit" else -cents[i]) / 100.0, kinds[i],
         merchants[i] if kinds[i] == "card" else None)
        for i in range(count)
    ]
    return {"branches": branches, "clients": clients, "accounts": accounts, "loans": loans,
            "transactions": transactions}


SPEC = DatabaseSpec(
    name="finance", split="test", tables=TABLES, build_rows=build_rows,
    indexes=("transactions.kind", "transactions.posted_at"),
    description="A retail bank: branches, clients, accounts, loans and a million transactions.",
)
