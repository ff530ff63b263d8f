"""The tools an agent uses in FHIR-v0: FHIR search and read, record helpers, dates, units, codes,
calculators, knowledge search, and three write tools.

Every tool receives the episode's `FhirState`: the FHIR backend (the episode's copy-on-write view of a store,
or a session with a FHIR server), the task's patient (writes to any other patient are refused) and the task's
fixed "now". Docstrings are what the model reads.
"""

from __future__ import annotations

import calendar
import json
import threading
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from typing import Any, Literal, Protocol

from agentgym.tools import DEFAULT_OUTPUT_LIMIT, Tool, ToolError, render_value, submit, tool
from agentgym_fhir import calculators, codes, units
from agentgym_fhir.errors import FhirError
from agentgym_fhir.store import Episode

DEFAULT_PAGE = 20
MAX_PAGE = 100
_SCOPING_PARAMS = ("patient", "subject", "_id", "identifier", "encounter", "context", "name", "family", "given", "birthdate")
_GLOBAL_TYPES = {"Patient", "Practitioner", "Organization", "Medication", "Location"}
LOINC = "http://loinc.org"
RXNORM = "http://www.nlm.nih.gov/research/umls/rxnorm"
SNOMED = "http://snomed.info/sct"
ICD10CM = "http://hl7.org/fhir/sid/icd-10-cm"


class FhirBackend(Protocol):
    """What the tools need from a FHIR data source (an `Episode` of a store, or a server session)."""

    def read(self, resource_type: str, resource_id: str) -> dict[str, Any]: ...
    def search(self, resource_type: str, params: dict[str, Any] | None = None) -> Any: ...
    def create_resource(self, resource: dict[str, Any]) -> dict[str, Any]: ...
    def written(self) -> list[dict[str, Any]]: ...


@dataclass
class FhirState:
    """One episode's state: the backend, the task's patient and its fixed now.

    Attributes:
        backend: Where reads and writes go; writes stay in the episode (a store episode) or are tracked (a
            server session).
        patient_id: The id of the patient the task is about (None for tasks across patients; then writes
            are refused).
        now: The task's fixed "now" (UTC).
        knowledge: The `search_knowledge` callable, or None when the knowledge base is not installed.
    """

    backend: FhirBackend
    patient_id: str | None
    now: datetime
    knowledge: Any = None
    extra: dict[str, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def written(self) -> list[dict[str, Any]]:
        return self.backend.written()


def parse_now(text: str | None) -> datetime:
    """A task's "now" (ISO date or date-time) as an aware UTC datetime."""
    if not text:
        return datetime(2024, 12, 31, 12, 0, tzinfo=timezone.utc)
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def compact(resource: dict[str, Any]) -> dict[str, Any]:
    """A resource without the parts an agent never needs (narrative `text`, `meta`)."""
    return {key: value for key, value in resource.items() if key not in ("text", "meta")}


# A page's JSON, built once: `json.dumps` with options builds a new encoder on every call.
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
# Stored JSON text -> the compact JSON text of that resource, as `fhir_search` shows it. Keyed by the stored
# text itself, so a new version (an episode's own write) is a new key: an entry can never be stale, and what
# one episode wrote is only ever shown for that exact text. Oldest entries are dropped past the limit.
_COMPACT_TEXTS: dict[str, str] = {}
_COMPACT_TEXTS_LIMIT = 16384


def _compact_text(stored: str) -> str:
    text = _COMPACT_TEXTS.get(stored)
    if text is None:
        text = _dumps(compact(json.loads(stored)))
        if len(_COMPACT_TEXTS) >= _COMPACT_TEXTS_LIMIT:
            try:
                del _COMPACT_TEXTS[next(iter(_COMPACT_TEXTS))]
            except (StopIteration, KeyError, RuntimeError):  # another thread dropped it first
                pass
        _COMPACT_TEXTS[stored] = text
    return text


# ------------------------------------------------------------------------------------------- output size
# A tool's output must fit in what the env shows of it (`ToolEnv.output_limit`, handed to the tools as
# state.extra["output_limit"]). Lists are cut here, by whole entries, into valid JSON that says how many were
# shown and left out and how to page to the rest; the env's own cut (mid-text) is then never reached.
def output_budget(state: Any) -> int:
    """Characters one tool output may take in this episode."""
    extra = getattr(state, "extra", None)
    limit = extra.get("output_limit") if isinstance(extra, dict) else None
    return limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else DEFAULT_OUTPUT_LIMIT


def fit_rows(payload: dict[str, Any], key: str, rows: list[Any], budget: int, how_to_page: Any) -> dict[str, Any]:
    """`payload` with `shown` and `payload[key]` = the most leading whole `rows` whose rendering fits in
    `budget` characters; when some are left out, also `left_out` (how many) and `next` (`how_to_page(shown)`,
    how to see the rest). `rows` are this output's rows only: a count of everything that matched stays in
    `payload` under its own name."""

    def build(count: int) -> dict[str, Any]:
        out = {**payload, "shown": count}
        if count < len(rows):
            out["left_out"] = len(rows) - count
            out["next"] = how_to_page(count)
        out[key] = rows[:count]
        return out

    whole = build(len(rows))
    if len(render_value(whole)) <= budget:
        return whole
    return build(_most_that_fit(len(rows) - 1, lambda count: len(render_value(build(count))) <= budget))


def _call(function: Any, *args: Any) -> Any:
    try:
        return function(*args)
    except FhirError as error:
        raise ToolError(error.message) from None


def _patient_ref(patient_id: str) -> str:
    patient_id = patient_id.strip()
    return patient_id if patient_id.startswith("Patient/") else f"Patient/{patient_id}"


def _params(params: dict[str, Any] | None) -> dict[str, str | list[str]]:
    clean: dict[str, str | list[str]] = {}
    for key, value in (params or {}).items():
        if isinstance(value, list):
            clean[str(key)] = [str(item) for item in value]
        elif isinstance(value, bool):
            clean[str(key)] = "true" if value else "false"
        else:
            clean[str(key)] = str(value)
    return clean


# ------------------------------------------------------------------------------------------- FHIR
@tool(output_limit=0)
def fhir_search(state: FhirState, resource_type: str, params: dict[str, Any] | None = None) -> str:
    """Search FHIR R4 resources, like GET [base]/{resource_type}?{params}. Returns one page as JSON.

    Common parameters: patient (a Patient id), code (LOINC/SNOMED/RxNorm code, or system|code),
    date / authoredon / onset-date with prefixes ge, le, gt, lt (e.g. "ge2024-01-01"), status,
    clinical-status, category, _sort ("-date" newest first), _count (page size, default 20, at most 100),
    _offset (skip that many to get the next page), _summary=count (only the count). Patient searches:
    name, family, given, birthdate, gender, identifier (the MRN). Unknown parameters are rejected.
    A page too long to show whole shows its first entries whole, says how many it left out ("left_out")
    and which _offset shows the rest ("next").

    Args:
        resource_type: A FHIR resource type such as Patient, Observation, Condition, MedicationRequest,
            Encounter, Procedure, AllergyIntolerance, Immunization, ServiceRequest, DiagnosticReport.
        params: Search parameters as an object, e.g. {"patient": "123", "code": "2823-3", "_sort": "-date"}.
            Give a list to AND several values of one parameter; commas inside a value mean OR.
    """
    query = _params(params)
    notes: list[str] = []
    count_text = query.get("_count")
    if query.get("_summary") != "count":
        try:
            count = int(count_text) if isinstance(count_text, str) else DEFAULT_PAGE
        except ValueError:
            raise ToolError(f"_count must be a whole number, got {count_text!r}") from None
        if count > MAX_PAGE:
            notes.append(f"_count={count} lowered to {MAX_PAGE}, the most one page shows; page on with _offset")
            count = MAX_PAGE
        query["_count"] = str(max(count, 0))
    backend = state.backend
    if isinstance(backend, Episode):
        try:
            result = backend.search(resource_type, query, decode=False)
        except FhirError as error:
            raise ToolError(error.message) from None
    else:
        result = _call(backend.search, resource_type, query)
    if resource_type not in _GLOBAL_TYPES and not any(key.split(":")[0] in _SCOPING_PARAMS for key in query):
        notes.append(f"this search spans every patient in the store ({result.total} matches); narrow it with "
                     "patient=<id> unless you mean to look across patients")
    page: dict[str, Any] = {"resourceType": resource_type, "total": result.total}
    if query.get("_summary") == "count":
        return json.dumps(page)
    offset = int(str(query.get("_offset", "0")) or 0) if str(query.get("_offset", "0")).isdigit() else 0
    texts = result.entry_texts
    if texts is not None:  # the same bytes as encoding the decoded page, from cached pieces
        entries = [_compact_text(text) for text in texts]
    else:
        entries = [_dumps(compact(resource)) for resource in result.entries]
    included = [_dumps(compact(resource)) for resource in getattr(result, "included", None) or []]
    notes.extend(result.warnings)
    return _fit_page(page, entries, included, offset=offset, more=result.next_params is not None,
                     notes=notes, budget=output_budget(state))


def _fit_page(page: dict[str, Any], entries: list[str], included: list[str], *, offset: int, more: bool,
              notes: list[str], budget: int) -> str:
    """The page as JSON text, with as many whole entries (then included resources) as fit in `budget`
    characters. `shown` is the number of entries in it; entries left out are counted in `left_out`, and `next`
    names the _offset that shows them (or the next page)."""

    def text(kept: int, kept_included: int) -> str:
        head: dict[str, Any] = {**page, "shown": kept, "offset": offset}
        if kept < len(entries):
            head["left_out"] = len(entries) - kept
        if kept < len(entries) or more:
            head["next"] = f"more results: call again with _offset={offset + kept}"
        if kept_included < len(included):
            head["included_left_out"] = len(included) - kept_included
        cut = (f"this page was cut to {kept} whole entries to fit {budget} characters; page on with "
               f"_offset={offset + kept}, or ask for fewer with _count or _elements")
        listed = [*notes, cut] if kept < len(entries) else notes
        if listed:
            head["notes"] = listed
        body = _dumps(head)[:-1] + ',"entry":[' + ",".join(entries[:kept]) + "]"
        if included:
            body += ',"included":[' + ",".join(included[:kept_included]) + "]"
        return body + "}"

    whole = text(len(entries), len(included))
    if len(whole) <= budget:
        return whole
    kept = _most_that_fit(len(entries), lambda count: len(text(count, 0)) <= budget)
    kept_included = _most_that_fit(len(included), lambda count: len(text(kept, count)) <= budget) \
        if kept == len(entries) else 0
    return text(kept, kept_included)


def _most_that_fit(count: int, fits: Any) -> int:
    """The largest n in 0..count with fits(n) (fits is monotone; 0 is taken to fit)."""
    low, high = 0, count
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


@tool(output_limit=0)
def fhir_read(state: FhirState, resource_type: str, resource_id: str) -> dict[str, Any]:
    """Read one FHIR resource by type and id, like GET [base]/{resource_type}/{resource_id}.

    A resource too long to show whole leaves out its longest fields and names them ("left_out_fields"); read
    one of them with fhir_search(resource_type, {"_id": id, "_elements": field}).

    Args:
        resource_type: The resource type, e.g. Patient or Observation.
        resource_id: The resource's id (without the type prefix).
    """
    resource_id = resource_id.split("/")[-1]
    resource = compact(_call(state.backend.read, resource_type, resource_id))
    budget = output_budget(state)
    if len(render_value(resource)) <= budget:
        return resource
    kept = dict(resource)
    left_out: list[str] = []
    note = (f"too long to show whole ({budget} characters); read a left-out field with fhir_search(\"{resource_type}\", "
            f"{{\"_id\": \"{resource_id}\", \"_elements\": \"<field>\"}})")
    while len(render_value({**kept, "left_out_fields": left_out, "note": note})) > budget:
        fields = [name for name in kept if name not in ("resourceType", "id")]
        if not fields:
            break
        longest = max(fields, key=lambda name: len(render_value(kept[name])))
        left_out.append(longest)
        del kept[longest]
    return {**kept, "left_out_fields": left_out, "note": note}


# ------------------------------------------------------------------------------------------- record helpers
def _quantity_text(quantity: dict[str, Any]) -> tuple[Any, str]:
    return quantity.get("value"), str(quantity.get("code") or quantity.get("unit") or "")


def _coding(concept: Any, system: str | None = None) -> dict[str, Any]:
    for coding in (concept or {}).get("coding") or []:
        if system is None or coding.get("system") == system:
            return coding
    return {}


def _code_param(code: str) -> str:
    code = code.strip()
    return code


def observation_rows(resource: dict[str, Any], code: str | None = None) -> list[dict[str, Any]]:
    """An Observation as rows of (code, display, value, unit, date): the value itself or the component
    matching `code` (a blood-pressure panel holds systolic and diastolic as components)."""
    when = resource.get("effectiveDateTime") or (resource.get("effectivePeriod") or {}).get("start") or \
        resource.get("effectiveInstant") or resource.get("issued")
    rows = []
    wanted = code.split("|")[-1] if code else None
    main = _coding(resource.get("code"))
    if "valueQuantity" in resource:
        value, unit = _quantity_text(resource["valueQuantity"])
        rows.append({"code": main.get("code"), "display": main.get("display") or (resource.get("code") or {}).get("text"),
                     "value": value, "unit": unit, "date": when})
    elif "valueCodeableConcept" in resource:
        concept = resource["valueCodeableConcept"]
        rows.append({"code": main.get("code"), "display": main.get("display"),
                     "value": concept.get("text") or _coding(concept).get("display"), "unit": "", "date": when})
    elif "valueString" in resource:
        rows.append({"code": main.get("code"), "display": main.get("display"), "value": resource["valueString"],
                     "unit": "", "date": when})
    for component in resource.get("component") or []:
        coding = _coding(component.get("code"))
        if "valueQuantity" in component:
            value, unit = _quantity_text(component["valueQuantity"])
            rows.append({"code": coding.get("code"), "display": coding.get("display"), "value": value,
                         "unit": unit, "date": when})
    if wanted:
        codes_present = {main.get("code")} | {c.get("code") for c in (resource.get("code") or {}).get("coding", [])}
        if wanted in codes_present:
            rows = [row for row in rows if row["code"] in codes_present] or rows
        else:
            rows = [row for row in rows if row["code"] == wanted]
    for row in rows:
        interpretation = _coding(_first(resource.get("interpretation")))
        if interpretation and row["code"] == main.get("code"):
            row["interpretation"] = interpretation.get("display") or interpretation.get("code")
    return rows


def _first(items: Any) -> Any:
    return items[0] if isinstance(items, list) and items else None


def _search_all(state: FhirState, resource_type: str, params: dict[str, Any], limit: int = 1000) -> list[dict[str, Any]]:
    query = _params(params)
    query["_count"] = str(min(limit, 1000))
    return list(_call(state.backend.search, resource_type, query).entries)


def _observations(state: FhirState, patient_id: str, code: str, extra: dict[str, Any] | None = None,
                  limit: int = 1000) -> list[dict[str, Any]]:
    params = {"patient": _patient_ref(patient_id), "combo-code": _code_param(code), **(extra or {})}
    return _search_all(state, "Observation", params, limit)


@tool
def latest_observation(state: FhirState, patient_id: str, code: str) -> dict[str, Any]:
    """The most recent observation (lab, vital sign or score) of one code for a patient, with its unit, date and
    status, whatever the status: check it. A result marked entered-in-error (or cancelled) is not a valid
    result; observation_history lists the others. Also matches components, so "8480-6" (systolic blood
    pressure) finds the systolic value inside a blood pressure panel.

    Args:
        patient_id: The patient's FHIR id.
        code: The LOINC code (e.g. "2823-3" for potassium), optionally as "http://loinc.org|2823-3".
    """
    found = _observations(state, patient_id, code, {"_sort": "-date"}, limit=1)
    if not found:
        return {"found": False, "message": f"no observation with code {code} for patient {patient_id}"}
    total = _call(state.backend.search, "Observation",
                  {"patient": _patient_ref(patient_id), "combo-code": code, "_summary": "count"}).total
    rows = observation_rows(found[0], code)
    result: dict[str, Any] = {"found": True, "observation_id": found[0].get("id"), **(rows[0] if rows else {}),
                              "status": found[0].get("status"), "observations_with_this_code": total}
    reference = _first(found[0].get("referenceRange"))
    if reference and rows and rows[0]["code"] == _coding(found[0].get("code")).get("code"):
        result["reference_range"] = {k: (reference.get(k) or {}).get("value") for k in ("low", "high") if k in reference}
    return result


@tool(output_limit=0)
def observation_history(state: FhirState, patient_id: str, code: str, start: str | None = None,
                        end: str | None = None, offset: int = 0) -> dict[str, Any]:
    """Every observation of one code for a patient, oldest first, optionally within a date range, each with
    its status (final, amended, corrected; a row marked entered-in-error is not a valid result).

    "total" counts every match; "shown" the rows in this output. When they are too many to show at once,
    "left_out" counts the rest and "next" says how to see them (call again with offset, or narrow the dates).

    Args:
        patient_id: The patient's FHIR id.
        code: The LOINC code, e.g. "8480-6" (systolic blood pressure) or "4548-4" (hemoglobin A1c).
        start: Earliest date to include (YYYY-MM-DD), inclusive.
        end: Latest date to include (YYYY-MM-DD), inclusive.
        offset: Skip this many rows (to see the rows a previous call left out).
    """
    extra: dict[str, Any] = {"_sort": "date"}
    dates = []
    if start:
        dates.append(f"ge{start}")
    if end:
        dates.append(f"le{end}")
    if dates:
        extra["date"] = dates
    rows = []
    for resource in _observations(state, patient_id, code, extra):
        rows.extend({**row, "status": resource.get("status")} for row in observation_rows(resource, code))
    start_at = _offset(offset)
    listed = [{k: row[k] for k in ("date", "value", "unit", "status")} for row in rows[start_at:]]
    return fit_rows({"patient_id": patient_id, "code": code, "total": len(rows), "offset": start_at}, "observations",
                    listed, output_budget(state),
                    lambda shown: f"call again with offset={start_at + shown} for the rows left out")


def _offset(offset: Any) -> int:
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ToolError(f"offset must be a whole number of rows to skip (0 or more), got {offset!r}")
    return offset


def medication_rows(resource: dict[str, Any]) -> dict[str, Any]:
    """A MedicationRequest as one flat row (name, RxNorm code, dose, route, doses per day, dates, status)."""
    concept = resource.get("medicationCodeableConcept") or {}
    coding = _coding(concept, RXNORM) or _coding(concept)
    dosage = _first(resource.get("dosageInstruction")) or {}
    dose = (_first(dosage.get("doseAndRate")) or {}).get("doseQuantity") or {}
    repeat = (dosage.get("timing") or {}).get("repeat") or {}
    route = _coding(dosage.get("route"))
    row: dict[str, Any] = {"id": resource.get("id"), "medication": coding.get("display") or concept.get("text"),
                           "rxnorm": coding.get("code"), "status": resource.get("status"),
                           "authored_on": resource.get("authoredOn")}
    if dose:
        row["dose"] = dose.get("value")
        row["dose_unit"] = dose.get("code") or dose.get("unit")
    if route:
        row["route"] = route.get("display") or route.get("code")
    if repeat.get("frequency"):
        row["timing"] = f"{repeat.get('frequency')} per {repeat.get('period', 1)} {repeat.get('periodUnit', 'd')}"
    if dosage.get("asNeededBoolean"):
        row["as_needed"] = True
    return row


@tool(output_limit=0)
def medication_list(state: FhirState, patient_id: str, status: str = "active", offset: int = 0) -> dict[str, Any]:
    """A patient's medication orders (MedicationRequest) as a flat list: name, RxNorm code, dose, route, timing.

    "total" counts every order that matches; "shown" those in this output ("left_out" and "next" when some
    did not fit: call again with offset).

    Args:
        patient_id: The patient's FHIR id.
        status: "active" (the default: what the patient takes now), "stopped", "completed", or "all".
        offset: Skip this many orders (to see the ones a previous call left out).
    """
    params: dict[str, Any] = {"patient": _patient_ref(patient_id), "_sort": "-authoredon"}
    if status != "all":
        params["status"] = status
    rows = [medication_rows(r) for r in _search_all(state, "MedicationRequest", params)]
    start_at = _offset(offset)
    return fit_rows({"patient_id": patient_id, "status": status, "total": len(rows), "offset": start_at},
                    "medications", rows[start_at:], output_budget(state),
                    lambda shown: f"call again with offset={start_at + shown} for the orders left out")


def condition_row(resource: dict[str, Any]) -> dict[str, Any]:
    """A Condition as one flat row (name, SNOMED and ICD-10-CM codes, status, onset, abatement)."""
    concept = resource.get("code") or {}
    snomed, icd = _coding(concept, SNOMED), _coding(concept, ICD10CM)
    row: dict[str, Any] = {"id": resource.get("id"), "condition": (snomed or _coding(concept)).get("display")
                           or concept.get("text"),
                           "clinical_status": _coding(resource.get("clinicalStatus")).get("code"),
                           "onset": resource.get("onsetDateTime") or (resource.get("onsetPeriod") or {}).get("start")}
    if snomed:
        row["snomed"] = snomed.get("code")
    if icd:
        row["icd10cm"] = icd.get("code")
    if resource.get("abatementDateTime"):
        row["abatement"] = resource["abatementDateTime"]
    return row


@tool(output_limit=0)
def problem_list(state: FhirState, patient_id: str, include_inactive: bool = False, offset: int = 0) -> dict[str, Any]:
    """A patient's conditions (diagnoses) with their codes, status and onset; active ones by default.

    "total" counts every condition that matches; "shown" those in this output ("left_out" and "next" when
    some did not fit: call again with offset).

    Args:
        patient_id: The patient's FHIR id.
        include_inactive: Also list resolved and inactive conditions.
        offset: Skip this many conditions (to see the ones a previous call left out).
    """
    params: dict[str, Any] = {"patient": _patient_ref(patient_id), "_sort": "-onset-date"}
    if not include_inactive:
        params["clinical-status"] = "active,recurrence,relapse"
    rows = [condition_row(r) for r in _search_all(state, "Condition", params)]
    start_at = _offset(offset)
    return fit_rows({"patient_id": patient_id, "total": len(rows), "offset": start_at}, "conditions", rows[start_at:],
                    output_budget(state),
                    lambda shown: f"call again with offset={start_at + shown} for the conditions left out")


# ------------------------------------------------------------------------------------------- dates
def _parse_day(state: FhirState, text: str) -> date:
    if text.strip().lower() in ("now", "today"):
        return state.now.date()
    try:
        return date.fromisoformat(text.strip()[:10])
    except ValueError:
        raise ToolError(f"{text!r} is not a date; write YYYY-MM-DD (a date-time's date part is used) or 'now'") from None


def _add_months(day: date, months: int) -> date:
    month_index = day.month - 1 + months
    year, month = day.year + month_index // 12, month_index % 12 + 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def whole_years(start: date, end: date) -> int:
    """Completed years from `start` to `end` (an age)."""
    return end.year - start.year - ((end.month, end.day) < (start.month, start.day))


@tool
def date_diff(state: FhirState, start: str, end: str = "now", unit: Literal["days", "weeks", "months", "years"] = "days") -> dict[str, Any]:
    """Time between two dates against the task's fixed "now": days, or completed weeks, months or years.

    Ages are date_diff(birth_date, "now", "years").

    Args:
        start: The earlier date, YYYY-MM-DD (or a FHIR date-time) or "now".
        end: The later date, default "now" (the task's date, not the real clock).
        unit: days, weeks, months or years (whole units completed, as ages are counted).
    """
    first, last = _parse_day(state, start), _parse_day(state, end)
    sign = 1
    if last < first:
        first, last, sign = last, first, -1
    if unit == "days":
        value = (last - first).days
    elif unit == "weeks":
        value = (last - first).days // 7
    elif unit == "years":
        value = whole_years(first, last)
    else:
        value = (last.year - first.year) * 12 + last.month - first.month - (last.day < first.day)
    return {"start": first.isoformat() if sign > 0 else last.isoformat(),
            "end": last.isoformat() if sign > 0 else first.isoformat(), unit: sign * value}


@tool
def date_shift(state: FhirState, date_from: str = "now", days: int = 0, weeks: int = 0, months: int = 0,
               years: int = 0) -> dict[str, str]:
    """A date moved forward (positive) or back (negative) from a date or the task's fixed "now".

    For "the past 90 days" use date_shift("now", days=-90) as the start of the window.

    Args:
        date_from: YYYY-MM-DD or "now" (the task's date).
        days: Days to add (negative to go back).
        weeks: Weeks to add.
        months: Calendar months to add.
        years: Calendar years to add.
    """
    day = _parse_day(state, date_from)
    day = _add_months(day, months + 12 * years) + timedelta(days=days + 7 * weeks)
    return {"date": day.isoformat(), "now": state.now.date().isoformat()}


# ------------------------------------------------------------------------------------------- units, codes, calculators
@tool
def convert_units(value: float, from_unit: str, to_unit: str, analyte: str | None = None) -> dict[str, Any]:
    """Convert a clinical value between units: weight (kg, lb), length (cm, in), temperature (Cel, [degF]),
    time, pressure, and lab concentrations (mg/dL <-> mmol/L or umol/L needs the analyte).

    Args:
        value: The number to convert.
        from_unit: Its unit, e.g. "lb", "[degF]", "mg/dL".
        to_unit: The unit wanted, e.g. "kg", "Cel", "mmol/L".
        analyte: What was measured, for mass <-> molar conversions: glucose, creatinine, calcium, bun,
            cholesterol, triglycerides, bilirubin, magnesium, potassium, sodium...
    """
    try:
        result = units.convert(value, from_unit, to_unit, analyte)
    except units.UnitError as error:
        raise ToolError(str(error)) from None
    return {"value": round(result, 4), "unit": to_unit}


@tool(output_limit=0)
def lookup_code(state: FhirState, code: str | None = None, text: str | None = None, system: str | None = None) -> Any:
    """Look up a medical code's meaning, or find codes by words. Systems: icd10cm (all of ICD-10-CM), loinc,
    rxnorm, snomed, cvx (the codes this record system uses).

    Args:
        code: A code to explain, e.g. "E11.9" (needs system) or "2823-3".
        text: Words to search for instead, e.g. "type 2 diabetes" or "potassium".
        system: icd10cm, loinc, rxnorm, snomed or cvx (or the system URI). Needed with code.
    """
    try:
        if code:
            if not system:
                hits = []
                for name in ("loinc", "rxnorm", "snomed", "cvx", "icd10cm"):
                    try:
                        hits.append(codes.lookup(name, code).as_dict())
                    except codes.CodeLookupError:
                        continue
                if not hits:
                    raise ToolError(f"no system holds the code {code!r}; give system= or search by text")
                return hits
            return codes.lookup(system, code).as_dict()
        if text:
            found = [entry.as_dict() for entry in codes.search(text, system)]
            if not found:
                return f"no codes match {text!r}; try fewer or other words"
            if len(render_value(found)) <= output_budget(state):
                return found
            return fit_rows({"text": text, "system": system}, "matches", found, output_budget(state),
                            lambda shown: "narrow the search: more or other words, or give system=")
    except codes.CodeLookupError as error:
        raise ToolError(str(error)) from None
    raise ToolError("give code (with system) to explain a code, or text to search for codes")


def _calculate_description() -> str:
    return ("Run a clinical calculator and get its value, unit and the formula with your numbers filled in. "
            "Gather the inputs from the record first (latest labs and vitals, conditions, age from the birth "
            "date). Calculators and their inputs (? marks optional ones):\n" + calculators.describe_calculators())


def _calculate(calculator: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Args:
        calculator: The calculator's name, e.g. "egfr_ckd_epi_2021".
        inputs: Its inputs by name, e.g. {"creatinine_mg_dl": 1.4, "age_years": 67, "sex": "female"}.
    """
    try:
        return calculators.calculate(calculator, inputs).as_dict()
    except calculators.CalculatorError as error:
        raise ToolError(str(error)) from None


_calculate.__annotations__["calculator"] = Literal[tuple(calculators.CALCULATORS)]  # an enum in the schema
calculate = Tool(_calculate, name="calculate", description=_calculate_description())


# ------------------------------------------------------------------------------------------- writes
def _create(state: FhirState, resource: dict[str, Any], resource_type: str) -> dict[str, Any]:
    if not isinstance(resource, dict):
        raise ToolError(f"resource must be a JSON object (a FHIR {resource_type})")
    resource = dict(resource)
    given_type = resource.setdefault("resourceType", resource_type)
    if given_type != resource_type:
        raise ToolError(f"this tool creates {resource_type} resources, but resourceType is {given_type!r}")
    if state.patient_id is None:
        raise ToolError("this task is not about one patient, so it asks for no orders or records; answer with submit")
    subject = (resource.get("subject") or {}).get("reference") if isinstance(resource.get("subject"), dict) else None
    if not subject:
        raise ToolError(f"invalid {resource_type}: {resource_type}.subject is required, e.g. "
                        f"{{\"reference\": \"Patient/{state.patient_id}\"}}")
    if subject.split("/_history")[0].rstrip("/").split("/")[-2:] != ["Patient", state.patient_id]:
        raise ToolError(f"refused: {resource_type}.subject is {subject!r}, but this task is about "
                        f"Patient/{state.patient_id}; you may only write to that patient's record")
    resource["subject"] = {**resource["subject"], "reference": f"Patient/{state.patient_id}"}
    stored = _call(state.backend.create_resource, resource)
    return {"created": f"{resource_type}/{stored['id']}", "resource": compact(stored)}


@tool(writes=True)
def create_medication_request(state: FhirState, resource: dict[str, Any]) -> dict[str, Any]:
    """Order a medication: create a FHIR MedicationRequest in the patient's record. Validated before it is saved.

    Minimal example: {"resourceType": "MedicationRequest", "status": "active", "intent": "order",
    "subject": {"reference": "Patient/<id>"}, "authoredOn": "<now>",
    "medicationCodeableConcept": {"coding": [{"system": "http://www.nlm.nih.gov/research/umls/rxnorm",
    "code": "<rxcui>", "display": "<name>"}]},
    "dosageInstruction": [{"route": {"coding": [{"system": "http://snomed.info/sct", "code": "26643006",
    "display": "Oral route"}]}, "timing": {"repeat": {"frequency": 1, "period": 1, "periodUnit": "d"}},
    "doseAndRate": [{"doseQuantity": {"value": 40, "unit": "meq", "system": "http://unitsofmeasure.org",
    "code": "meq"}}]}]}

    Args:
        resource: The MedicationRequest as FHIR R4 JSON.
    """
    return _create(state, resource, "MedicationRequest")


@tool(writes=True)
def create_service_request(state: FhirState, resource: dict[str, Any]) -> dict[str, Any]:
    """Order a test, procedure or referral: create a FHIR ServiceRequest in the patient's record (validated).

    A referral: {"resourceType": "ServiceRequest", "status": "active", "intent": "order",
    "subject": {"reference": "Patient/<id>"}, "authoredOn": "<now>",
    "code": {"coding": [{"system": "http://snomed.info/sct", "code": "3457005", "display": "Patient referral"}]},
    "performerType": {"coding": [{"system": "http://snomed.info/sct", "code": "<specialty code>"}]},
    "reasonCode": [{"text": "<why>"}]}. A lab order uses the test's LOINC code as code.

    Args:
        resource: The ServiceRequest as FHIR R4 JSON.
    """
    return _create(state, resource, "ServiceRequest")


@tool(writes=True)
def create_observation(state: FhirState, resource: dict[str, Any]) -> dict[str, Any]:
    """Record a measurement: create a FHIR Observation in the patient's record (validated).

    Example: {"resourceType": "Observation", "status": "final", "subject": {"reference": "Patient/<id>"},
    "category": [{"coding": [{"system": "http://terminology.hl7.org/CodeSystem/observation-category",
    "code": "vital-signs"}]}], "code": {"coding": [{"system": "http://loinc.org", "code": "29463-7",
    "display": "Body weight"}]}, "effectiveDateTime": "<now>",
    "valueQuantity": {"value": 72.5, "unit": "kg", "system": "http://unitsofmeasure.org", "code": "kg"}}

    Args:
        resource: The Observation as FHIR R4 JSON.
    """
    return _create(state, resource, "Observation")


READ_TOOLS = [fhir_search, fhir_read, latest_observation, observation_history, medication_list, problem_list,
              date_diff, date_shift, convert_units, lookup_code, calculate]
WRITE_TOOLS = [create_medication_request, create_service_request, create_observation]


def knowledge_tool(kb: Any = None) -> Tool | None:
    """The `search_knowledge` tool from agentgym-knowledge, or None when that package is not installed."""
    try:
        from agentgym_knowledge.tool import make_search_tool
    except ImportError:
        return None
    made = make_search_tool(kb=kb)
    return made if isinstance(made, Tool) else Tool(made)


def all_tools(kb: Any = None, knowledge: bool = True) -> list[Tool]:
    """Every FHIR-v0 tool, in the order the model sees them (submit last)."""
    tools: list[Tool] = [*READ_TOOLS, *WRITE_TOOLS]
    if knowledge:
        search = knowledge_tool(kb)
        if search is not None:
            tools.append(search)
    tools.append(submit)
    return tools
