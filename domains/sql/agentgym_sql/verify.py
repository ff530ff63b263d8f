"""Execution accuracy: run the submitted query, compare its result with the gold query's result.

Three strengths are computed for every submission and all reported in the breakdown: `set` (BIRD's: same
distinct rows), `multiset` (same rows with multiplicity) and `ordered` (same rows in the same order). The
task's `verifier.params.match` says which one is the reward. Values are normalised first so that engines
agree: decimals and floats compare rounded to 4 places, integral floats equal integers, dates and timestamps
compare as ISO text.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from collections import Counter
from typing import TYPE_CHECKING, Any

from agentgym import Score, Task, verifier
from agentgym.rewards import normalize_text, to_number

from .data.engines import SqlError

if TYPE_CHECKING:
    from .tools import SqlEpisode

MATCHES = ("set", "multiset", "ordered")
MAX_SUBMITTED_ROWS = 10_000  # no gold result is this long, so a longer one is wrong without reading it all


def normalize_value(value: Any) -> Any:
    """One cell in a form every engine agrees on (and JSON can hold)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, (float, decimal.Decimal)):
        number = float(value)
        if not math.isfinite(number):
            return str(number)
        rounded = round(number, 4)
        return int(rounded) if rounded.is_integer() and abs(rounded) < 2**53 else rounded
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S") + (f".{value.microsecond:06d}" if value.microsecond else "")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return normalize_value(value.total_seconds() / 86400)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    return str(value)


def normalize_rows(rows: list[tuple[Any, ...]] | list[list[Any]]) -> list[list[Any]]:
    return [[normalize_value(cell) for cell in row] for row in rows]


def _key(row: list[Any]) -> str:
    return json.dumps(row, sort_keys=True, default=str)


def compare(got: list[list[Any]], gold: list[list[Any]]) -> dict[str, float]:
    """Set, multiset and ordered equality of two normalised results, plus their row overlap (Jaccard)."""
    got_keys = [_key(row) for row in got]
    gold_keys = [_key(row) for row in gold]
    got_set, gold_set = set(got_keys), set(gold_keys)
    union = got_set | gold_set
    return {
        "set": float(got_set == gold_set),
        "multiset": float(Counter(got_keys) == Counter(gold_keys)),
        "ordered": float(got_keys == gold_keys),
        "overlap": len(got_set & gold_set) / len(union) if union else 1.0,
    }


def _answer_cells(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        cells: list[Any] = []
        for item in value:
            cells.extend(_answer_cells(item))
        return cells
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                return _answer_cells(json.loads(text))
            except json.JSONDecodeError:
                pass
        if "," in text and to_number(text.replace(",", "")) is None:
            return [part.strip() for part in text.split(",") if part.strip()]
    return [value]


def _same_cell(got: Any, gold: Any) -> bool:
    if isinstance(gold, (int, float)) and not isinstance(gold, bool):
        number = to_number(got)
        return number is not None and math.isclose(number, float(gold), rel_tol=1e-6, abs_tol=5e-3)
    if gold is None:
        return got is None or normalize_text(got) in ("null", "none", "")
    return normalize_text(got) == normalize_text(gold)


def answer_matches(value: Any, gold_rows: list[list[Any]]) -> bool:
    """Whether a plain answer (a number, a text, a list of them) equals the gold result's cells, in any order."""
    gold_cells = [cell for row in gold_rows for cell in row]
    got_cells = _answer_cells(value)
    if len(got_cells) != len(gold_cells):
        return False
    remaining = list(gold_cells)
    for cell in got_cells:
        match = next((index for index, gold in enumerate(remaining) if _same_cell(cell, gold)), None)
        if match is None:
            return False
        remaining.pop(match)
    return True


@verifier("sql_execution")
def sql_execution(task: Task, submission: Any, state: SqlEpisode | None, *, match: str = "set",
                  mode: str = "sql") -> Score:
    """Score a `submit(sql)` by execution accuracy (`match`: set, multiset or ordered) or a
    `submit_answer(value)` by comparing the value with the gold result's cells."""
    if match not in MATCHES:
        raise ValueError(f"task {task.id}: match must be one of {MATCHES}, got {match!r}")
    if state is None:
        raise ValueError("sql_execution needs the episode state (the database connection)")
    gold_rows = state.gold_rows()
    if not isinstance(submission, dict):
        return Score(0.0, {"executes": 0.0}, "nothing was submitted")
    if "answer" in submission:
        ok = answer_matches(submission["answer"], gold_rows)
        return Score(float(ok), {"answer_match": float(ok)}, "" if ok else "the answer differs from the gold result")
    try:
        result = state.engine.execute(str(submission.get("sql", "")), max_rows=MAX_SUBMITTED_ROWS)
    except SqlError as error:
        return Score(0.0, {"executes": 0.0, **{m: 0.0 for m in MATCHES}}, f"the submitted query failed: {error}")
    if result.truncated:
        return Score(0.0, {"executes": 1.0, **{m: 0.0 for m in MATCHES}},
                     f"the query returned {result.total_rows} rows, far more than the answer has")
    components = compare(normalize_rows(result.rows), gold_rows)
    components["executes"] = 1.0
    value = components[match]
    return Score(value, components, "" if value else f"the result differs from the gold result ({match} match)")
