"""Data pipelines over many export files with malformed and repeated records (`exports/`, see data/exports.py).

Every question states how the files are read (the same `READING` paragraph), so the work is in doing it: gzip
files, per-file column orders, CRLF, comments, repeated headers, malformed lines, case, repeated records and
window edges. Each question's parameters are chosen among candidates so that as many shortcuts as possible
(`exports.naive_readings`, a window edge left out) give another answer; the shortcuts that do are the task's
traps, and its difficulty follows from them (`base.rate`).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from agentgym_cli.data.exports import ExportFile, Record, naive_readings, read_records
from agentgym_cli.data.fixtures import Fixture
from agentgym_cli.tasks.base import TaskSpec, shell

FAMILY = "pipeline"

READING = (
    "The folder `exports/` holds daily transaction exports, one folder per region: every file under "
    "`exports/REGION/` is one export, plain (`.csv`) or gzip-compressed (`.csv.gz`). Each file starts with a header "
    "line naming its columns `id`, `date`, `account`, `amount` and `status`. Read them this way: skip blank lines, lines "
    "starting with `#` and repeated header lines; ignore spaces around fields and Windows line ends; a line is "
    "malformed, and skipped, unless it has exactly five comma-separated fields, an `amount` that is a decimal "
    "number (such as `-12.50` or `7`) and a `date` written `YYYY-MM-DD`; compare `status` case-insensitively; a "
    "record whose `id` appeared before in a valid line (an identical copy, always in the same region) counts once "
    "(a skipped line is no record: its `id` does not count). ")

# The gold pipeline, run in the sandbox: the reading above, then the question's filter (QUESTION) and output.
GOLD = r'''
import csv, glob, gzip, re
records, seen = [], set()
for path in sorted(glob.glob("exports/*/*.csv*")):
    data = gzip.open(path, "rb").read() if path.endswith(".gz") else open(path, "rb").read()
    order = None
    for line in data.decode("utf-8").removeprefix("\ufeff").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        cells = [cell.strip() for cell in next(csv.reader([line]))]
        if order is None:
            order = cells
            continue
        if sorted(cells) == sorted(order) and set(cells) == {"id", "date", "account", "amount", "status"}:
            continue
        if len(cells) != 5:
            continue
        row = dict(zip(order, cells))
        if not re.fullmatch(r"-?\d+(\.\d+)?", row["amount"]) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", row["date"]):
            continue
        if row["id"] in seen:
            continue
        seen.add(row["id"])
        row["status"], row["amount"], row["region"] = row["status"].lower(), float(row["amount"]), path.split("/")[1]
        records.append(row)
QUESTION
'''


def _exports(fixture: Fixture) -> list[ExportFile]:
    return [ExportFile(entry.path, entry.data) for entry in fixture.files("exports/")]


def _region(record: Record) -> str:
    return record.path.split("/")[1]


def _gold(question: str) -> list[dict[str, Any]]:
    return [shell("python3 - <<'AGENTGYM_GOLD'\n" + GOLD.replace("QUESTION", question) + "AGENTGYM_GOLD")]


class Readings:
    """A workspace's export files, read as the prompt states and by each shortcut (once per workspace)."""

    def __init__(self, files: list[ExportFile]) -> None:
        self.files = files
        self.records = read_records(files)
        self.naive = {name: read(files) for name, read in naive_readings().items()}

    def traps(self, answer_of: Callable[[list[Record], bool], Any], gold: Any) -> list[str]:
        """The shortcuts whose answer differs from `gold`: each naive reading, and a window with its edges left
        out (`answer_of(records, inclusive)`)."""
        found = [name for name, records in self.naive.items() if answer_of(records, True) != gold]
        if answer_of(self.records, False) != gold:
            found.append("leaves the window's edge days out")
        return found

    def most_traps(self, candidates: Iterable[tuple[Any, Callable[[list[Record], bool], Any], Any]]
                   ) -> tuple[Any, Any, list[str]] | None:
        """Of (parameters, answer_of, gold) candidates, the question the most shortcuts get wrong (the first of
        equals) as (parameters, gold, traps); None when there is no candidate."""
        chosen: tuple[Any, Any, list[str]] | None = None
        for parameters, answer_of, gold in candidates:
            traps = self.traps(answer_of, gold)
            if chosen is None or len(traps) > len(chosen[2]):
                chosen = (parameters, gold, traps)
        return chosen


def _window(rng: random.Random, days: list[int]) -> tuple[str, str]:
    first = rng.randrange(0, max(1, len(days) - 3))
    last = rng.randrange(min(first + 2, len(days) - 1), len(days))
    return f"2024-01-{days[first]:02d}", f"2024-01-{days[last]:02d}"


def _account_total(fixture: Fixture, readings: Readings, rng: random.Random) -> TaskSpec | None:
    accounts, days = list(fixture.facts["exports_accounts"]), list(fixture.facts["exports_days"])  # type: ignore[call-overload]

    def candidates() -> Iterator[tuple[Any, Callable[[list[Record], bool], Any], Any]]:
        for _ in range(16):
            account, status = rng.choice(accounts), rng.choice(("settled", "settled", "pending", "refunded"))
            start, end = _window(rng, days)

            def answer_of(records: list[Record], inclusive: bool, account: str = account, status: str = status,
                          start: str = start, end: str = end) -> float:
                chosen = [r.amount for r in records if r.account == account and r.status == status
                          and (start <= r.date <= end if inclusive else start < r.date < end)]
                return round(sum(chosen), 2)

            if sum(1 for r in readings.records if r.account == account and r.status == status
                   and start <= r.date <= end) >= 2:
                yield (account, status, start, end), answer_of, answer_of(readings.records, True)

    best = readings.most_traps(candidates())
    if best is None:
        return None
    (account, status, start, end), gold, traps = best
    question = (f"total = sum(r['amount'] for r in records if r['account'] == {account!r} and r['status'] == "
                f"{status!r} and {start!r} <= r['date'] <= {end!r})\nprint(f'{{round(total, 2):.2f}}')\n")
    return TaskSpec(FAMILY, "account_total", READING + f"What is the total `amount` of the records of account "
                    f"`{account}` with status `{status}` dated from {start} to {end} (both days included)? Round "
                    "it to 2 decimal places.", _gold(question), answer_kind="number", expected_answer=gold,
                    check_state=False, traps=traps, inputs=len(readings.files))


def _region_count(fixture: Fixture, readings: Readings, rng: random.Random) -> TaskSpec | None:
    regions = list(fixture.facts["exports_regions"])  # type: ignore[call-overload]

    def candidates() -> Iterator[tuple[Any, Callable[[list[Record], bool], Any], Any]]:
        for _ in range(12):
            region, status = rng.choice(regions), rng.choice(("settled", "pending", "failed", "refunded"))

            def answer_of(records: list[Record], inclusive: bool, region: str = region, status: str = status) -> int:
                return sum(1 for r in records if _region(r) == region and r.status == status)

            if answer_of(readings.records, True) >= 2:
                yield (region, status), answer_of, answer_of(readings.records, True)

    best = readings.most_traps(candidates())
    if best is None:
        return None
    (region, status), gold, traps = best
    question = f"print(sum(1 for r in records if r['region'] == {region!r} and r['status'] == {status!r}))\n"
    region_files = [file for file in readings.files if file.path.startswith(f"exports/{region}/")]
    return TaskSpec(FAMILY, "region_count", READING + f"How many records with status `{status}` do the exports of "
                    f"the region `{region}` (the files under `exports/{region}/`) hold?", _gold(question),
                    answer_kind="number", expected_answer=gold, check_state=False, traps=traps,
                    inputs=len(region_files))


def _top_account(fixture: Fixture, readings: Readings, rng: random.Random) -> TaskSpec | None:
    days = list(fixture.facts["exports_days"])  # type: ignore[call-overload]

    def candidates() -> Iterator[tuple[Any, Callable[[list[Record], bool], Any], Any]]:
        for _ in range(12):
            start, end = _window(rng, days)

            def answer_of(records: list[Record], inclusive: bool, start: str = start, end: str = end) -> str:
                totals: dict[str, float] = defaultdict(float)
                for r in records:
                    if r.status == "settled" and (start <= r.date <= end if inclusive else start < r.date < end):
                        totals[r.account] += r.amount
                ranked = sorted(totals.items(), key=lambda item: (-round(item[1], 2), item[0]))
                return ranked[0][0] if ranked else ""

            totals: dict[str, float] = defaultdict(float)
            for r in readings.records:
                if r.status == "settled" and start <= r.date <= end:
                    totals[r.account] += r.amount
            ranked = sorted((round(total, 2) for total in totals.values()), reverse=True)
            if len(ranked) >= 2 and ranked[0] - ranked[1] >= 0.01:  # a tie has no single answer
                yield (start, end), answer_of, answer_of(readings.records, True)

    best = readings.most_traps(candidates())
    if best is None:
        return None
    (start, end), gold, traps = best
    question = ("from collections import defaultdict\ntotals = defaultdict(float)\nfor r in records:\n"
                f"    if r['status'] == 'settled' and {start!r} <= r['date'] <= {end!r}:\n"
                "        totals[r['account']] += r['amount']\nprint(max(totals, key=totals.get))\n")
    return TaskSpec(FAMILY, "top_account", READING + "Which account has the largest total `amount` of `settled` "
                    f"records dated from {start} to {end} (both days included), over all regions (no two accounts "
                    "tie)? Answer with the account id, such as `ACC-1234`.", _gold(question), answer_kind="text", expected_answer=gold,
                    check_state=False, traps=traps, inputs=len(readings.files))


def specs(fixture: Fixture, rng: random.Random) -> list[TaskSpec]:
    """Up to six pipeline questions on `fixture`'s exports: two of each template, with other parameters."""
    readings = Readings(_exports(fixture))
    made: list[TaskSpec] = []
    for make in (_account_total, _region_count, _top_account):
        for _ in range(2):
            spec = make(fixture, readings, rng)
            if spec is not None and all(spec.prompt != other.prompt for other in made):
                spec.template += f"-{sum(other.template.startswith(spec.template) for other in made)}"
                made.append(spec)
    return made
