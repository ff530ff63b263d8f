"""FHIR search parameters the store indexes, and how their values are pulled out of resources.

Each resource type has a table of `SearchParam` (name, FHIR type, element paths). `extract_index_rows`
turns a resource (a plain dict) into rows for the store's index tables; `parse_date_range` gives the
[low, high] millisecond range that a FHIR date, dateTime, instant or Period covers, which is what date
comparisons with prefixes work on.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import Any

TOKEN, STRING, DATE, REFERENCE, QUANTITY = "token", "string", "date", "reference", "quantity"

# Sentinels for open-ended ranges (a Period with no end).
MIN_MS = -(2**62)
MAX_MS = 2**62


@dataclass(frozen=True)
class SearchParam:
    """One search parameter of one resource type.

    Attributes:
        name: The parameter name used in a search (``code``, ``date``, ``patient``).
        kind: FHIR search parameter type: token, string, date, reference or quantity.
        paths: Dotted element paths whose values the parameter indexes (``effectiveDateTime``,
            ``component.code``). Lists along a path are walked.
        targets: For references, the resource types the parameter may point to (empty: any).
        pid: Integer id used in the index tables (assigned from the registry order).
    """

    name: str
    kind: str
    paths: tuple[str, ...]
    targets: tuple[str, ...] = ()
    pid: int = field(default=0, compare=False)


def _p(name: str, kind: str, *paths: str, targets: tuple[str, ...] = ()) -> tuple[str, str, tuple[str, ...], tuple[str, ...]]:
    return (name, kind, paths, targets)


_PATIENT = ("Patient",)

_DEFINITIONS: dict[str, list[tuple[str, str, tuple[str, ...], tuple[str, ...]]]] = {
    "Patient": [
        _p("identifier", TOKEN, "identifier"), _p("name", STRING, "name"),
        _p("family", STRING, "name.family"), _p("given", STRING, "name.given"),
        _p("birthdate", DATE, "birthDate"), _p("gender", TOKEN, "gender"),
        _p("address", STRING, "address"), _p("address-city", STRING, "address.city"),
        _p("address-state", STRING, "address.state"), _p("address-postalcode", STRING, "address.postalCode"),
        _p("telecom", TOKEN, "telecom"), _p("active", TOKEN, "active"),
        _p("death-date", DATE, "deceasedDateTime"), _p("deceased", TOKEN, "deceasedBoolean"),
        _p("general-practitioner", REFERENCE, "generalPractitioner"),
        _p("organization", REFERENCE, "managingOrganization"),
    ],
    "Observation": [
        _p("code", TOKEN, "code"), _p("category", TOKEN, "category"), _p("status", TOKEN, "status"),
        _p("subject", REFERENCE, "subject"), _p("patient", REFERENCE, "subject", targets=_PATIENT),
        _p("encounter", REFERENCE, "encounter"),
        _p("date", DATE, "effectiveDateTime", "effectivePeriod", "effectiveInstant"),
        _p("value-quantity", QUANTITY, "valueQuantity"), _p("value-concept", TOKEN, "valueCodeableConcept"),
        _p("component-code", TOKEN, "component.code"),
        _p("component-value-quantity", QUANTITY, "component.valueQuantity"),
        _p("combo-code", TOKEN, "code", "component.code"), _p("identifier", TOKEN, "identifier"),
        _p("based-on", REFERENCE, "basedOn"), _p("performer", REFERENCE, "performer"),
        _p("has-member", REFERENCE, "hasMember"),
    ],
    "Condition": [
        _p("code", TOKEN, "code"), _p("category", TOKEN, "category"),
        _p("clinical-status", TOKEN, "clinicalStatus"), _p("verification-status", TOKEN, "verificationStatus"),
        _p("subject", REFERENCE, "subject"), _p("patient", REFERENCE, "subject", targets=_PATIENT),
        _p("encounter", REFERENCE, "encounter"),
        _p("onset-date", DATE, "onsetDateTime", "onsetPeriod"),
        _p("abatement-date", DATE, "abatementDateTime", "abatementPeriod"),
        _p("recorded-date", DATE, "recordedDate"), _p("identifier", TOKEN, "identifier"),
        _p("severity", TOKEN, "severity"),
    ],
    "Encounter": [
        _p("status", TOKEN, "status"), _p("class", TOKEN, "class"), _p("type", TOKEN, "type"),
        _p("subject", REFERENCE, "subject"), _p("patient", REFERENCE, "subject", targets=_PATIENT),
        _p("date", DATE, "period"), _p("identifier", TOKEN, "identifier"),
        _p("reason-code", TOKEN, "reasonCode"), _p("reason-reference", REFERENCE, "reasonReference"),
        _p("service-provider", REFERENCE, "serviceProvider"),
        _p("participant", REFERENCE, "participant.individual"),
        _p("practitioner", REFERENCE, "participant.individual", targets=("Practitioner",)),
        _p("location", REFERENCE, "location.location"), _p("diagnosis", REFERENCE, "diagnosis.condition"),
    ],
    "MedicationRequest": [
        _p("code", TOKEN, "medicationCodeableConcept"), _p("medication", REFERENCE, "medicationReference"),
        _p("status", TOKEN, "status"), _p("intent", TOKEN, "intent"), _p("category", TOKEN, "category"),
        _p("priority", TOKEN, "priority"),
        _p("subject", REFERENCE, "subject"), _p("patient", REFERENCE, "subject", targets=_PATIENT),
        _p("encounter", REFERENCE, "encounter"), _p("authoredon", DATE, "authoredOn"),
        _p("requester", REFERENCE, "requester"), _p("identifier", TOKEN, "identifier"),
    ],
    "MedicationAdministration": [
        _p("code", TOKEN, "medicationCodeableConcept"), _p("medication", REFERENCE, "medicationReference"),
        _p("status", TOKEN, "status"),
        _p("subject", REFERENCE, "subject"), _p("patient", REFERENCE, "subject", targets=_PATIENT),
        _p("context", REFERENCE, "context"),
        _p("effective-time", DATE, "effectiveDateTime", "effectivePeriod"),
        _p("request", REFERENCE, "request"), _p("performer", REFERENCE, "performer.actor"),
        _p("identifier", TOKEN, "identifier"), _p("reason-given", TOKEN, "reasonCode"),
    ],
    "MedicationStatement": [
        _p("code", TOKEN, "medicationCodeableConcept"), _p("medication", REFERENCE, "medicationReference"),
        _p("status", TOKEN, "status"), _p("category", TOKEN, "category"),
        _p("subject", REFERENCE, "subject"), _p("patient", REFERENCE, "subject", targets=_PATIENT),
        _p("context", REFERENCE, "context"), _p("effective", DATE, "effectiveDateTime", "effectivePeriod"),
        _p("identifier", TOKEN, "identifier"),
    ],
    "Medication": [
        _p("code", TOKEN, "code"), _p("form", TOKEN, "form"), _p("status", TOKEN, "status"),
        _p("identifier", TOKEN, "identifier"),
    ],
    "Procedure": [
        _p("code", TOKEN, "code"), _p("status", TOKEN, "status"), _p("category", TOKEN, "category"),
        _p("subject", REFERENCE, "subject"), _p("patient", REFERENCE, "subject", targets=_PATIENT),
        _p("encounter", REFERENCE, "encounter"), _p("date", DATE, "performedDateTime", "performedPeriod"),
        _p("performer", REFERENCE, "performer.actor"), _p("identifier", TOKEN, "identifier"),
        _p("reason-code", TOKEN, "reasonCode"), _p("based-on", REFERENCE, "basedOn"),
    ],
    "AllergyIntolerance": [
        _p("code", TOKEN, "code"), _p("clinical-status", TOKEN, "clinicalStatus"),
        _p("verification-status", TOKEN, "verificationStatus"), _p("type", TOKEN, "type"),
        _p("category", TOKEN, "category"), _p("criticality", TOKEN, "criticality"),
        _p("patient", REFERENCE, "patient", targets=_PATIENT), _p("date", DATE, "recordedDate"),
        _p("onset", DATE, "onsetDateTime"), _p("recorder", REFERENCE, "recorder"),
        _p("identifier", TOKEN, "identifier"),
    ],
    "Immunization": [
        _p("vaccine-code", TOKEN, "vaccineCode"), _p("status", TOKEN, "status"),
        _p("patient", REFERENCE, "patient", targets=_PATIENT), _p("date", DATE, "occurrenceDateTime"),
        _p("identifier", TOKEN, "identifier"), _p("lot-number", STRING, "lotNumber"),
    ],
    "DiagnosticReport": [
        _p("code", TOKEN, "code"), _p("category", TOKEN, "category"), _p("status", TOKEN, "status"),
        _p("subject", REFERENCE, "subject"), _p("patient", REFERENCE, "subject", targets=_PATIENT),
        _p("encounter", REFERENCE, "encounter"), _p("date", DATE, "effectiveDateTime", "effectivePeriod"),
        _p("issued", DATE, "issued"), _p("result", REFERENCE, "result"),
        _p("based-on", REFERENCE, "basedOn"), _p("performer", REFERENCE, "performer"),
        _p("identifier", TOKEN, "identifier"),
    ],
    "ServiceRequest": [
        _p("code", TOKEN, "code"), _p("category", TOKEN, "category"), _p("status", TOKEN, "status"),
        _p("intent", TOKEN, "intent"), _p("priority", TOKEN, "priority"),
        _p("subject", REFERENCE, "subject"), _p("patient", REFERENCE, "subject", targets=_PATIENT),
        _p("encounter", REFERENCE, "encounter"), _p("authored", DATE, "authoredOn"),
        _p("occurrence", DATE, "occurrenceDateTime", "occurrencePeriod"),
        _p("requester", REFERENCE, "requester"), _p("performer", REFERENCE, "performer"),
        _p("performer-type", TOKEN, "performerType"), _p("based-on", REFERENCE, "basedOn"),
        _p("identifier", TOKEN, "identifier"),
    ],
    "Practitioner": [
        _p("identifier", TOKEN, "identifier"), _p("name", STRING, "name"),
        _p("family", STRING, "name.family"), _p("given", STRING, "name.given"),
        _p("gender", TOKEN, "gender"), _p("active", TOKEN, "active"), _p("address", STRING, "address"),
    ],
    "Organization": [
        _p("identifier", TOKEN, "identifier"), _p("name", STRING, "name"), _p("type", TOKEN, "type"),
        _p("address", STRING, "address"), _p("active", TOKEN, "active"), _p("partof", REFERENCE, "partOf"),
    ],
    "Location": [
        _p("identifier", TOKEN, "identifier"), _p("name", STRING, "name"), _p("address", STRING, "address"),
        _p("organization", REFERENCE, "managingOrganization"),
    ],
    "CarePlan": [
        _p("category", TOKEN, "category"), _p("status", TOKEN, "status"), _p("intent", TOKEN, "intent"),
        _p("subject", REFERENCE, "subject"), _p("patient", REFERENCE, "subject", targets=_PATIENT),
        _p("encounter", REFERENCE, "encounter"), _p("date", DATE, "period"),
        _p("activity-code", TOKEN, "activity.detail.code"), _p("identifier", TOKEN, "identifier"),
    ],
    "Goal": [
        _p("lifecycle-status", TOKEN, "lifecycleStatus"),
        _p("subject", REFERENCE, "subject"), _p("patient", REFERENCE, "subject", targets=_PATIENT),
        _p("identifier", TOKEN, "identifier"),
    ],
    "Claim": [
        _p("status", TOKEN, "status"), _p("use", TOKEN, "use"), _p("created", DATE, "created"),
        _p("patient", REFERENCE, "patient", targets=_PATIENT), _p("encounter", REFERENCE, "item.encounter"),
        _p("provider", REFERENCE, "provider"), _p("identifier", TOKEN, "identifier"),
    ],
    "ExplanationOfBenefit": [
        _p("status", TOKEN, "status"), _p("created", DATE, "created"),
        _p("patient", REFERENCE, "patient", targets=_PATIENT), _p("claim", REFERENCE, "claim"),
        _p("provider", REFERENCE, "provider"), _p("identifier", TOKEN, "identifier"),
    ],
    "DocumentReference": [
        _p("type", TOKEN, "type"), _p("category", TOKEN, "category"), _p("status", TOKEN, "status"),
        _p("subject", REFERENCE, "subject"), _p("patient", REFERENCE, "subject", targets=_PATIENT),
        _p("date", DATE, "date"), _p("encounter", REFERENCE, "context.encounter"),
        _p("identifier", TOKEN, "identifier"),
    ],
    "CareTeam": [
        _p("status", TOKEN, "status"), _p("category", TOKEN, "category"),
        _p("subject", REFERENCE, "subject"), _p("patient", REFERENCE, "subject", targets=_PATIENT),
        _p("encounter", REFERENCE, "encounter"), _p("date", DATE, "period"),
    ],
    "Device": [
        _p("type", TOKEN, "type"), _p("status", TOKEN, "status"),
        _p("patient", REFERENCE, "patient", targets=_PATIENT), _p("identifier", TOKEN, "identifier"),
    ],
    "ImagingStudy": [
        _p("status", TOKEN, "status"), _p("started", DATE, "started"),
        _p("subject", REFERENCE, "subject"), _p("patient", REFERENCE, "subject", targets=_PATIENT),
        _p("encounter", REFERENCE, "encounter"), _p("identifier", TOKEN, "identifier"),
    ],
}

# Resource types outside the table above (Coverage, Provenance, ...) still get these, so imported data
# of any type can be found by patient.
_GENERIC = [
    _p("patient", REFERENCE, "patient", "subject", "beneficiary", targets=_PATIENT),
    _p("subject", REFERENCE, "subject"), _p("status", TOKEN, "status"),
    _p("identifier", TOKEN, "identifier"), _p("encounter", REFERENCE, "encounter"),
]

GENERIC_TYPE = "*"

# Parameters every type accepts; served from columns of the resources table, not the index tables.
COMMON_PARAMS = {"_id": TOKEN, "_lastUpdated": DATE}

# Result-shaping parameters (not filters).
RESULT_PARAMS = {"_count", "_offset", "_sort", "_include", "_revinclude", "_summary", "_total", "_elements"}


def _build_registry() -> dict[str, dict[str, SearchParam]]:
    registry: dict[str, dict[str, SearchParam]] = {}
    pid = 1
    for type_name in [*sorted(_DEFINITIONS), GENERIC_TYPE]:
        params = _DEFINITIONS.get(type_name, _GENERIC)
        registry[type_name] = {}
        by_paths: dict[tuple[str, tuple[str, ...]], int] = {}
        for name, kind, paths, targets in params:
            # patient and subject index the same references: one set of rows serves both (the patient
            # parameter also requires the target to be a Patient), which halves the reference index.
            shared = by_paths.get((kind, paths)) if kind == REFERENCE else None
            registry[type_name][name] = SearchParam(name, kind, paths, targets, shared or pid)
            if shared is None:
                by_paths[(kind, paths)] = pid
                pid += 1
    return registry


REGISTRY = _build_registry()


def params_for(resource_type: str) -> dict[str, SearchParam]:
    """The search parameters of one resource type (the generic set for types without their own)."""
    return REGISTRY.get(resource_type) or REGISTRY[GENERIC_TYPE]


# ---------------------------------------------------------------------------------------------- values

def normalize_string(value: str) -> str:
    """Case- and accent-insensitive form used for FHIR string matching."""
    if value.isascii():
        return value.lower().strip()
    decomposed = unicodedata.normalize("NFKD", value)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower().strip()


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _to_ms(moment: datetime) -> int:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    delta = moment - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000


@lru_cache(maxsize=65536)
def parse_date_range(text: str) -> tuple[int, int]:
    """The [low, high] range in UTC milliseconds covered by a FHIR date, dateTime or instant.

    The precision given sets the width: ``2020`` covers the whole year, ``2020-03-04`` the whole day,
    ``2020-03-04T10:00`` the minute, seconds the second. Values without a time zone are read as UTC.

    Raises:
        ValueError: The text is not a FHIR date or dateTime.
    """
    text = text.strip()
    length = len(text)
    if length == 4:
        year = int(text)
        return _to_ms(datetime(year, 1, 1)), _to_ms(datetime(year + 1, 1, 1)) - 1
    if length == 7 and text[4] == "-":
        year, month = int(text[:4]), int(text[5:7])
        next_month = datetime(year + (month == 12), month % 12 + 1, 1)
        return _to_ms(datetime(year, month, 1)), _to_ms(next_month) - 1
    if length == 10:
        day = datetime.strptime(text, "%Y-%m-%d") if text[4] == "-" else None
        if day is None:
            raise ValueError(text)
        low = _to_ms(day)
        return low, low + 86_400_000 - 1
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    low = _to_ms(moment)
    time_part = text[11:]
    # Width of the last unit written: minutes (hh:mm), seconds, or a fraction of a second.
    digits = time_part.split("+")[0].split("-")[0].rstrip("Z")
    if len(digits) <= 5:
        return low, low + 60_000 - 1
    if "." in digits:
        return low, low
    return low, low + 999


def format_ms(ms: int) -> str:
    """Millisecond timestamp back to an ISO-8601 UTC string (for messages and tests)."""
    return (_EPOCH + timedelta(milliseconds=ms)).isoformat().replace("+00:00", "Z")


# ----------------------------------------------------------------------------------------- extraction

def element_values(resource: dict[str, Any], path: str) -> list[Any]:
    """Every value at a dotted path of a resource, walking through lists."""
    return _values(resource, path.split("."))


def _values(resource: dict[str, Any], keys: list[str]) -> list[Any]:
    current: list[Any] = [resource]
    for key in keys:
        found: list[Any] = []
        for item in current:
            if isinstance(item, dict):
                child = item.get(key)
                if child is None:
                    continue
                if isinstance(child, list):
                    found.extend(child)
                else:
                    found.append(child)
        if not found:
            return found
        current = found
    return current


def reference_target(reference: str) -> str | None:
    """``Type/id`` from a relative or absolute literal reference; None for urn:uuid, contained, conditional
    (``Patient?identifier=...``) or URLs that do not end in a type and id."""
    if not reference or reference.startswith(("#", "urn:")) or "?" in reference:
        return None
    parts = reference.split("/")
    if "_history" in parts:
        parts = parts[: parts.index("_history")]
    if len(parts) < 2:
        return None
    type_name, resource_id = parts[-2], parts[-1]
    if not type_name[:1].isupper() or not resource_id:
        return None
    return f"{type_name}/{resource_id}"


def _tokens(value: Any) -> Iterator[tuple[str | None, str | None, str | None]]:
    """(system, code, text) triples for a token-typed value."""
    if isinstance(value, bool):
        yield None, "true" if value else "false", None
    elif isinstance(value, str):
        yield None, value, None
    elif isinstance(value, dict):
        if "coding" in value or ("text" in value and "value" not in value and "code" not in value):
            text = value.get("text")
            codings = value.get("coding") or []
            for coding in codings:
                display = coding.get("display")
                yield coding.get("system"), coding.get("code"), normalize_string(" ".join(
                    t for t in (display, text) if t)) or None
            if not codings and text:
                yield None, None, normalize_string(text)
        elif "code" in value:  # Coding
            yield value.get("system"), value.get("code"), normalize_string(value.get("display") or "") or None
        elif "value" in value:  # Identifier, ContactPoint
            type_text = None
            if isinstance(value.get("type"), dict):
                type_text = value["type"].get("text")
            yield value.get("system"), str(value["value"]), normalize_string(type_text) if type_text else None


def _strings(value: Any) -> Iterator[tuple[str, str]]:
    """(normalized, exact) pairs for a string-typed value (string, HumanName, Address)."""
    if isinstance(value, str):
        yield normalize_string(value), value
        return
    if not isinstance(value, dict):
        return
    parts: list[str] = []
    for key in ("text", "family", "city", "district", "state", "postalCode", "country"):
        if isinstance(value.get(key), str):
            parts.append(value[key])
    for key in ("given", "prefix", "suffix", "line"):
        for item in value.get(key) or []:
            if isinstance(item, str):
                parts.append(item)
    for part in parts:
        yield normalize_string(part), part
    givens = [g for g in value.get("given") or [] if isinstance(g, str)]
    family = value.get("family")
    if givens and isinstance(family, str):  # so that name=John Smith matches John Paul Smith too
        for full in dict.fromkeys([f"{givens[0]} {family}", f"{' '.join(givens)} {family}"]):
            yield normalize_string(full), full


def _dates(value: Any) -> Iterator[tuple[int, int]]:
    if isinstance(value, str):
        yield parse_date_range(value)
    elif isinstance(value, dict) and ("start" in value or "end" in value):
        low = parse_date_range(value["start"])[0] if value.get("start") else MIN_MS
        high = parse_date_range(value["end"])[1] if value.get("end") else MAX_MS
        yield low, high


def _quantities(value: Any) -> Iterator[tuple[float, str | None, str | None]]:
    if isinstance(value, dict) and isinstance(value.get("value"), (int, float)):
        yield float(value["value"]), value.get("system"), value.get("code") or value.get("unit")


IndexRows = dict[str, list[tuple[Any, ...]]]

_COMPILED: dict[str, list[tuple[SearchParam, list[list[str]]]]] = {}


def _compiled(resource_type: str) -> list[tuple[SearchParam, list[list[str]]]]:
    compiled = _COMPILED.get(resource_type)
    if compiled is None:
        # Reference parameters restricted to a target type (patient) come after their unrestricted
        # alias (subject), so the shared rows hold every reference.
        params = sorted(params_for(resource_type).values(), key=lambda p: bool(p.targets))
        compiled = [(p, [path.split(".") for path in p.paths]) for p in params]
        _COMPILED[resource_type] = compiled
    return compiled


def _reference_rows(value: Any) -> list[tuple[Any, ...]]:
    target = reference_target(value.get("reference", "")) if isinstance(value, dict) else None
    return [] if target is None else [(target,)]


def _date_rows(value: Any) -> list[tuple[Any, ...]]:
    try:
        return list(_dates(value))
    except ValueError:  # a malformed date is reported by validation, not here
        return []


_EXTRACTORS: dict[str, tuple[str, Callable[[Any], Iterable[tuple[Any, ...]]]]] = {
    TOKEN: ("tok", _tokens), STRING: ("str", _strings), DATE: ("dt", _date_rows),
    REFERENCE: ("ref", _reference_rows), QUANTITY: ("qty", _quantities),
}
_PLANS: dict[str, list[tuple[int, str, Callable[[Any], Iterable[tuple[Any, ...]]], list[list[str]]]]] = {}


def _extraction_plan(resource_type: str) -> list[tuple[int, str, Callable[[Any], Iterable[tuple[Any, ...]]], list[list[str]]]]:
    plan = _PLANS.get(resource_type)
    if plan is None:
        plan, done = [], set()
        for param, key_paths in _compiled(resource_type):
            if param.pid not in done:  # aliases (patient / subject) share one set of rows
                done.add(param.pid)
                table, extractor = _EXTRACTORS[param.kind]
                plan.append((param.pid, table, extractor, key_paths))
        _PLANS[resource_type] = plan
    return plan


def extract_index_rows(resource: dict[str, Any]) -> IndexRows:
    """Rows for the store's index tables, keyed by table (tok, str, dt, ref, qty); rid not yet set.

    Row shapes: tok (pid, system, code, text); str (pid, value, exact); dt (pid, low, high);
    ref (pid, target); qty (pid, value, system, code). Values that cannot be read (a malformed date)
    are skipped here; validation reports them separately. Duplicate rows are harmless (searches use
    DISTINCT, EXISTS, min and max) and are not removed.
    """
    rows: IndexRows = {"tok": [], "str": [], "dt": [], "ref": [], "qty": []}
    for pid, table, extractor, key_paths in _extraction_plan(resource["resourceType"]):
        target = rows[table]
        for keys in key_paths:
            for value in _values(resource, keys):
                for item in extractor(value):
                    target.append((pid, *item))
    return rows
