"""Word lists and small random helpers shared by the database generators.

Everything takes an explicit `random.Random`, so a database is a pure function of its seed.
"""

from __future__ import annotations

import datetime as dt
import random

FIRST_NAMES = (
    "Ada", "Alan", "Amara", "Ana", "Arjun", "Beatriz", "Ben", "Carlos", "Chen", "Chloe", "Dmitri", "Elena",
    "Emeka", "Emma", "Farah", "Felix", "Grace", "Hana", "Hugo", "Ines", "Ivan", "Jamal", "Jin", "Julia",
    "Kofi", "Lara", "Leo", "Lina", "Luis", "Maya", "Mei", "Mohammed", "Nadia", "Noah", "Olga", "Omar",
    "Priya", "Quinn", "Rafael", "Rosa", "Sam", "Sara", "Tariq", "Tomas", "Uma", "Victor", "Wen", "Yara",
    "Yusuf", "Zoe",
)
LAST_NAMES = (
    "Abara", "Ahmed", "Alvarez", "Berg", "Brown", "Castillo", "Chen", "Costa", "Dubois", "Evans", "Fischer",
    "Garcia", "Gupta", "Hansen", "Ito", "Jensen", "Kim", "Kowalski", "Lopez", "Martin", "Meyer", "Mensah",
    "Nakamura", "Novak", "Okafor", "Olsen", "Patel", "Petrov", "Quispe", "Rossi", "Sato", "Schmidt",
    "Silva", "Singh", "Smith", "Tanaka", "Walker", "Wang", "Weber", "Yilmaz",
)
CITIES = (
    "Austin", "Boston", "Chicago", "Denver", "Lisbon", "Lyon", "Madrid", "Nairobi", "Osaka", "Oslo",
    "Porto", "Seattle", "Toronto", "Valencia", "Zurich",
)
COUNTRIES = {
    "Austin": "USA", "Boston": "USA", "Chicago": "USA", "Denver": "USA", "Seattle": "USA",
    "Lisbon": "Portugal", "Porto": "Portugal", "Lyon": "France", "Madrid": "Spain", "Valencia": "Spain",
    "Nairobi": "Kenya", "Osaka": "Japan", "Oslo": "Norway", "Toronto": "Canada", "Zurich": "Switzerland",
}


def person_name(rng: random.Random) -> str:
    return f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"


def messy(rng: random.Random, text: str, rate: float = 0.15) -> str:
    """Return `text`, or at `rate` a variant with odd case or stray spaces (the quirks real data has)."""
    if rng.random() >= rate:
        return text
    kind = rng.randrange(4)
    if kind == 0:
        return text.upper()
    if kind == 1:
        return text.lower()
    if kind == 2:
        return f" {text}"
    return f"{text}  "


def maybe(rng: random.Random, value: object, null_rate: float) -> object:
    """`value`, or None at `null_rate`."""
    return None if rng.random() < null_rate else value


def day(rng: random.Random, start: str, end: str) -> str:
    """A uniformly random ISO date between `start` and `end` (inclusive)."""
    first = dt.date.fromisoformat(start)
    span = (dt.date.fromisoformat(end) - first).days
    return (first + dt.timedelta(days=rng.randint(0, span))).isoformat()


def moment(rng: random.Random, start: str, end: str) -> str:
    """A random timestamp 'YYYY-MM-DD HH:MM:SS' between two dates, on the minute."""
    return f"{day(rng, start, end)} {rng.randint(0, 23):02d}:{rng.choice((0, 15, 30, 45, rng.randint(0, 59))):02d}:00"


def shift(timestamp: str, minutes: int) -> str:
    """`timestamp` moved by `minutes`, same format."""
    moved = dt.datetime.fromisoformat(timestamp) + dt.timedelta(minutes=minutes)
    return moved.strftime("%Y-%m-%d %H:%M:%S")


def add_days(date: str, days: int) -> str:
    return (dt.date.fromisoformat(date[:10]) + dt.timedelta(days=days)).isoformat()
