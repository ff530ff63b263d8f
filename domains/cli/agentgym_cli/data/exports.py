"""Daily transaction exports for the `pipeline` family: many files, mixed formats, malformed and repeated records.

`exports/REGION/YYYY-MM-DD.csv` (some gzip-compressed as `.csv.gz`) hold records `id, date, account, amount,
status`. What makes reading them real work varies per workspace and per file:
- each file's header gives its own column order (two orders per workspace);
- some files have CRLF line ends, a UTF-8 byte-order mark, comment lines (`# ...`), blank lines, spaces around
  fields, or the header repeated in the middle (two exports concatenated);
- malformed lines: a wrong number of fields, an amount that is not a number (`N/A`, empty, `12.5.0`), a date not
  written `YYYY-MM-DD` (`03/01/2024`);
- status words in mixed case (`settled`, `Settled`, `SETTLED`);
- some records exported twice, in the same region's files (identical values, possibly another column order);
- record dates that fall exactly on the edges of the windows the questions ask about.

`read_records` is the reading the prompts state, done in Python; `naive_readings` are the shortcuts a careless
pipeline takes, each a function of its own, so a generator can check that a question tells them apart.
"""

from __future__ import annotations

import csv
import gzip
import io
import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

FIELDS = ("id", "date", "account", "amount", "status")
STATUSES = ("settled", "pending", "failed", "refunded")
REGIONS = ("north", "south", "east", "west", "central", "coast")
_AMOUNT = re.compile(r"-?\d+(?:\.\d+)?")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Record:
    """One valid record as the prompts define it (status folded to lower case, amount a number)."""

    id: str
    date: str
    account: str
    amount: float
    status: str
    path: str


@dataclass(frozen=True)
class ExportFile:
    """One export file: its path under the workspace and its bytes (gzip-compressed when the path ends in .gz)."""

    path: str
    data: bytes


def _amount_text(rng: random.Random) -> str:
    cents = rng.randint(-5000, 250000)
    if rng.random() < 0.15:
        return str(cents // 100)  # a whole amount, written without decimals
    return f"{cents / 100:.2f}"


def build_exports(rng: random.Random) -> tuple[list[ExportFile], dict[str, object]]:
    """The export files of one workspace and the facts generators ask about (accounts, days, regions)."""
    regions = rng.sample(REGIONS, rng.randint(3, 5))
    accounts = [f"ACC-{rng.randint(1000, 9999)}" for _ in range(rng.randint(5, 9))]
    accounts = sorted(set(accounts))
    orders = [list(FIELDS), rng.sample(list(FIELDS), len(FIELDS))]
    days = sorted(rng.sample(range(1, 29), rng.randint(8, 14)))
    files: list[ExportFile] = []
    next_id = rng.randint(1000, 5000)
    for region in regions:
        previous_lines: list[dict[str, str]] = []  # copies stay within a region: a region's question is clear
        for day in sorted(rng.sample(days, rng.randint(max(3, len(days) // 2), len(days)))):
            order = rng.choice(orders)
            rows: list[str] = []
            for _ in range(rng.randint(4, 14)):
                next_id += rng.randint(1, 3)
                # A record's own date is its export day or the day before (late arrivals): windows cut across files.
                record_day = max(1, day - (1 if rng.random() < 0.3 else 0))
                status = rng.choice(STATUSES)
                status = rng.choice((status, status, status.capitalize(), status.upper()))
                values = {"id": f"T{next_id:06d}", "date": f"2024-01-{record_day:02d}",
                          "account": rng.choice(accounts), "amount": _amount_text(rng), "status": status}
                previous_lines.append(values)
                rows.append(_line(values, order, rng))
            if previous_lines and rng.random() < 0.35:  # a record exported again, in this file's column order
                rows.insert(rng.randrange(len(rows) + 1), _line(rng.choice(previous_lines[:-1] or previous_lines),
                                                                order, rng, spaced=False))
            for _ in range(rng.randint(0, 2)):  # malformed lines
                rows.insert(rng.randrange(len(rows) + 1), _malformed(order, accounts, rng, next_id))
                next_id += 1
            header = ",".join(order)
            if rng.random() < 0.15:  # two exports concatenated: the header again in the middle
                rows.insert(rng.randrange(1, len(rows) + 1), header)
            if rng.random() < 0.2:
                rows.insert(0, f"# exported {region} 2024-01-{day:02d}")
            if rng.random() < 0.2:
                rows.insert(rng.randrange(len(rows) + 1), "")
            newline = "\r\n" if rng.random() < 0.3 else "\n"
            text = newline.join([header, *rows]) + newline
            data = (("\ufeff" if rng.random() < 0.15 else "") + text).encode("utf-8")
            path = f"exports/{region}/2024-01-{day:02d}.csv"
            if rng.random() < 0.3:
                files.append(ExportFile(path + ".gz", gzip.compress(data, mtime=0)))
            else:
                files.append(ExportFile(path, data))
    facts = {"accounts": accounts, "regions": sorted(regions), "days": days}
    return files, facts


def _line(values: dict[str, str], order: list[str], rng: random.Random, *, spaced: bool = True) -> str:
    cells = [values[name] for name in order]
    if spaced and rng.random() < 0.1:
        cells = [f" {cell} " if rng.random() < 0.5 else cell for cell in cells]
    return ",".join(cells)


def _malformed(order: list[str], accounts: list[str], rng: random.Random, number: int) -> str:
    values = {"id": f"T{number:06d}", "date": f"2024-01-{rng.randint(1, 28):02d}", "account": rng.choice(accounts),
              "amount": _amount_text(rng), "status": rng.choice(STATUSES)}
    kind = rng.choice(("fields", "amount", "date"))
    if kind == "amount":
        values["amount"] = rng.choice(("N/A", "", "12.5.0", "1e3x", "--"))
    elif kind == "date":
        values["date"] = f"01/{rng.randint(1, 28):02d}/2024"
    cells = [values[name] for name in order]
    if kind == "fields":
        cells = cells[:-1] if rng.random() < 0.5 else [*cells, "extra"]
    return ",".join(cells)


# ------------------------------------------------------------------------------------------------ readings
def _text_of(file: ExportFile) -> str:
    data = gzip.decompress(file.data) if file.path.endswith(".gz") else file.data
    return data.decode("utf-8")


def read_records(files: Iterable[ExportFile], *, gz: bool = True, dedupe: bool = True, fold_case: bool = True,
                 per_file_header: bool = True, strip: bool = True) -> list[Record]:
    """The valid records of `files`, read as the prompts state (every keyword at its default): gzip files
    included, each file by its own header, spaces around fields and CRLF dropped, comment, blank and header
    lines skipped, malformed lines left out, status case-folded, a repeated `id` kept once (its first copy in
    path order). A keyword set to False is one of the shortcuts `naive_readings` names."""
    records: list[Record] = []
    seen: set[str] = set()
    first_order: list[str] | None = None
    for file in sorted(files, key=lambda item: item.path):
        if file.path.endswith(".gz") and not gz:
            continue
        text = _text_of(file).removeprefix("\ufeff")
        lines = text.split("\n") if not strip else text.splitlines()
        order: list[str] | None = None
        for raw in lines:
            line = raw.strip() if strip else raw
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            cells = next(csv.reader(io.StringIO(line)))
            cells = [cell.strip() for cell in cells] if strip else cells
            if order is None:
                order = cells if per_file_header or first_order is None else first_order
                first_order = first_order or cells
                continue
            if cells == order or sorted(cells) == sorted(FIELDS):
                continue  # the header again
            if len(cells) != len(order):
                continue
            values = dict(zip(order, cells))
            if not _AMOUNT.fullmatch(values.get("amount", "")) or not _DATE.fullmatch(values.get("date", "")):
                continue
            if dedupe and values["id"] in seen:
                continue
            seen.add(values["id"])
            status = values["status"].lower() if fold_case else values["status"]
            records.append(Record(values["id"], values["date"], values["account"], float(values["amount"]), status,
                                  file.path))
    return records


def naive_readings() -> dict[str, Callable[[Iterable[ExportFile]], list[Record]]]:
    """Shortcuts a careless pipeline takes, by name: each differs from `read_records` in one way."""
    return {
        "skips .gz files": lambda files: read_records(files, gz=False),
        "counts repeated records twice": lambda files: read_records(files, dedupe=False),
        "matches status case-sensitively": lambda files: read_records(files, fold_case=False),
        "assumes one column order": lambda files: read_records(files, per_file_header=False),
        "keeps CRLF and spaces": lambda files: read_records(files, strip=False),
    }
