"""`FhirStore`: FHIR R4 resources in SQLite, with FHIR search and copy-on-write episodes.

Layout of a store file: ``resources`` holds each resource's JSON (one row per type and id, current version
only) and five index tables hold the values of its search parameters (``tok`` tokens, ``str`` strings,
``dt`` date ranges in UTC milliseconds, ``ref`` references as ``Type/id``, ``qty`` quantities), keyed by the
resource's row id and the parameter's integer id from `agentgym_fhir.search_params`.

An `Episode` is a private, writable view of a store: its writes go to TEMP tables of its own SQLite
connection (a connection's TEMP schema is invisible to every other connection), and its searches run over
the base store minus the resources it overrode plus its own. Opening one takes a pooled connection and
creates nothing until the first write, so it costs microseconds.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agentgym_fhir.errors import FhirError
from agentgym_fhir.search_params import (
    COMMON_PARAMS,
    DATE,
    QUANTITY,
    REFERENCE,
    REGISTRY,
    RESULT_PARAMS,
    STRING,
    TOKEN,
    SearchParam,
    extract_index_rows,
    normalize_string,
    params_for,
    parse_date_range,
    reference_target,
)
from agentgym_fhir.validation import validate_resource

DEFAULT_COUNT = 50
MAX_COUNT = 1000          # page size cap: _count above this is lowered, and the result says so
MAX_INCLUDED = 1000       # cap on resources added by _include / _revinclude for one page
SCHEMA_VERSION = "1"

_TABLES = """
CREATE TABLE IF NOT EXISTS {s}.resources (rid INTEGER PRIMARY KEY, type TEXT NOT NULL, id TEXT NOT NULL,
    version INTEGER NOT NULL, last_updated TEXT NOT NULL, lu_ms INTEGER NOT NULL, json TEXT NOT NULL,
    UNIQUE (type, id));
CREATE TABLE IF NOT EXISTS {s}.tok (rid INTEGER NOT NULL, pid INTEGER NOT NULL, system TEXT, code TEXT, text TEXT);
CREATE TABLE IF NOT EXISTS {s}.str (rid INTEGER NOT NULL, pid INTEGER NOT NULL, value TEXT, exact TEXT);
CREATE TABLE IF NOT EXISTS {s}.dt (rid INTEGER NOT NULL, pid INTEGER NOT NULL, lo INTEGER, hi INTEGER);
CREATE TABLE IF NOT EXISTS {s}.ref (rid INTEGER NOT NULL, pid INTEGER NOT NULL, target TEXT);
CREATE TABLE IF NOT EXISTS {s}.qty (rid INTEGER NOT NULL, pid INTEGER NOT NULL, value REAL, system TEXT, code TEXT);
"""
_INDEXES = """
CREATE INDEX IF NOT EXISTS {s}.tok_code ON tok (pid, code, rid);
CREATE INDEX IF NOT EXISTS {s}.tok_rid ON tok (rid, pid);
CREATE INDEX IF NOT EXISTS {s}.str_value ON str (pid, value);
CREATE INDEX IF NOT EXISTS {s}.str_rid ON str (rid, pid);
CREATE INDEX IF NOT EXISTS {s}.dt_lo ON dt (pid, lo);
CREATE INDEX IF NOT EXISTS {s}.dt_rid ON dt (rid, pid);
CREATE INDEX IF NOT EXISTS {s}.ref_target ON ref (pid, target);
CREATE INDEX IF NOT EXISTS {s}.ref_rid ON ref (rid, pid);
CREATE INDEX IF NOT EXISTS {s}.qty_value ON qty (pid, value);
CREATE INDEX IF NOT EXISTS {s}.qty_rid ON qty (rid, pid);
"""
_INDEX_NAMES = ["tok_code", "tok_rid", "str_value", "str_rid", "dt_lo", "dt_rid", "ref_target", "ref_rid",
                "qty_value", "qty_rid"]
_INDEX_TABLES = ("tok", "str", "dt", "ref", "qty")
_INSERT = {
    "tok": "INSERT INTO {s}.tok (rid, pid, system, code, text) VALUES (?, ?, ?, ?, ?)",
    "str": "INSERT INTO {s}.str (rid, pid, value, exact) VALUES (?, ?, ?, ?)",
    "dt": "INSERT INTO {s}.dt (rid, pid, lo, hi) VALUES (?, ?, ?, ?)",
    "ref": "INSERT INTO {s}.ref (rid, pid, target) VALUES (?, ?, ?)",
    "qty": "INSERT INTO {s}.qty (rid, pid, value, system, code) VALUES (?, ?, ?, ?, ?)",
}
_PREFIXES = ("eq", "ne", "gt", "lt", "ge", "le", "sa", "eb", "ap")
_KNOWN_TYPES = [name for name in REGISTRY if name != "*"]


def now_instant() -> str:
    """The current UTC time as a FHIR instant (millisecond precision)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def dumps(resource: dict[str, Any]) -> str:
    """Compact, key-order-preserving JSON: the form resources are stored in."""
    return json.dumps(resource, separators=(",", ":"), ensure_ascii=False)


@dataclass
class SearchResult:
    """One page of a search.

    Attributes:
        resource_type: The type searched.
        entries: The matching resources on this page, in order.
        total: How many resources match in all (None when ``_total=none``).
        included: Resources added by ``_include`` / ``_revinclude`` (search mode "include").
        next_params: The parameters that fetch the next page (pass them to `search` again), or None on the
            last page.
        warnings: What the store changed or limited (a capped ``_count``, a capped include, a parameter it
            ignored), in words.
        ignored: The parameters a lenient search ignored (unknown names, unsupported modifiers, chains), as
            written; they are left out of ``next_params`` and of the Bundle's ``self`` link.
        entry_texts: Only from ``search(..., decode=False)`` when the page could skip decoding: each entry's
            stored JSON text, in order, and ``entries`` is then left empty. None otherwise.
    """

    resource_type: str
    entries: list[dict[str, Any]]
    total: int | None
    included: list[dict[str, Any]] = field(default_factory=list)
    next_params: dict[str, str | list[str]] | None = None
    warnings: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    entry_texts: list[str] | None = None

    @property
    def resources(self) -> list[dict[str, Any]]:
        """Matches followed by included resources."""
        return self.entries + self.included

    def to_bundle(self, base_url: str = "", self_params: dict[str, Any] | None = None) -> dict[str, Any]:
        """This page as a FHIR ``searchset`` Bundle; ``base_url`` (no trailing slash) makes full URLs.

        ``self_params`` are the parameters the ``self`` link shows; those in ``ignored`` are left out of it, as
        the FHIR search page asks, so a client can see what the server actually applied.
        """
        from urllib.parse import urlencode

        def url(params: dict[str, Any]) -> str:
            query = urlencode([(k, v) for k, vs in params.items() for v in (vs if isinstance(vs, list) else [vs])])
            return f"{base_url}/{self.resource_type}" + (f"?{query}" if query else "")

        bundle: dict[str, Any] = {"resourceType": "Bundle", "type": "searchset"}
        if self.total is not None:
            bundle["total"] = self.total
        applied = {k: v for k, v in (self_params or {}).items() if k not in self.ignored}
        links = [{"relation": "self", "url": url(applied)}]
        if self.next_params is not None:
            links.append({"relation": "next", "url": url(self.next_params)})
        bundle["link"] = links
        entries: list[dict[str, Any]] = []
        for mode, resources in (("match", self.entries), ("include", self.included)):
            for resource in resources:
                entries.append({"fullUrl": f"{base_url}/{resource['resourceType']}/{resource.get('id')}",
                                "resource": resource, "search": {"mode": mode}})
        if self.warnings:
            entries.append({"resource": {"resourceType": "OperationOutcome", "issue": [
                {"severity": "warning", "code": "informational", "diagnostics": w} for w in self.warnings]},
                "search": {"mode": "outcome"}})
        bundle["entry"] = entries
        return bundle

    @classmethod
    def from_bundle(cls, resource_type: str, bundle: dict[str, Any]) -> SearchResult:
        """Read a searchset Bundle (from any FHIR server) back into a SearchResult; ``next_params`` is
        the query of the ``next`` link."""
        from urllib.parse import parse_qs, urlparse

        entries: list[dict[str, Any]] = []
        included: list[dict[str, Any]] = []
        warnings: list[str] = []
        for entry in bundle.get("entry") or []:
            resource = entry.get("resource") or {}
            mode = (entry.get("search") or {}).get("mode", "match")
            if mode == "outcome" or resource.get("resourceType") == "OperationOutcome":
                warnings.extend(issue.get("diagnostics", "") for issue in resource.get("issue", []))
            elif mode == "include":
                included.append(resource)
            else:
                entries.append(resource)
        next_params = None
        for link in bundle.get("link") or []:
            if link.get("relation") == "next":
                query = parse_qs(urlparse(link["url"]).query, keep_blank_values=True)
                next_params = {k: (v[0] if len(v) == 1 else v) for k, v in query.items()}
        return cls(resource_type, entries, bundle.get("total"), included, next_params, warnings)


# ------------------------------------------------------------------------------------------ queries

class UnsupportedParameter(FhirError):
    """A search parameter this store does not know or support (an unknown name, an unsupported modifier, a
    chain). A strict search refuses it (400); a lenient one ignores it and says so in the result's warnings.
    A known parameter with a malformed value is a plain `FhirError` in both modes."""

    def __init__(self, message: str) -> None:
        super().__init__(message, 400, "not-supported")


@dataclass
class _Condition:
    table: str | None          # index table, or None for a condition on the resources row itself
    sql: str                   # predicate over alias x (index table) or r (resources)
    args: list[Any]
    negated: bool = False
    rank: int = 9              # lower: more selective, better as the driving condition


def _split_values(value: str) -> list[str]:
    """Split a parameter value on commas (OR), honouring ``\\,`` escapes."""
    parts, current, escaped = [], "", False
    for char in value:
        if escaped:
            current += char
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


def _prefix(value: str) -> tuple[str, str]:
    if len(value) > 2 and value[:2] in _PREFIXES and (value[2].isdigit() or value[2] in "-+."):
        return value[:2], value[2:]
    return "eq", value


def _date_predicate(prefix: str, raw: str, name: str, low_col: str, high_col: str) -> tuple[str, list[Any]]:
    try:
        low, high = parse_date_range(raw)
    except ValueError as error:
        raise FhirError(f"{name}: {raw!r} is not a FHIR date; write e.g. 2021, 2021-03, 2021-03-04 or "
                        "2021-03-04T10:00:00Z, optionally after a prefix such as ge or lt") from error
    lo, hi = low_col, high_col
    if prefix == "eq":
        return f"({lo} >= ? AND {hi} <= ?)", [low, high]
    if prefix == "ne":
        return f"({lo} < ? OR {hi} > ?)", [low, high]
    if prefix == "gt":
        return f"{hi} > ?", [high]
    if prefix == "lt":
        return f"{lo} < ?", [low]
    if prefix == "ge":
        return f"({hi} > ? OR ({lo} >= ? AND {hi} <= ?))", [high, low, high]
    if prefix == "le":
        return f"({lo} < ? OR ({lo} >= ? AND {hi} <= ?))", [low, low, high]
    if prefix == "sa":
        return f"{lo} > ?", [high]
    if prefix == "eb":
        return f"{hi} < ?", [low]
    day = 86_400_000  # ap: the ranges overlap once the search value is widened by a day each side
    return f"({lo} <= ? AND {hi} >= ?)", [high + day, low - day]


def _number_predicate(prefix: str, raw: str, name: str) -> tuple[str, list[Any]]:
    try:
        number = float(raw)
    except ValueError as error:
        raise FhirError(f"{name}: {raw!r} is not a number; write e.g. 5.4 or gt5.4") from error
    decimals = len(raw.split(".", 1)[1]) if "." in raw else 0
    half = 0.5 * 10 ** -decimals  # eq honours the precision written: 5.4 means [5.35, 5.45)
    if prefix == "eq":
        return "(x.value >= ? AND x.value < ?)", [number - half, number + half]
    if prefix == "ne":
        return "(x.value < ? OR x.value >= ?)", [number - half, number + half]
    if prefix in ("gt", "sa"):
        return "x.value > ?", [number]
    if prefix in ("lt", "eb"):
        return "x.value < ?", [number]
    if prefix == "ge":
        return "x.value >= ?", [number]
    if prefix == "le":
        return "x.value <= ?", [number]
    spread = abs(number) * 0.1
    return "(x.value >= ? AND x.value <= ?)", [number - spread, number + spread]


def _reference_targets(param: SearchParam, raw: str, type_modifier: str | None) -> list[str]:
    target = reference_target(raw) if "/" in raw else None
    if target is not None:
        if param.targets and target.split("/", 1)[0] not in param.targets:
            raise FhirError(f"{param.name} refers to {' or '.join(param.targets)}, not {target}; "
                            f"search by subject instead")
        return [target]
    if type_modifier:
        return [f"{type_modifier}/{raw}"]
    types = list(param.targets) or _KNOWN_TYPES
    return [f"{t}/{raw}" for t in types]


def _condition(resource_type: str, name: str, modifier: str | None, value: str) -> _Condition:
    """Translate one search parameter (one occurrence; commas inside mean OR) into SQL."""
    values = _split_values(value)
    if name == "_id":
        if modifier not in (None, "not"):
            raise UnsupportedParameter(f"_id does not support the modifier :{modifier}; use _id or _id:not")
        placeholders = ",".join("?" * len(values))
        return _Condition(None, f"r.id {'NOT ' if modifier else ''}IN ({placeholders})", values,
                          rank=0)
    if name == "_lastUpdated":
        if modifier is not None:
            raise UnsupportedParameter(f"_lastUpdated does not support the modifier :{modifier}; write "
                                       "_lastUpdated=ge2024-01-01")
        parts = [_date_predicate(*_prefix(v), name, "r.lu_ms", "r.lu_ms") for v in values]
        return _Condition(None, "(" + " OR ".join(p for p, _ in parts) + ")", [a for _, args in parts for a in args])
    params = params_for(resource_type)
    param = params.get(name)
    if param is None:
        raise UnsupportedParameter(f"unknown search parameter {name!r} for {resource_type}; supported: "
                                   f"{', '.join(sorted([*params, *COMMON_PARAMS, *RESULT_PARAMS]))}")
    if modifier == "missing":
        if value not in ("true", "false"):
            raise FhirError(f"{name}:missing takes true or false, got {value!r}")
        table = {TOKEN: "tok", STRING: "str", DATE: "dt", REFERENCE: "ref", QUANTITY: "qty"}[param.kind]
        return _Condition(table, "x.pid = ?", [param.pid], negated=value == "true")
    pieces: list[str] = []
    args: list[Any] = []
    negated = False
    if param.kind == TOKEN:
        table, rank = "tok", (2 if name in ("identifier", "code", "vaccine-code") else 5)
        if modifier not in (None, "text", "not"):
            raise UnsupportedParameter(f"the modifier :{modifier} is not supported on token parameter {name}; "
                            "use :text, :not or :missing")
        negated = modifier == "not"
        for item in values:
            if modifier == "text":
                pieces.append("x.text LIKE ? ESCAPE '\\'")
                args.append("%" + normalize_string(item).replace("\\", "\\\\").replace("%", "\\%")
                            .replace("_", "\\_") + "%")
            elif "|" in item:
                system, code = item.split("|", 1)
                if system and code:
                    pieces.append("(x.code = ? AND x.system = ?)")
                    args += [code, system]
                elif code:
                    pieces.append("(x.code = ? AND x.system IS NULL)")
                    args.append(code)
                elif system:
                    pieces.append("x.system = ?")
                    args.append(system)
                else:
                    raise FhirError(f"{name}: '|' alone is not a token; write system|code, |code or code")
            else:
                pieces.append("x.code = ?")
                args.append(item)
    elif param.kind == STRING:
        table, rank = "str", 3
        if modifier not in (None, "exact", "contains"):
            raise UnsupportedParameter(f"the modifier :{modifier} is not supported on string parameter {name}; "
                            "use :exact, :contains or :missing")
        for item in values:
            if modifier == "exact":
                pieces.append("x.exact = ?")
                args.append(item)
            elif modifier == "contains":
                pieces.append("x.value LIKE ? ESCAPE '\\'")
                args.append("%" + normalize_string(item).replace("\\", "\\\\").replace("%", "\\%")
                            .replace("_", "\\_") + "%")
            else:
                start = normalize_string(item)
                pieces.append("(x.value >= ? AND x.value < ?)")
                args += [start, start + "\U0010ffff"]
    elif param.kind == DATE:
        table, rank = "dt", 6
        if modifier is not None:
            raise UnsupportedParameter(f"the modifier :{modifier} is not supported on date parameter {name}")
        for item in values:
            sql, item_args = _date_predicate(*_prefix(item), name, "x.lo", "x.hi")
            pieces.append(sql)
            args += item_args
    elif param.kind == REFERENCE:
        table, rank = "ref", 1
        if modifier is not None and not modifier[:1].isupper():
            raise UnsupportedParameter(f"the modifier :{modifier} is not supported on reference parameter {name}; "
                            "use a type such as :Patient")
        targets = [t for item in values for t in _reference_targets(param, item, modifier)]
        pieces.append(f"x.target IN ({','.join('?' * len(targets))})")
        args += targets
    else:
        table, rank = "qty", 7
        if modifier is not None:
            raise UnsupportedParameter(f"the modifier :{modifier} is not supported on quantity parameter {name}")
        for item in values:
            number, _, unit = item.partition("|")
            system, _, code = unit.partition("|") if unit else ("", "", "")
            sql, item_args = _number_predicate(*_prefix(number), name)
            if code:
                sql += " AND (x.code = ?" + (" AND x.system = ?)" if system else ")")
                item_args += [code] + ([system] if system else [])
            pieces.append(f"({sql})")
            args += item_args
    return _Condition(table, f"x.pid = ? AND ({' OR '.join(pieces)})", [param.pid, *args], negated, rank)


@dataclass
class _Plan:
    resource_type: str
    conditions: list[_Condition]
    sort: list[tuple[str, list[Any], bool]]      # (sql over r in schema {s}, args, descending)
    count: int
    offset: int
    includes: list[tuple[str, str, str | None]]  # (source type, param, target type)
    revincludes: list[tuple[str, str]]
    summary_count: bool
    want_total: bool
    elements: list[str] | None
    warnings: list[str]
    ignored: list[str] = field(default_factory=list)


def _as_list(value: str | list[str]) -> list[str]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _plan(resource_type: str, params: dict[str, str | list[str]], strict: bool = True) -> _Plan:
    """Read search parameters into a plan. ``strict``: an unknown or unsupported parameter raises
    `UnsupportedParameter`; otherwise it is skipped, named in ``ignored`` and explained in ``warnings``."""
    if not resource_type[:1].isupper() or not resource_type.isalnum():
        raise FhirError(f"{resource_type!r} is not a FHIR resource type; use e.g. Observation", 400, "not-supported")
    conditions: list[_Condition] = []
    sort: list[tuple[str, list[Any], bool]] = []
    count, offset = DEFAULT_COUNT, 0
    includes: list[tuple[str, str, str | None]] = []
    revincludes: list[tuple[str, str]] = []
    summary_count, want_total, elements = False, True, None
    warnings: list[str] = []
    ignored: list[str] = []
    for key, raw_values in params.items():
        for value in _as_list(raw_values):
            value = str(value)
            if key == "_count":
                try:
                    count = int(value)
                except ValueError:
                    raise FhirError(f"_count must be a whole number, got {value!r}") from None
                if count < 0:
                    raise FhirError("_count must not be negative")
                if count > MAX_COUNT:
                    warnings.append(f"_count={value} is above this server's page size limit; "
                                    f"returning at most {MAX_COUNT} per page, follow the next link for more")
                    count = MAX_COUNT
            elif key == "_offset":
                if not value.isdigit():
                    raise FhirError(f"_offset must be a whole number, got {value!r}")
                offset = int(value)
            elif key == "_sort":
                for item in value.split(","):
                    sort.append(_sort_key(resource_type, item.strip()))
            elif key == "_include":
                includes.append(_parse_include(value, resource_type, reverse=False))
            elif key == "_revinclude":
                source, param_name, _ = _parse_include(value, resource_type, reverse=True)
                revincludes.append((source, param_name))
            elif key == "_summary":
                if value == "count":
                    summary_count = True
                elif value not in ("true", "false", "data", "text"):
                    raise FhirError(f"_summary={value!r} is not supported; use count, true, false, data or text")
            elif key == "_total":
                if value not in ("none", "estimate", "accurate"):
                    raise FhirError("_total takes none, estimate or accurate")
                want_total = value != "none"
            elif key == "_elements":
                elements = [e.strip() for e in value.split(",") if e.strip()]
            else:
                try:
                    conditions.append(_filter(resource_type, key, value))
                except UnsupportedParameter as error:
                    if strict:
                        raise
                    if key not in ignored:
                        ignored.append(key)
                        warnings.append(f"ignored {key}: {error.message}")
    return _Plan(resource_type, conditions, sort, count, offset, includes, revincludes, summary_count,
                 want_total, elements, warnings, ignored)


def _filter(resource_type: str, key: str, value: str) -> _Condition:
    """One filtering parameter (``name[:modifier]=value``) as a condition."""
    name, _, modifier = key.partition(":")
    if "." in name or name == "_has":
        raise UnsupportedParameter(f"chained and _has searches ({key}) are not supported; search the "
                                   "referenced resource first, then search by its id")
    if name in RESULT_PARAMS:
        raise UnsupportedParameter(f"{key} is not supported; {name} takes no modifier")
    return _condition(resource_type, name, modifier or None, value)


def _sort_key(resource_type: str, item: str) -> tuple[str, list[Any], bool]:
    descending = item.startswith("-")
    name = item.lstrip("-")
    if name == "_id":
        return "r.id", [], descending
    if name == "_lastUpdated":
        return "r.lu_ms", [], descending
    param = params_for(resource_type).get(name)
    if param is None or param.kind == REFERENCE:
        sortable = sorted(n for n, p in params_for(resource_type).items() if p.kind != REFERENCE)
        raise FhirError(f"cannot sort {resource_type} by {name!r}; sortable: {', '.join(['_id', '_lastUpdated', *sortable])}")
    table, column = {TOKEN: ("tok", "code"), STRING: ("str", "value"), DATE: ("dt", "lo" if not descending else "hi"),
                     QUANTITY: ("qty", "value")}[param.kind]
    aggregate = "max" if descending else "min"
    sql = (f"(SELECT {aggregate}(x.{column}) FROM {{s}}.{table} x INDEXED BY {table}_rid "
           "WHERE x.rid = r.rid AND x.pid = ?)")
    return sql, [param.pid], descending


def _parse_include(value: str, resource_type: str, reverse: bool) -> tuple[str, str, str | None]:
    parts = value.split(":")
    if len(parts) not in (2, 3):
        what = "_revinclude" if reverse else "_include"
        raise FhirError(f"{what}={value!r}: write SourceType:parameter[:TargetType], e.g. "
                        + ("Observation:subject" if reverse else "Observation:patient"))
    source, name = parts[0], parts[1]
    target = parts[2] if len(parts) == 3 else None
    if not reverse and source != resource_type:
        raise FhirError(f"_include={value!r} must start with the searched type {resource_type}")
    param = params_for(source).get(name)
    if param is None or param.kind != REFERENCE:
        refs = sorted(n for n, p in params_for(source).items() if p.kind == REFERENCE)
        raise FhirError(f"{value!r}: {source} has no reference parameter {name!r}; use one of {', '.join(refs)}")
    return source, name, target


# ----------------------------------------------------------------------------------------- the view

class _View:
    """Reads and searches over one connection; ``overlay`` adds the connection's TEMP tables on top."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection
        self.overlay = False

    # -- reading
    def read(self, resource_type: str, resource_id: str) -> dict[str, Any]:
        row = None
        if self.overlay:
            row = self.connection.execute("SELECT json FROM temp.resources WHERE type = ? AND id = ?",
                                          (resource_type, resource_id)).fetchone()
        if row is None:
            row = self.connection.execute("SELECT json FROM main.resources WHERE type = ? AND id = ?",
                                          (resource_type, resource_id)).fetchone()
        if row is None:
            raise FhirError(f"{resource_type}/{resource_id} not found; search {resource_type} to find ids",
                            404, "not-found")
        result: dict[str, Any] = json.loads(row[0])
        return result

    def version_of(self, resource_type: str, resource_id: str) -> int | None:
        for schema in (["temp"] if self.overlay else []) + ["main"]:
            row = self.connection.execute(f"SELECT version FROM {schema}.resources WHERE type = ? AND id = ?",
                                          (resource_type, resource_id)).fetchone()
            if row is not None:
                return int(row[0])
        return None

    # -- searching
    def _part(self, plan: _Plan, schema: str, columns: str) -> tuple[str, list[Any]]:
        where = ["r.type = ?"]
        args: list[Any] = [plan.resource_type]
        driver: _Condition | None = None
        candidates = [c for c in plan.conditions if c.table is not None and not c.negated]
        if candidates:
            driver = min(candidates, key=lambda c: c.rank)
        source = f"{schema}.resources r"
        driver_args: list[Any] = []
        for condition in plan.conditions:
            if condition.table is None:
                where.append(condition.sql)
                args += condition.args
            elif condition is driver:
                # The most selective index drives the query: its matching rows are read first and the
                # resources looked up by row id (CROSS JOIN keeps SQLite from reordering this).
                source = (f"(SELECT DISTINCT x.rid AS rid FROM {schema}.{condition.table} x WHERE {condition.sql}) d "
                          f"CROSS JOIN {schema}.resources r ON r.rid = d.rid")
                driver_args = condition.args
            else:
                not_ = "NOT " if condition.negated else ""
                where.append(f"{not_}EXISTS (SELECT 1 FROM {schema}.{condition.table} x INDEXED BY "
                             f"{condition.table}_rid WHERE x.rid = r.rid AND {condition.sql})")
                args += condition.args
        if schema == "main" and self.overlay:
            where.append("NOT EXISTS (SELECT 1 FROM temp.resources o WHERE o.type = r.type AND o.id = r.id)")
        sql = f"SELECT {columns} FROM {source} WHERE " + " AND ".join(where)
        return sql, driver_args + args

    def _matches(self, plan: _Plan, limit: int, offset: int) -> list[str]:
        schemas = ["main", "temp"] if self.overlay else ["main"]
        sort_columns = "".join(f", {sql.format(s='{s}')} AS k{i}" for i, (sql, _, _) in enumerate(plan.sort))
        parts, args = [], []
        for index, schema in enumerate(schemas):
            columns = f"{index} AS src, r.rid AS rid, r.json AS json" + sort_columns.format(s=schema)
            for _, sort_args, _ in plan.sort:
                args += sort_args
            sql, part_args = self._part(plan, schema, columns)
            parts.append(sql)
            args += part_args
        order = [f"k{i} {'DESC' if desc else 'ASC'}" for i, (_, _, desc) in enumerate(plan.sort)]
        order += ["src", "rid"]
        sql = " UNION ALL ".join(parts) if len(parts) > 1 else parts[0]
        sql = f"SELECT json FROM ({sql}) ORDER BY {', '.join(order)} LIMIT ? OFFSET ?"
        return [row[0] for row in self.connection.execute(sql, [*args, limit, offset])]

    def _total(self, plan: _Plan) -> int:
        total = 0
        for schema in (["main", "temp"] if self.overlay else ["main"]):
            sql, args = self._part(plan, schema, "count(*)")
            total += self.connection.execute(sql, args).fetchone()[0]
        return total

    def search(self, resource_type: str, params: dict[str, str | list[str]] | None = None, *,
               strict: bool = True, decode: bool = True) -> SearchResult:
        params = dict(params or {})
        plan = _plan(resource_type, params, strict)
        total = self._total(plan) if (plan.want_total or plan.summary_count) else None
        if plan.summary_count or plan.count == 0:
            return SearchResult(resource_type, [], total, warnings=plan.warnings, ignored=plan.ignored)
        rows = self._matches(plan, plan.count + 1, plan.offset)
        has_more = len(rows) > plan.count
        next_params = None
        if has_more:
            next_params = {k: v for k, v in params.items() if k != "_offset" and k not in plan.ignored}
            if "_count" in next_params:
                next_params["_count"] = str(plan.count)  # the capped page size, so later pages do not warn
            next_params["_offset"] = str(plan.offset + plan.count)
        warnings = list(plan.warnings)
        if not decode and not (plan.elements or plan.includes or plan.revincludes):
            # The caller encodes the page itself from the stored texts (see `SearchResult.entry_texts`).
            return SearchResult(resource_type, [], total, [], next_params, warnings, plan.ignored,
                                entry_texts=rows[: plan.count])
        entries = [json.loads(text) for text in rows[: plan.count]]
        included = self._included(plan, entries, warnings)
        if plan.elements:
            keep = {"resourceType", "id", "meta", *plan.elements}
            entries = [{k: v for k, v in e.items() if k in keep} for e in entries]
        return SearchResult(resource_type, entries, total, included, next_params, warnings, plan.ignored)

    def _included(self, plan: _Plan, entries: list[dict[str, Any]], warnings: list[str]) -> list[dict[str, Any]]:
        if not entries or not (plan.includes or plan.revincludes):
            return []
        seen = {(e["resourceType"], e.get("id")) for e in entries}
        included: list[dict[str, Any]] = []

        def add(resource: dict[str, Any]) -> bool:
            key = (resource["resourceType"], resource.get("id"))
            if key in seen:
                return True
            if len(included) >= MAX_INCLUDED:
                warnings.append(f"included resources were capped at {MAX_INCLUDED}; search them directly "
                                "to see the rest")
                return False
            seen.add(key)
            included.append(resource)
            return True

        from agentgym_fhir.search_params import element_values
        for source, name, target_type in plan.includes:
            param = params_for(source)[name]
            targets: list[str] = []
            for entry in entries:
                for path in param.paths:
                    for value in element_values(entry, path):
                        target = reference_target(value.get("reference", "")) if isinstance(value, dict) else None
                        if target and (not target_type or target.startswith(target_type + "/")) and (
                                not param.targets or target.split("/")[0] in param.targets):
                            targets.append(target)
            for target in dict.fromkeys(targets):
                type_name, resource_id = target.split("/", 1)
                try:
                    resource = self.read(type_name, resource_id)
                except FhirError:
                    continue  # a dangling reference is not an error for _include
                if not add(resource):
                    return included
        for source, name in plan.revincludes:
            refs = ",".join(f"{e['resourceType']}/{e['id']}" for e in entries if e.get("id"))
            result = self.search(source, {name: refs, "_count": str(MAX_INCLUDED), "_total": "none"})
            for resource in result.entries:
                if not add(resource):
                    return included
            if result.next_params is not None:
                warnings.append(f"_revinclude={source}:{name} was capped at {MAX_INCLUDED} resources")
        return included


# ------------------------------------------------------------------------------------------ writing

class _Writer:
    """Inserts resources and their index rows into one schema of a connection, in batches."""

    def __init__(self, connection: sqlite3.Connection, schema: str = "main", batch: int = 5000) -> None:
        self.connection = connection
        self.schema = schema
        self.batch = batch
        row = connection.execute(f"SELECT max(rid) FROM {schema}.resources").fetchone()
        self.next_rid = (row[0] or 0) + 1
        self.resources: list[tuple[Any, ...]] = []
        self.index_rows: dict[str, list[tuple[Any, ...]]] = {t: [] for t in _INDEX_TABLES}
        self.check_existing = row[0] is not None

    def put(self, resource: dict[str, Any], text: str | None = None) -> None:
        """Insert or replace (same type and id) one resource; it must already carry meta."""
        self.put_prepared(prepare(resource, text))

    def put_prepared(self, prepared: PreparedResource) -> None:
        """Insert or replace one resource whose JSON and index rows were computed by `prepare`."""
        resource_type, resource_id, version, last_updated, lu_ms, text, index_rows = prepared
        if self.check_existing:  # callers never put the same resource twice in one batch
            old = self.connection.execute(f"SELECT rid FROM {self.schema}.resources WHERE type = ? AND id = ?",
                                          (resource_type, resource_id)).fetchone()
            if old is not None:
                self.delete_rid(old[0])
        rid = self.next_rid
        self.next_rid += 1
        self.resources.append((rid, resource_type, resource_id, version, last_updated, lu_ms, text))
        for table, rows in index_rows.items():
            target = self.index_rows[table]
            for item in rows:
                target.append((rid, *item))
        if len(self.resources) >= self.batch:
            self.flush()

    def delete_rid(self, rid: int) -> None:
        self.connection.execute(f"DELETE FROM {self.schema}.resources WHERE rid = ?", (rid,))
        for table in _INDEX_TABLES:
            self.connection.execute(f"DELETE FROM {self.schema}.{table} WHERE rid = ?", (rid,))

    def flush(self) -> None:
        if self.resources:
            self.connection.executemany(
                f"INSERT INTO {self.schema}.resources (rid, type, id, version, last_updated, lu_ms, json) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)", self.resources)
            self.resources = []
        for table, rows in self.index_rows.items():
            if rows:
                self.connection.executemany(_INSERT[table].format(s=self.schema), rows)
                self.index_rows[table] = []


PreparedResource = tuple[str, str, int, str, int, str, dict[str, list[tuple[Any, ...]]]]


def prepare(resource: dict[str, Any], text: str | None = None) -> PreparedResource:
    """Everything a store row needs from a resource that carries ``meta`` (JSON, index rows), computed
    without a database so that worker processes can do it."""
    meta = resource.get("meta") or {}
    last_updated = meta.get("lastUpdated") or now_instant()
    return (resource["resourceType"], resource["id"], int(meta.get("versionId") or 1), last_updated,
            parse_date_range(last_updated)[0], text if text is not None else dumps(resource),
            extract_index_rows(resource))


def _stamp(resource: dict[str, Any], version: int, when: str) -> dict[str, Any]:
    meta = dict(resource.get("meta") or {})
    meta["versionId"] = str(version)
    meta["lastUpdated"] = when
    stamped = {"resourceType": resource["resourceType"], "id": resource["id"], "meta": meta}
    stamped.update((k, v) for k, v in resource.items() if k not in stamped)
    return stamped


# ------------------------------------------------------------------------------------------- stores

class FhirStore:
    """A FHIR R4 store in one SQLite file: read, search, create and update, plus private episodes.

    Reads and searches are thread-safe: each call borrows a connection from a pool. Writes to the base
    store are serialized by a lock. Use `episode` for work that must not change the base.
    """

    def __init__(self, path: str | Path, *, readonly: bool = True) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self._pool: list[sqlite3.Connection] = []
        self._pool_lock = threading.Lock()
        self._write_lock = threading.RLock()
        self._closed = False

    # -- opening
    @classmethod
    def open(cls, path: str | Path, *, readonly: bool = False) -> FhirStore:
        """Open an existing store file.

        Raises:
            FhirError: the file does not exist or is not a store.
        """
        path = Path(path)
        if not path.is_file():
            raise FhirError(f"no FHIR store at {path}; create one with `agentgym fhir generate --out {path}` "
                            f"or `agentgym fhir import SRC --out {path}`", 404, "not-found")
        store = cls(path, readonly=readonly)
        with store._connection() as connection:
            try:
                connection.execute("SELECT 1 FROM main.resources LIMIT 1").fetchall()
            except sqlite3.DatabaseError as error:
                raise FhirError(f"{path} is not a FHIR store ({error})", 400, "structure") from error
        return store

    @classmethod
    def create(cls, path: str | Path, *, overwrite: bool = False) -> FhirStore:
        """Create an empty store file (and its folder).

        Raises:
            FhirError: the file exists and ``overwrite`` is false.
        """
        path = Path(path)
        if path.exists():
            if not overwrite:
                raise FhirError(f"{path} already exists; pass overwrite=True (CLI: --overwrite) to replace it",
                                409, "duplicate")
            path.unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(path)
        connection.executescript(_TABLES.format(s="main") + _INDEXES.format(s="main")
                                 + "CREATE TABLE IF NOT EXISTS main.meta (key TEXT PRIMARY KEY, value TEXT);")
        connection.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
        connection.commit()
        connection.close()
        return cls(path, readonly=False)

    def _new_connection(self) -> sqlite3.Connection:
        uri = f"file:{self.path.resolve()}?mode=ro"
        connection = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
        connection.execute("PRAGMA mmap_size = 268435456")
        connection.execute("PRAGMA temp_store = MEMORY")
        return connection

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        connection = self._acquire()
        try:
            yield connection
        finally:
            self._release(connection)

    def _acquire(self) -> sqlite3.Connection:
        if self._closed:
            raise FhirError("the store is closed", 500, "exception")
        with self._pool_lock:
            if self._pool:
                return self._pool.pop()
        return self._new_connection()

    def _release(self, connection: sqlite3.Connection) -> None:
        with self._pool_lock:
            if not self._closed and len(self._pool) < 64:
                self._pool.append(connection)
                return
        connection.close()

    def close(self) -> None:
        """Close every pooled connection. Idempotent."""
        with self._pool_lock:
            self._closed = True
            pool, self._pool = self._pool, []
        for connection in pool:
            connection.close()

    def __enter__(self) -> FhirStore:  # noqa: PYI034 (subclasses are not expected)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading
    def read(self, resource_type: str, resource_id: str) -> dict[str, Any]:
        """The current version of one resource.

        Raises:
            FhirError: 404 when there is no such resource.
        """
        with self._connection() as connection:
            return _View(connection).read(resource_type, resource_id)

    def search(self, resource_type: str, params: dict[str, str | list[str]] | None = None, *,
               strict: bool = True) -> SearchResult:
        """FHIR search: one page of the resources of a type that match every parameter.

        ``params`` maps a parameter (with an optional ``:modifier``) to a value or, to AND several, a list
        of values; commas inside a value mean OR. Types: token (``system|code``, ``|code``, ``code``,
        ``:text``, ``:not``), string (starts with, case- and accent-insensitive; ``:exact``,
        ``:contains``), date (prefixes ``eq ne gt lt ge le sa eb ap``, precision-aware), reference
        (``Patient/123`` or ``123``, ``:Type``), quantity (``[prefix]value|system|code``); ``:missing`` on
        every type. Result parameters: ``_sort`` (``-`` for descending), ``_count`` (default 50, capped at
        1000 with a warning), ``_offset``, ``_include`` / ``_revinclude`` (one hop, capped at 1000),
        ``_summary=count``, ``_total=none``, ``_elements``.

        ``strict`` (the default) refuses a parameter the store does not know or support (an unknown name or
        modifier, a chain) with a 400 that lists what is supported. ``strict=False`` is FHIR's lenient
        handling, which the REST server uses unless a client sends ``Prefer: handling=strict``: such a
        parameter is ignored, named in ``ignored`` and explained in ``warnings``. A malformed value of a known
        parameter is an error either way.

        Raises:
            FhirError: 400 for a malformed value (and, when strict, an unknown parameter or modifier).
        """
        with self._connection() as connection:
            return _View(connection).search(resource_type, params, strict=strict)

    def search_all(self, resource_type: str, params: dict[str, str | list[str]] | None = None, *,
                   max_pages: int = 100) -> Iterator[dict[str, Any]]:
        """Every match, following the pages (at most ``max_pages``)."""
        return search_all(self, resource_type, params, max_pages=max_pages)

    def count(self, resource_type: str | None = None) -> int:
        """How many resources the store holds (of one type, or in all)."""
        with self._connection() as connection:
            if resource_type is None:
                return int(connection.execute("SELECT count(*) FROM resources").fetchone()[0])
            return int(connection.execute("SELECT count(*) FROM resources WHERE type = ?",
                                          (resource_type,)).fetchone()[0])

    def type_counts(self) -> dict[str, int]:
        """Resource counts per type, sorted by type."""
        with self._connection() as connection:
            rows = connection.execute("SELECT type, count(*) FROM resources GROUP BY type ORDER BY type")
            return {str(t): int(n) for t, n in rows}

    def iter_resources(self, resource_type: str | None = None) -> Iterator[dict[str, Any]]:
        """Every resource (of one type), in insertion order."""
        with self._connection() as connection:
            sql = "SELECT json FROM resources" + (" WHERE type = ?" if resource_type else "") + " ORDER BY rid"
            for (text,) in connection.execute(sql, (resource_type,) if resource_type else ()):
                yield json.loads(text)

    def get_meta(self, key: str) -> str | None:
        """A value stored with the store (``generator``, ``seed``, ``patients``, ``reference_date``)."""
        with self._connection() as connection:
            row = connection.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            return None if row is None else str(row[0])

    # -- writing to the base store
    def _writable(self) -> sqlite3.Connection:
        if self.readonly:
            raise FhirError(f"the store {self.path} was opened read-only; write in an episode "
                            "(store.episode()) or open it with readonly=False", 403, "forbidden")
        connection = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        connection.execute("PRAGMA busy_timeout = 10000")
        return connection

    @contextmanager
    def bulk_writer(self, *, defer_indexes: bool = False) -> Iterator[_Writer]:
        """One transaction for many writes: everything is committed at the end or nothing is.

        With ``defer_indexes`` the lookup indexes are dropped during the load and rebuilt at the end,
        which is much faster for a large load into a new store.
        """
        with self._write_lock:
            connection = self._writable()
            try:
                connection.execute("PRAGMA journal_mode = DELETE")
                connection.execute("PRAGMA synchronous = OFF")
                connection.execute("BEGIN IMMEDIATE")
                if defer_indexes:
                    for name in _INDEX_NAMES:
                        connection.execute(f"DROP INDEX IF EXISTS main.{name}")
                writer = _Writer(connection)
                yield writer
                writer.flush()
                if defer_indexes:
                    for statement in _INDEXES.format(s="main").strip().splitlines():
                        connection.execute(statement)
                    connection.execute("ANALYZE main")
                connection.execute("COMMIT")
            except BaseException:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise
            finally:
                connection.close()
        self._reset_pool()

    def set_meta(self, values: dict[str, str]) -> None:
        """Store key/value facts about the data (generator, seed...)."""
        with self._write_lock:
            connection = self._writable()
            try:
                with connection:
                    connection.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", list(values.items()))
            finally:
                connection.close()

    def _reset_pool(self) -> None:
        # Pooled read connections may hold a stale schema after indexes were rebuilt; start afresh.
        with self._pool_lock:
            pool, self._pool = self._pool, []
        for connection in pool:
            connection.close()

    def create_resource(self, resource: dict[str, Any], *, when: str | None = None) -> dict[str, Any]:
        """Validate and store a new resource in the base store; the server assigns ``id`` and ``meta``.

        Raises:
            FhirError: 422 naming the failing elements when validation fails.
        """
        validate_resource(resource)
        stored = _stamp({**resource, "id": str(uuid.uuid4())}, 1, when or now_instant())
        with self.bulk_writer() as writer:
            writer.put(stored)
        return stored

    def update_resource(self, resource: dict[str, Any], *, when: str | None = None) -> dict[str, Any]:
        """Validate and store a new version of a resource (``id`` required; creates it if absent).

        Raises:
            FhirError: 400 without an id, 422 when validation fails.
        """
        validate_resource(resource)
        if not resource.get("id"):
            raise FhirError("update needs the resource's id; use create_resource for new resources",
                            400, "required", [f"{resource['resourceType']}.id"])
        with self._connection() as connection:
            version = _View(connection).version_of(resource["resourceType"], resource["id"])
        stored = _stamp(resource, (version or 0) + 1, when or now_instant())
        with self.bulk_writer() as writer:
            writer.put(stored)
        return stored

    # -- episodes
    def episode(self, *, now: str | None = None, id_prefix: str = "") -> Episode:
        """A private, writable copy-on-write view of this store (cheap: no copying happens).

        Args:
            now: FHIR instant stamped as ``meta.lastUpdated`` on the episode's writes (for reproducible
                episodes); the wall clock when None.
            id_prefix: Prefix for ids the episode assigns to created resources; ids are otherwise a
                counter (``<prefix>1``, ``<prefix>2``...) turned into a UUID, so episodes are reproducible.
        """
        return Episode(self, self._acquire(), now=now, id_prefix=id_prefix)


@dataclass(frozen=True)
class EpisodeSnapshot:
    """The state of an episode's own writes at one moment (see `Episode.snapshot`)."""

    rows: tuple[tuple[str, tuple[tuple[Any, ...], ...]], ...]
    written: tuple[tuple[str, str], ...]
    counter: int


class Episode:
    """A copy-on-write view of a `FhirStore`: reads see the base plus this episode's writes; writes stay
    here. Not shared between episodes, never written to the base. Thread-safe (calls are serialized).

    Use as a context manager or call `close` to give its connection back.
    """

    def __init__(self, store: FhirStore, connection: sqlite3.Connection, *, now: str | None,
                 id_prefix: str) -> None:
        self.store = store
        self._view = _View(connection)
        self._lock = threading.RLock()
        self._now = now
        self._id_prefix = id_prefix
        self._counter = 0
        self._written: list[tuple[str, str]] = []   # (type, id) in write order
        self._tables_ready = False
        self._closed = False

    def __enter__(self) -> Episode:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise FhirError("this episode is closed; open a new one with store.episode()", 500, "exception")

    def read(self, resource_type: str, resource_id: str) -> dict[str, Any]:
        """Like `FhirStore.read`, seeing this episode's writes."""
        with self._lock:
            self._check_open()
            return self._view.read(resource_type, resource_id)

    def search(self, resource_type: str, params: dict[str, str | list[str]] | None = None, *,
               strict: bool = True, decode: bool = True) -> SearchResult:
        """Like `FhirStore.search`, over the base store plus this episode's writes.

        ``decode=False`` lets a page without ``_elements`` / ``_include`` / ``_revinclude`` come back as the
        stored JSON texts (`SearchResult.entry_texts`) instead of decoded entries.
        """
        with self._lock:
            self._check_open()
            return self._view.search(resource_type, params, strict=strict, decode=decode)

    def search_all(self, resource_type: str, params: dict[str, str | list[str]] | None = None, *,
                   max_pages: int = 100) -> Iterator[dict[str, Any]]:
        """Every match, following the pages (at most ``max_pages``)."""
        return search_all(self, resource_type, params, max_pages=max_pages)

    def _ensure_tables(self) -> None:
        if not self._tables_ready:
            connection = self._view.connection
            connection.executescript(_TABLES.format(s="temp") + _INDEXES.format(s="temp"))
            self._tables_ready = True

    def _put(self, stored: dict[str, Any]) -> None:
        self._ensure_tables()
        connection = self._view.connection
        connection.execute("BEGIN")
        try:
            writer = _Writer(connection, "temp")
            writer.check_existing = True
            writer.put(stored)
            writer.flush()
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        self._view.overlay = True
        self._written.append((stored["resourceType"], stored["id"]))

    def _when(self) -> str:
        return self._now or now_instant()

    def create_resource(self, resource: dict[str, Any]) -> dict[str, Any]:
        """Validate and store a new resource in this episode only; returns it with its new id and meta.

        Raises:
            FhirError: 422 naming the failing elements when validation fails.
        """
        with self._lock:
            self._check_open()
            validate_resource(resource)
            self._counter += 1
            new_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"agentgym-episode:{self._id_prefix}{self._counter}"))
            stored = _stamp({**resource, "id": new_id}, 1, self._when())
            self._put(stored)
            return stored

    def update_resource(self, resource: dict[str, Any]) -> dict[str, Any]:
        """Validate and store a new version of a resource in this episode only.

        Raises:
            FhirError: 400 without an id, 422 when validation fails.
        """
        with self._lock:
            self._check_open()
            validate_resource(resource)
            if not resource.get("id"):
                raise FhirError("update needs the resource's id; use create_resource for new resources",
                                400, "required", [f"{resource['resourceType']}.id"])
            version = self._view.version_of(resource["resourceType"], resource["id"])
            stored = _stamp(resource, (version or 0) + 1, self._when())
            self._put(stored)
            return stored

    def written(self) -> list[dict[str, Any]]:
        """The current version of every resource this episode created or updated, in first-write order."""
        with self._lock:
            self._check_open()
            keys = list(dict.fromkeys(self._written))
            return [self._view.read(t, i) for t, i in keys]

    def snapshot(self) -> EpisodeSnapshot:
        """Capture this episode's writes so far (cheap: the episode's writes are small)."""
        with self._lock:
            self._check_open()
            rows: list[tuple[str, tuple[tuple[Any, ...], ...]]] = []
            if self._tables_ready:
                for table in ("resources", *_INDEX_TABLES):
                    data = tuple(self._view.connection.execute(f"SELECT * FROM temp.{table}").fetchall())
                    rows.append((table, data))
            return EpisodeSnapshot(tuple(rows), tuple(self._written), self._counter)

    def restore(self, snapshot: EpisodeSnapshot) -> None:
        """Return this episode to a snapshot taken from it (later writes are discarded)."""
        with self._lock:
            self._check_open()
            self._clear()
            if snapshot.rows:
                self._ensure_tables()
                connection = self._view.connection
                for table, data in snapshot.rows:
                    if data:
                        marks = ",".join("?" * len(data[0]))
                        connection.executemany(f"INSERT INTO temp.{table} VALUES ({marks})", data)
            self._written = list(snapshot.written)
            self._counter = snapshot.counter
            self._view.overlay = bool(self._written)

    def reset(self) -> None:
        """Discard every write of this episode."""
        with self._lock:
            self._check_open()
            self._clear()
            self._written, self._counter = [], 0

    def _clear(self) -> None:
        if self._tables_ready:
            for table in ("resources", *_INDEX_TABLES):
                self._view.connection.execute(f"DELETE FROM temp.{table}")
        self._view.overlay = False

    def close(self) -> None:
        """Discard the episode's writes and give its connection back to the store. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            connection = self._view.connection
            if self._tables_ready:
                for table in ("resources", *_INDEX_TABLES):
                    connection.execute(f"DROP TABLE IF EXISTS temp.{table}")
            self.store._release(connection)


def search_all(searcher: Any, resource_type: str, params: dict[str, str | list[str]] | None = None, *,
               max_pages: int = 100) -> Iterator[dict[str, Any]]:
    """Every match of a search, following ``next_params`` page by page (at most ``max_pages`` pages).

    ``searcher`` is anything with a ``search(type, params)`` method: a `FhirStore`, an `Episode` or a
    `FhirClient`.
    """
    current: dict[str, str | list[str]] | None = dict(params or {})
    for _ in range(max_pages):
        if current is None:
            return
        page = searcher.search(resource_type, current)
        yield from page.entries
        current = page.next_params


def chunked(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """Consecutive lists of at most ``size`` items."""
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


__all__ = ["DEFAULT_COUNT", "MAX_COUNT", "Episode", "EpisodeSnapshot", "FhirStore", "SearchResult", "UnsupportedParameter",
           "search_all"]
