"""SQL-v0's own diagnosis labels (docs/diagnosis.md, "SQL-v0"), from what the episode's calls showed and what
the verifier compared.

Two sources, both after the episode ended:

- the error messages of `execute_sql` and `submit` calls (SQLite, DuckDB and PostgreSQL word them differently;
  each pattern below names the engine it comes from);
- for a submission that ran but did not match: its result set against the gold result's, the verifier's own
  comparison components (`set`, `multiset`, `ordered`), and the tables the two queries read.

Labels are names only: no row, table name or value of the gold ever enters them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

import sqlglot
from sqlglot import exp

from agentgym import Score, Task
from agentgym.diagnosis import TurnRecord, ending_call, episode_calls, in_order

from .data.engines import SqlError
from .tools import SqlGrading
from .verify import _answer_row_matches, _covered, answer_rows, compare, normalize_rows, row_limit

QUERY_DOES_NOT_PARSE = "query_does_not_parse"  # an engine or sqlglot could not parse a query
UNKNOWN_TABLE = "unknown_table"                # a query named a table the database does not have
UNKNOWN_COLUMN = "unknown_column"              # a query named a column its tables do not have
WRITE_REFUSED = "write_refused"                # a query was not a read (INSERT, DROP, ...): refused
QUERY_TIMEOUT = "query_timeout"                # a query went past its limit (work or time) and was stopped
WRONG_TABLE = "wrong_table"                    # the submitted query reads other tables than the gold query
WRONG_SHAPE = "wrong_shape"                    # the submission's columns (or a value's shape) differ from the gold's
EMPTY_RESULT = "empty_result"                  # the submission returned no row; the gold has some
RESULT_SUPERSET = "result_superset"            # the submission's rows hold every gold row, and more
RESULT_SUBSET = "result_subset"                # every row of the submission is a gold row, but some are missing
DUPLICATE_ROWS = "duplicate_rows"              # the same distinct rows as the gold, other multiplicities
WRONG_ORDER = "wrong_order"                    # the same rows as the gold, in another order (ordered match)
TOO_MANY_ROWS = "too_many_rows"                # more rows than a set match reads (10 x the gold's + 1000)

LABELS = (QUERY_DOES_NOT_PARSE, UNKNOWN_TABLE, UNKNOWN_COLUMN, WRITE_REFUSED, QUERY_TIMEOUT, WRONG_TABLE,
          WRONG_SHAPE, EMPTY_RESULT, RESULT_SUPERSET, RESULT_SUBSET, DUPLICATE_ROWS, WRONG_ORDER, TOO_MANY_ROWS)

_WRITE_WORDS = ("INSERT|UPDATE|DELETE|DROP|CREATE|ALTER|REPLACE|TRUNCATE|ATTACH|DETACH|PRAGMA|VACUUM|GRANT|"
                "REVOKE|COPY|MERGE|UPSERT|SET|RESET|BEGIN|COMMIT|ROLLBACK|LOAD|INSTALL|CALL|EXPORT|IMPORT|ANALYZE|"
                "REINDEX|SAVEPOINT|RELEASE|COMMENT|LOCK|CHECKPOINT|EXPLAIN|SHOW|DESCRIBE|USE")
# Error messages, as each engine words them (SQLite first, then DuckDB, then PostgreSQL).
_ERROR_PATTERNS = (
    (QUERY_DOES_NOT_PARSE, re.compile(r"syntax error|incomplete input|unrecognized token|Parser Error",
                                      re.IGNORECASE)),
    # The read-only check names the first word: a write keyword is a refused write, any other word a typo.
    (WRITE_REFUSED, re.compile(rf"\b(?:{_WRITE_WORDS}) statements are not allowed", re.IGNORECASE)),
    (QUERY_DOES_NOT_PARSE, re.compile(rf"^(?:Error: )?(?:cannot submit this query: )?(?!(?:{_WRITE_WORDS}) )\S* ?"
                                      r"statements are not allowed", re.IGNORECASE)),
    (UNKNOWN_TABLE, re.compile(r"no such table|Table with name \S+ does not exist|relation \"[^\"]*\" does not "
                               r"exist|no table named", re.IGNORECASE)),
    (UNKNOWN_COLUMN, re.compile(r"no such column|Referenced column \S+ not found|column \"[^\"]*\" does not "
                                r"exist|column \S+ does not exist|ambiguous column", re.IGNORECASE)),
    (QUERY_TIMEOUT, re.compile(r"and was stopped \(query limit\)|ran longer than [\d.]+ s and was stopped",
                               re.IGNORECASE)),
)
_QUERY_TOOLS = ("execute_sql", "submit")


def error_labels(text: str) -> list[str]:
    """The labels an engine's error message names (empty for other errors)."""
    return [label for label, pattern in _ERROR_PATTERNS if pattern.search(text)]


@functools.lru_cache(maxsize=4096)
def _tables(sql: str, dialect: str) -> frozenset[str] | None:
    """The base tables `sql` reads (CTE names left out), or None when sqlglot cannot read it (cached: a gold
    query is read once per process, and agents often submit the same text again)."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except (sqlglot.errors.SqlglotError, RecursionError, ValueError):
        return None
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    return frozenset(table.name.lower() for table in tree.find_all(exp.Table) if table.name) - ctes


def _result_labels(rows: list[list[Any]], gold: Sequence[list[Any]], match: str) -> list[str]:
    if gold and rows and len(rows[0]) != len(gold[0]):
        return [WRONG_SHAPE]
    if gold and not rows:
        return [EMPTY_RESULT]
    components = compare(rows, gold)  # the verifier's comparison, on the whole result (it may have stopped early)
    if components.get("multiset") and match == "ordered":
        return [WRONG_ORDER]
    if components.get("set") and match != "set":
        return [DUPLICATE_ROWS]
    has_gold, only_gold = _covered(gold, rows), _covered(rows, gold)
    if has_gold and not only_gold:
        return [RESULT_SUPERSET]
    if only_gold and not has_gold:
        return [RESULT_SUBSET]
    return []


def _answer_labels(value: Any, gold: Sequence[list[Any]], match: str) -> list[str]:
    rows = answer_rows(value, gold)
    if rows is None:
        return [WRONG_SHAPE]
    if gold and not rows:
        return [EMPTY_RESULT]
    gold_found = all(any(_answer_row_matches(row, wanted) for row in rows) for wanted in gold)
    rows_known = all(any(_answer_row_matches(row, wanted) for wanted in gold) for row in rows)
    if gold_found and rows_known:
        if match == "ordered" and len(rows) == len(gold):
            return [WRONG_ORDER]
        return [DUPLICATE_ROWS] if len(rows) != len(gold) else []
    if gold_found:
        return [RESULT_SUPERSET]
    if rows_known:
        return [RESULT_SUBSET]
    return []


def _submission_labels(task: Task, state: SqlGrading, arguments: Any) -> list[str]:
    """What the failed submission got wrong, by comparing its result with the gold's."""
    params = task.verifier.params
    match = str(params.get("match", "set"))
    golds = state.golds()
    if not golds or not isinstance(arguments, dict):
        return []
    if "value" in arguments:
        return _answer_labels(arguments["value"], golds[0], match)
    sql = arguments.get("sql")
    if not isinstance(sql, str):
        return []
    labels: list[str] = []
    submitted = _tables(sql, state.engine.dialect)
    gold_tables = [_tables(state.gold_sql, state.grader.dialect)]
    dialect = task.metadata.get("dialect", "sqlite")
    gold_tables += [_tables(str(other), dialect) for other in params.get("alternatives", ()) or ()]
    if submitted is not None and all(tables is not None and tables != submitted for tables in gold_tables):
        labels.append(WRONG_TABLE)
    try:  # read as many rows as a set match would: a multiset grader stops at the gold's row count
        result = state.engine.execute(sql, max_rows=row_limit(golds, "set"), count_rest=False)
    except SqlError as error:  # submit checks a query without running it: the error shows only here
        return labels + error_labels(str(error))
    if result.truncated:
        return [*labels, TOO_MANY_ROWS]
    return labels + _result_labels(normalize_rows(result.rows), golds[0], match)


def sql_labels(task: Task, state: Any, turns: Sequence[TurnRecord], score: Score) -> list[str]:
    """SQL-v0's domain labels for a finished episode, in the order of `LABELS`."""
    found: set[str] = set()
    for call in episode_calls(turns):
        if call.name in _QUERY_TOOLS and call.error_kind == "tool_error":
            found.update(error_labels(call.text))
    ending = ending_call(turns)
    if score.components.get("query_limit") or QUERY_TIMEOUT in error_labels(score.message):
        found.add(QUERY_TIMEOUT)  # the grader stopped the submission: a re-run here must not relabel it
    elif ending is not None and score.value < 1.0 and isinstance(state, SqlGrading) \
            and ending.name in ("submit", "submit_answer"):
        found.update(_submission_labels(task, state, ending.arguments))
    return in_order(found, LABELS)
