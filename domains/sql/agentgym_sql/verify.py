"""Execution accuracy: run the submitted query, compare its result with the gold query's result.

A task asks either for a query (`verifier.params.mode == "sql"`, answered with `submit(sql)`) or for a value
(`mode == "answer"`, answered with `submit_answer(value)`); each is scored only on what it asked for.

Queries: three strengths are computed for every submission and all reported in the breakdown: `set` (BIRD's:
same distinct rows), `multiset` (same rows with multiplicity) and `ordered` (same rows in the same order).
Text cells compare without their surrounding spaces. The
task's `verifier.params.match` says which one is the reward. Rows are compared whole (cells of different rows
never recombine); integers compare exactly, a float compares with a tolerance relative to the gold value
(`RESULT_REL_TOL`), so distinct small values stay distinct. A task may carry alternative gold queries
(`verifier.params.alternatives`); matching any gold scores 1.

Ordering and ties: a gold ordered on a sort key (`verifier.params.order_key`, the indices of the key's
columns in the result of `order_sql`, or in the gold's own result when `order_sql` is absent) has several right
answers when rows tie on the key: rows equal on the key may come in any order, and where the gold ends with
`LIMIT` (`limited`) inside a run of ties, any rows of that run (read from `order_sql`, the gold without its
`LIMIT`, the key's columns appended after the gold's own when the key is not among them) complete the answer.
A submission that fails the plain comparison is accepted when it is consistent with the ordering in this way.

Columns: a query's columns may come in any order (`verifier.params.column_order`, default "any"): when the
result does not match as returned, each order of its columns that puts the same distinct values under each
gold column is tried. A task whose prompt fixes the order (two columns of the same kind, such as two
averages, that only their position tells apart) sets `column_order="fixed"`.

Answers: the value is read into rows of the gold's shape (a scalar for one cell; a list for one column, its
items one per row; a list of rows, or a flat row-major list, for several columns) and the rows are matched
one to one with the gold rows (in order when the task's match is `ordered`). Cells of a row may come in any
order. Numbers are read with `agentgym.answers.parse_number`; an integer gold needs the exact number, a float
gold is matched within `ANSWER_REL_TOL` of it; text compares with `agentgym.answers.normalize_text`.
"""

from __future__ import annotations

import bisect
import datetime as dt
import decimal
import functools
import json
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from agentgym import Score, Task, verifier
from agentgym.answers import normalize_text, numbers_match, parse_date, parse_list, parse_number

from .data.engines import QueryLimitError, SqlError

if TYPE_CHECKING:
    from .tools import SqlEpisode

MATCHES = ("set", "multiset", "ordered")
MODES = ("sql", "answer")
COLUMN_ORDERS = ("any", "fixed")  # whether a query's columns may come in another order than the gold's
MAX_COLUMN_ORDERS = 720  # column orders tried at most (all of them up to 6 interchangeable columns)
RESULT_REL_TOL = 1e-6  # a float cell of a query result vs the gold's (same engine: far tighter in practice)
ANSWER_REL_TOL = 1e-4  # a typed number vs a float gold: about five significant digits
SET_ROW_FACTOR, SET_ROW_MARGIN = 10, 1000  # set match reads at most 10 x gold + 1000 rows (duplicates allowed)
ANSWER_FORMAT = 2  # metadata["answer_format"] of tasks whose stored answer is exact (floats not rounded)
_MATCHING_LIMIT = 256  # rows of one group beyond which near-equal floats are not re-paired exhaustively

Row = list[Any]


def normalize_value(value: Any) -> Any:
    """One cell in a form every engine agrees on (and JSON can hold); floats are kept exact."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, decimal.Decimal):
        if value.is_finite() and value == value.to_integral_value():
            return int(value)
        value = float(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return int(value) if value.is_integer() and abs(value) < 2**53 else value
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


def normalize_rows(rows: Sequence[Sequence[Any]]) -> list[Row]:
    return [[normalize_value(cell) for cell in row] for row in rows]


# ------------------------------------------------------------------------------------- comparing results
def _key(row: Sequence[Any]) -> str:
    # Text compares without its surrounding spaces: the generated data stores names with stray spaces on purpose,
    # and a query that trims them names the same rows (playtest #44).
    return json.dumps([cell.strip() if isinstance(cell, str) else cell for cell in row], default=str)


class GoldResult(list[Row]):
    """A gold query's normalised result (a list of rows) that keeps its rows' keys: a gold is compared with every
    submission of every episode of its task, so its rows are serialised once, not once per comparison."""

    @functools.cached_property
    def keys(self) -> list[str]:
        return [_key(row) for row in self]

    @functools.cached_property
    def key_set(self) -> frozenset[str]:
        return frozenset(self.keys)

    @functools.cached_property
    def key_counts(self) -> Counter[str]:
        return Counter(self.keys)


def _keys(rows: Sequence[Row]) -> list[str]:
    return rows.keys if isinstance(rows, GoldResult) else [_key(row) for row in rows]


def _key_set(rows: Sequence[Row]) -> frozenset[str] | set[str]:
    return rows.key_set if isinstance(rows, GoldResult) else set(map(_key, rows))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _same_cell(got: Any, gold: Any) -> bool:
    if isinstance(got, float) or isinstance(gold, float):
        return _is_number(got) and _is_number(gold) and numbers_match(got, gold, rel_tol=RESULT_REL_TOL)
    if isinstance(got, str) and isinstance(gold, str):
        return got.strip() == gold.strip()
    return type(got) is type(gold) and got == gold


def _same_row(got: Sequence[Any], gold: Sequence[Any]) -> bool:
    return len(got) == len(gold) and all(_same_cell(a, b) for a, b in zip(got, gold))


def _has_float(rows: Sequence[Sequence[Any]]) -> bool:
    return any(isinstance(cell, float) for row in rows for cell in row)


def _exact_part(row: Sequence[Any]) -> str:
    """The row with its numbers blanked: rows that can match under tolerance share it."""
    return _key(["\x00#" if _is_number(cell) else cell for cell in row])


def _numbers(row: Sequence[Any]) -> tuple[float, ...]:
    return tuple(float(cell) for cell in row if _is_number(cell))


def _groups(rows: Sequence[Row]) -> dict[str, list[Row]]:
    grouped: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        grouped[_exact_part(row)].append(row)
    return grouped


def bipartite_match(left: Sequence[Any], right: Sequence[Any], fits: Callable[[Any, Any], bool]) -> bool:
    """Whether every item of `left` pairs with a distinct item of `right` (same sizes), by augmenting paths."""
    if len(left) != len(right):
        return False
    options = [[j for j, candidate in enumerate(right) if fits(item, candidate)] for item in left]
    owner: list[int | None] = [None] * len(right)

    def place(i: int, seen: set[int]) -> bool:
        for j in options[i]:
            if j in seen:
                continue
            seen.add(j)
            current = owner[j]
            if current is None or place(current, seen):
                owner[j] = i
                return True
        return False

    return all(place(i, set()) for i in range(len(left)))


def _multiset_equal(got: Sequence[Row], gold: Sequence[Row], got_keys: Sequence[str]) -> bool:
    if len(got) != len(gold):
        return False
    gold_counts = gold.key_counts if isinstance(gold, GoldResult) else Counter(map(_key, gold))
    if Counter(got_keys) == gold_counts:
        return True
    if not (_has_float(got) or _has_float(gold)):
        return False
    got_groups, gold_groups = _groups(got), _groups(gold)
    if got_groups.keys() != gold_groups.keys():
        return False
    for part, gold_rows in gold_groups.items():
        got_rows = got_groups[part]
        if len(got_rows) != len(gold_rows):
            return False
        if all(_same_row(a, b) for a, b in zip(sorted(got_rows, key=_numbers), sorted(gold_rows, key=_numbers))):
            continue
        if len(gold_rows) > _MATCHING_LIMIT or not bipartite_match(got_rows, gold_rows, _same_row):
            return False
    return True


def _covered(rows: Sequence[Row], by: Sequence[Row]) -> bool:
    """Whether every row of `rows` equals (within tolerance) some row of `by`."""
    exact = _key_set(by)
    pending = [row for row, key in zip(rows, _keys(rows)) if key not in exact]
    if not pending:
        return True
    if not (_has_float(pending) or _has_float(by)):
        return False
    candidates = {part: sorted(group, key=_numbers) for part, group in _groups(by).items()}
    for row in pending:
        group = candidates.get(_exact_part(row))
        if not group:
            return False
        numbers = _numbers(row)
        if not numbers:
            return False
        first = numbers[0]
        reach = abs(first) * RESULT_REL_TOL * 2 + 1e-300
        firsts = [_numbers(other)[0] for other in group]
        low, high = bisect.bisect_left(firsts, first - reach), bisect.bisect_right(firsts, first + reach)
        if not any(_same_row(row, other) for other in group[low:high]):
            return False
    return True


def compare(got: Sequence[Row], gold: Sequence[Row]) -> dict[str, float]:
    """Set, multiset and ordered equality of two normalised results, plus their row overlap (Jaccard)."""
    got_keys, gold_keys = _keys(got), _keys(gold)
    got_set, gold_set = set(got_keys), _key_set(gold)
    union = got_set | gold_set
    ordered = len(got) == len(gold) and (got_keys == gold_keys or all(map(_same_row, got, gold)))
    multiset = ordered or _multiset_equal(got, gold, got_keys)
    same_set = multiset or (got_set == gold_set) or (_covered(got, gold) and _covered(gold, got))
    return {
        "set": float(same_set),
        "multiset": float(multiset),
        "ordered": float(ordered),
        "overlap": len(got_set & gold_set) / len(union) if union else 1.0,
    }


def _project(rows: Sequence[Row], width: int) -> list[Row]:
    return [list(row[:width]) for row in rows]


def consistent_with_order(got: Sequence[Row], gold: Sequence[Row], full: Sequence[Row], order_key: Sequence[int],
                          *, limited: bool, match: str) -> bool:
    """Whether `got` is a right answer to an ordered gold whose rows may tie on the sort key.

    `full` is the gold's result in its order with the key's columns at `order_key` (without the `LIMIT` when
    `limited`); `gold` is the result the gold query returned (its first `len(gold)` rows, ties broken by the
    engine). Runs of rows equal on the key may come in any order; the last run, when `limited`, may be any rows
    of the whole tie group. Cells compare exactly (the plain comparison, which runs first, has the tolerance)."""
    count = len(gold)
    if not gold or len(full) < count or not order_key:
        return False
    width = len(gold[0])
    if any(index >= len(full[0]) for index in order_key) or len(full[0]) < width:
        return False
    keys = [_key([row[index] for index in order_key]) for row in full]
    runs: list[list[Row]] = []
    for position, row in enumerate(full[:count]):
        if position and keys[position] == keys[position - 1]:
            runs[-1].append(list(row[:width]))
        else:
            runs.append([list(row[:width])])
    last_key = keys[count - 1]
    pool = _project([row for row, key in zip(full, keys) if key == last_key], width) if limited else runs[-1]
    before = [row for run in runs[:-1] for row in run]
    pool_counts = Counter(map(_key, pool))
    if match == "set":
        seen, before_keys = set(map(_key, got)), set(map(_key, before))
        rest = seen - before_keys
        wanted = set(map(_key, runs[-1])) - before_keys
        return before_keys <= seen and rest <= set(pool_counts) and len(rest) == len(wanted)
    if len(got) != count:
        return False
    if match == "multiset":
        remaining = Counter(map(_key, got))
        remaining.subtract(Counter(map(_key, before)))
        if any(value < 0 for value in remaining.values()):
            return False
        return all(pool_counts[key] >= value for key, value in remaining.items() if value)
    position = 0
    for run in runs[:-1]:
        if Counter(map(_key, got[position:position + len(run)])) != Counter(map(_key, run)):
            return False
        position += len(run)
    return not Counter(map(_key, got[position:])) - pool_counts


# ------------------------------------------------------------------------------------- typed answers
def _answer_items(value: Any) -> list[Any]:
    """A list answer's items: a list as is, JSON array text decoded, other text split by `parse_list`."""
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                decoded = json.loads(text)
            except json.JSONDecodeError:
                decoded = None
            if isinstance(decoded, list):
                return decoded
        return list(parse_list(text))
    return [value]


def answer_rows(value: Any, gold: Sequence[Row]) -> list[list[Any]] | None:
    """The submitted value read into rows shaped like `gold`, or None when it cannot have that shape."""
    width = len(gold[0]) if gold else 1
    if len(gold) == 1 and width == 1:
        value = _one_cell(value)
        if isinstance(value, (list, tuple)):
            return [list(value)] if len(value) == 1 and not isinstance(value[0], (list, tuple)) else None
        if isinstance(value, str) and value.strip().startswith("["):
            items = _answer_items(value)
            return [items] if len(items) == 1 and not isinstance(items[0], (list, tuple)) else None
        return [[value]]
    items = _answer_items(value)
    if items and all(isinstance(item, (list, tuple)) for item in items):
        rows = [list(item) for item in items]
        return rows if all(len(row) == width for row in rows) else None
    if any(isinstance(item, (list, tuple, dict)) for item in items):
        return None
    if width == 1:
        return [[item] for item in items]
    if len(items) != width * len(gold):
        return None
    return [items[start:start + width] for start in range(0, len(items), width)]  # row-major


def _one_cell(value: Any) -> Any:
    """A one-row, one-column answer written as the result table it is (`[[231]]`, or that as JSON text) read as
    its row (`[231]`); anything else as it came, so two cells (`[[231, 230]]`, `[[231], [230]]`) stay two."""
    rows = _answer_items(value) if isinstance(value, str) and value.strip().startswith("[[") else value
    if isinstance(rows, (list, tuple)) and len(rows) == 1 and isinstance(rows[0], (list, tuple)) \
            and len(rows[0]) == 1 and not isinstance(rows[0][0], (list, tuple)):
        return list(rows[0])
    return value


def answer_cell_matches(got: Any, gold: Any, decimals: int | None = None) -> bool:
    """One typed cell against one gold cell (see the module docstring for the rules). Where the task asks for
    `decimals` places, a float gold is matched within one unit of the last place (0.01 for 2), not relatively:
    on a large total a relative tolerance would hide a whole missing line."""
    if isinstance(got, (list, tuple, dict)):
        return False
    if gold is None:
        return got is None or normalize_text(got) in ("null", "none", "")
    if got is None:
        return False
    if isinstance(gold, int):
        number = parse_number(got)
        return number is not None and number == gold
    if isinstance(gold, float):
        if decimals is not None:
            number = parse_number(got)
            return number is not None and abs(number - gold) <= 10.0 ** -decimals * (1 + 1e-9)
        return numbers_match(got, gold, rel_tol=ANSWER_REL_TOL)
    if normalize_text(got) == normalize_text(gold):
        return True
    gold_date = parse_date(gold) if len(str(gold)) == 10 else None
    return gold_date is not None and parse_date(got) == gold_date


def _answer_row_matches(got: Sequence[Any], gold: Sequence[Any], decimals: int | None = None) -> bool:
    return bipartite_match(list(got), list(gold),  # cells of one row in any order
                           lambda cell, wanted: answer_cell_matches(cell, wanted, decimals))


def answer_matches(value: Any, gold_rows: Sequence[Row], *, ordered: bool = False,
                   distinct: bool = False, decimals: int | None = None) -> bool:
    """Whether a typed answer holds exactly the gold result's rows (in order when `ordered`; each distinct row
    once, repeats allowed, when `distinct`, as set match reads a result; floats to `decimals` places when the task
    asks for them)."""

    def same(got: Sequence[Any], gold: Sequence[Any]) -> bool:
        return _answer_row_matches(got, gold, decimals)

    rows = answer_rows(value, gold_rows)
    if rows is not None and distinct:
        gold_rows = list(dict(zip(_keys(gold_rows), gold_rows)).values())
        kept: list[list[Any]] = []
        for row in rows:
            if not any(_answer_row_matches(row, [*earlier]) and _answer_row_matches(earlier, [*row])
                       for earlier in kept):
                kept.append(row)
        rows = kept
    if rows is None or len(rows) != len(gold_rows):
        return False
    if ordered:
        return all(same(got, gold) for got, gold in zip(rows, gold_rows))
    return bipartite_match(rows, list(gold_rows), same)


# ------------------------------------------------------------------------------------- the verifier
def row_limit(golds: Sequence[Sequence[Row]], match: str) -> int:
    """Most rows of a submission worth reading: a longer result cannot equal any gold under `match`."""
    longest = max(len(gold) for gold in golds)
    return longest * SET_ROW_FACTOR + SET_ROW_MARGIN if match == "set" else max(longest, 1)


@verifier("sql_execution")
def sql_execution(task: Task, submission: Any, state: SqlEpisode | None, *, match: str = "set",
                  mode: str = "sql", alternatives: Sequence[str] = (), order_key: Sequence[int] = (),
                  order_sql: str | None = None, limited: bool = False, column_order: str = "any",
                  decimals: int | None = None) -> Score:
    """Score a `submit(sql)` on a query task by execution accuracy (`match`: set, multiset or ordered), or a
    `submit_answer(value)` on an answer task by comparing the value with the gold result. Either gold (the
    task's, or one of `alternatives`) may be matched; with `order_key` (and `order_sql`, `limited`) a result
    that differs from the task's gold only in how ties on the sort key were broken matches too. With
    `column_order="any"` (the default) a result whose columns come in another order matches too; a task whose
    prompt fixes the order sets `column_order="fixed"`. An answer task whose prompt asks for `decimals` places
    matches a float within one unit of the last place."""
    if match not in MATCHES:
        raise ValueError(f"task {task.id}: match must be one of {MATCHES}, got {match!r}")
    if column_order not in COLUMN_ORDERS:
        raise ValueError(f"task {task.id}: column_order must be one of {COLUMN_ORDERS}, got {column_order!r}")
    if mode not in MODES:
        raise ValueError(f"task {task.id}: mode must be one of {MODES}, got {mode!r}")
    if state is None:
        raise ValueError("sql_execution needs the episode state (the database connection)")
    if not isinstance(submission, dict):
        return Score(0.0, {"executes": 0.0}, "nothing was submitted")
    if mode == "answer":
        if "answer" not in submission:
            return Score(0.0, {"answer_match": 0.0}, "this question asks for a value: call submit_answer(value)")
        ok = any(answer_matches(submission["answer"], gold, ordered=match == "ordered", distinct=match == "set",
                                decimals=decimals) for gold in state.golds())
        return Score(float(ok), {"answer_match": float(ok)}, "" if ok else "the answer differs from the gold result")
    if "sql" not in submission:
        return Score(0.0, {"executes": 0.0, **{m: 0.0 for m in MATCHES}},
                     "this task asks for a query: call submit(sql) with one SELECT statement")
    golds = state.golds()
    limit = row_limit(golds, match)
    try:
        result = state.engine.execute(str(submission["sql"]), max_rows=limit, count_rest=False)
    except SqlError as error:
        stopped = {"query_limit": 1.0} if isinstance(error, QueryLimitError) else {}
        return Score(0.0, {"executes": 0.0, **{m: 0.0 for m in MATCHES}, **stopped},
                     f"the submitted query failed: {error}")
    if result.truncated:
        return Score(0.0, {"executes": 1.0, **{m: 0.0 for m in MATCHES}},
                     f"the query returned more than {limit} rows, more than the answer has")
    rows = normalize_rows(result.rows)
    best = _best_match(rows, golds, match, state, order_key, order_sql, limited)
    if not best[match] and column_order == "any" and golds:
        for order in column_orders(rows, golds[0]):
            moved = [[row[index] for index in order] for row in rows]
            components = _best_match(moved, golds, match, state, order_key, order_sql, limited)
            if components[match]:
                best = {**components, "columns_reordered": 1.0}
                break
    best["executes"] = 1.0
    value = best[match]
    return Score(value, best, "" if value else f"the result differs from the gold result ({match} match)")


def _best_match(rows: list[Row], golds: Sequence[Sequence[Row]], match: str, state: SqlEpisode,
                order_key: Sequence[int], order_sql: str | None, limited: bool) -> dict[str, float]:
    """The comparison of `rows` with the gold that fits them best (the first that matches), ties included."""
    best: dict[str, float] = {}
    for gold in golds:
        components = compare(rows, gold)
        if not best or (components[match], components["overlap"]) > (best[match], best["overlap"]):
            best = components
        if best[match]:
            break
    if not best[match] and order_key and golds:
        full = _order_result(state, order_sql) if order_sql else golds[0]
        if consistent_with_order(rows, golds[0], full, order_key, limited=limited, match=match):
            best[match] = 1.0
            best["ties"] = 1.0
    return best


def _column_signature(rows: Sequence[Row], index: int) -> tuple[bool, frozenset[str]]:
    """(whether the column holds a float, its distinct non-float values): two columns can hold the same data
    only when their signatures agree (floats are compared with a tolerance, so only their presence counts)."""
    cells = [row[index] for row in rows]
    return any(isinstance(cell, float) for cell in cells), frozenset(_key([cell]) for cell in cells
                                                                     if not isinstance(cell, float))


def column_orders(rows: Sequence[Row], gold: Sequence[Row], limit: int = MAX_COLUMN_ORDERS) -> list[list[int]]:
    """Other orders of the submitted columns worth comparing with the gold: `order[j]` is the submitted column
    placed at gold column j, each column holding the same distinct values as the gold column it replaces. The
    submitted order itself is left out; at most `limit` orders."""
    if not rows or not gold or len(rows[0]) != len(gold[0]) or len(gold[0]) < 2:
        return []
    width = len(gold[0])
    mine = [_column_signature(rows, index) for index in range(width)]
    theirs = [_column_signature(gold, index) for index in range(width)]
    options = [[index for index in range(width) if mine[index] == theirs[column]] for column in range(width)]
    found: list[list[int]] = []

    def extend(prefix: list[int]) -> None:
        if len(found) >= limit:
            return
        if len(prefix) == width:
            if prefix != list(range(width)):
                found.append(list(prefix))
            return
        for index in options[len(prefix)]:
            if index not in prefix:
                extend([*prefix, index])

    extend([])
    return found


def _order_result(state: SqlEpisode, order_sql: str) -> Sequence[Row]:
    """The gold's full ordered result with its sort key (`order_sql`), run by the grader like an alternative."""
    from .tools import _in_dialect  # tools imports this module

    dialect = state.task.metadata.get("dialect", "sqlite")
    return state._run_gold(_in_dialect(order_sql, dialect, state.grader.dialect))
