"""What every task family builds on: patient records read from the data, the generation context, and the
helpers that turn a computed answer and its tool-call solution into a `Task`.

Families never hard-code facts: they read a `PatientRecord` (every resource that names the patient, read
once from the store, an import or a server), compute the answer with the same code the tools use, and write
the solution as the tool calls that find it.
"""

from __future__ import annotations

import hashlib
import random
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from typing import Any

from agentgym.tasks import Task
from agentgym_fhir.tools import (
    ICD10CM,
    LOINC,
    RXNORM,
    SNOMED,
    condition_row,
    medication_rows,
    observation_rows,
    whole_years,
)

RECORD_TYPES = ("Patient", "Observation", "Condition", "MedicationRequest", "Encounter", "AllergyIntolerance")
MRN_TYPE = "MR"


def parse_instant(text: str | None) -> datetime | None:
    """A FHIR date or date-time as an aware UTC datetime (dates at midnight)."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class Reading:
    """One numeric observation value (or component) with its date."""

    when: datetime
    value: float
    unit: str
    display: str
    resource_id: str

    @property
    def day(self) -> date:
        return self.when.astimezone(timezone.utc).date()


@dataclass
class PatientRecord:
    """Everything in the data that names one patient, indexed for the families."""

    patient: dict[str, Any]
    observations: list[dict[str, Any]] = field(default_factory=list)
    conditions: list[dict[str, Any]] = field(default_factory=list)
    medications: list[dict[str, Any]] = field(default_factory=list)
    encounters: list[dict[str, Any]] = field(default_factory=list)
    allergies: list[dict[str, Any]] = field(default_factory=list)
    administrations: list[dict[str, Any]] = field(default_factory=list)
    readings: dict[str, list[Reading]] = field(default_factory=dict)
    now: datetime = field(default_factory=lambda: datetime(2024, 12, 31, 12, tzinfo=timezone.utc))

    @property
    def id(self) -> str:
        return str(self.patient["id"])

    @property
    def reference(self) -> str:
        return f"Patient/{self.id}"

    @property
    def name(self) -> str:
        names = self.patient.get("name") or [{}]
        official = next((n for n in names if n.get("use") == "official"), names[0])
        given = " ".join(official.get("given") or [])
        return f"{given} {official.get('family', '')}".strip() or self.id

    @property
    def family_name(self) -> str:
        return str(((self.patient.get("name") or [{}])[0]).get("family", ""))

    @property
    def first_given(self) -> str:
        return str((((self.patient.get("name") or [{}])[0]).get("given") or [""])[0])

    @property
    def mrn(self) -> str | None:
        for identifier in self.patient.get("identifier") or []:
            codings = ((identifier.get("type") or {}).get("coding")) or []
            if any(c.get("code") == MRN_TYPE for c in codings) and identifier.get("value"):
                return str(identifier["value"])
        return None

    @property
    def sex(self) -> str | None:
        gender = self.patient.get("gender")
        return gender if gender in ("male", "female") else None

    @property
    def birth_date(self) -> date | None:
        text = self.patient.get("birthDate")
        try:
            return date.fromisoformat(text) if text else None
        except ValueError:
            return None

    @property
    def age(self) -> int | None:
        born = self.birth_date
        return whole_years(born, self.now.date()) if born else None

    @property
    def deceased(self) -> bool:
        return bool(self.patient.get("deceasedDateTime") or self.patient.get("deceasedBoolean"))

    def describe(self) -> str:
        """How prompts name the patient: name and FHIR id."""
        return f"{self.name} (Patient id {self.id})"

    def describe_by_name(self) -> str:
        """The patient as a clinician names them, without the FHIR id: name and birth date (the hard tier's
        multi-hop variant; another patient may share the name)."""
        return f"{self.name}, born {self.patient.get('birthDate')}"

    def series(self, code: str) -> list[Reading]:
        """Numeric readings of one LOINC code (values and components), oldest first, up to now."""
        return self.readings.get(code, [])

    def has_future(self, code: str) -> bool:
        """Whether the data holds readings of this code after the task's now (such tasks are skipped)."""
        return any(reading.when > self.now for reading in self.readings.get(f"future:{code}", []))

    def invalid(self, code: str) -> list[Reading]:
        """Readings of one code marked entered-in-error or cancelled (kept in the record, never results)."""
        return self.readings.get(f"invalid:{code}", [])

    def inpatient_stays(self) -> list[dict[str, Any]]:
        """The patient's inpatient Encounters (class IMP) up to now, oldest first."""
        stays = [e for e in self.encounters if (e.get("class") or {}).get("code") == "IMP"
                 and (parse_instant((e.get("period") or {}).get("start")) or self.now) < self.now]
        return sorted(stays, key=lambda e: e["period"]["start"])

    def latest(self, code: str) -> Reading | None:
        values = self.series(code)
        return values[-1] if values else None

    def active_conditions(self) -> list[dict[str, Any]]:
        return [c for c in self.conditions if condition_row(c)["clinical_status"] in ("active", "recurrence", "relapse")]

    def condition_codes(self, active_only: bool = True) -> set[str]:
        chosen = self.active_conditions() if active_only else self.conditions
        return {row["snomed"] for row in map(condition_row, chosen) if row.get("snomed")}

    def active_medications(self) -> list[dict[str, Any]]:
        return [medication_rows(m) for m in self.medications if m.get("status") == "active"]

    def active_allergy_codes(self) -> set[str]:
        found = set()
        for allergy in self.allergies:
            status = ((allergy.get("clinicalStatus") or {}).get("coding") or [{}])[0].get("code", "active")
            if status == "active":
                for coding in (allergy.get("code") or {}).get("coding") or []:
                    if coding.get("code"):
                        found.add(str(coding["code"]))
        return found


def _subject_id(resource: dict[str, Any]) -> str | None:
    holder = resource.get("subject") or resource.get("patient") or {}
    reference = holder.get("reference") if isinstance(holder, dict) else None
    if not reference or "Patient/" not in reference:
        return None
    return reference.split("Patient/", 1)[1].split("/")[0]


def load_records(source: Any, reference_date: datetime | None = None) -> list[PatientRecord]:
    """Read every patient's record from a store, server session or anything with `iter_resources(type)`.

    `reference_date` is the tasks' "now" (the generated world's today); for imported data without one, each
    patient's now is noon on the day after the last dated fact in their record.
    """
    patients: dict[str, PatientRecord] = {}
    for resource in source.iter_resources("Patient"):
        patients[str(resource["id"])] = PatientRecord(patient=resource)
    buckets = {"Observation": "observations", "Condition": "conditions", "MedicationRequest": "medications",
               "Encounter": "encounters", "AllergyIntolerance": "allergies",
               "MedicationAdministration": "administrations"}
    for resource_type, attribute in buckets.items():
        for resource in source.iter_resources(resource_type):
            owner = patients.get(_subject_id(resource) or "")
            if owner is not None:
                getattr(owner, attribute).append(resource)
    records = sorted(patients.values(), key=lambda record: record.id)
    for record in records:
        record.now = reference_date or _patient_now(record)
        _index_readings(record)
    return records


def _patient_now(record: PatientRecord) -> datetime:
    latest: datetime | None = None
    for resource in record.observations + record.encounters + record.conditions + record.medications:
        for key in ("effectiveDateTime", "authoredOn", "onsetDateTime", "recordedDate"):
            moment = parse_instant(resource.get(key))
            if moment and (latest is None or moment > latest):
                latest = moment
        period = resource.get("period") or {}
        moment = parse_instant(period.get("end") or period.get("start"))
        if moment and (latest is None or moment > latest):
            latest = moment
    base = (latest or datetime(2024, 12, 31, tzinfo=timezone.utc)).date() + timedelta(days=1)
    return datetime(base.year, base.month, base.day, 12, tzinfo=timezone.utc)


def _index_readings(record: PatientRecord) -> None:
    series: dict[str, list[Reading]] = defaultdict(list)
    for resource in record.observations:
        invalid = resource.get("status") in ("entered-in-error", "cancelled")
        for row in observation_rows(resource):
            when = parse_instant(row.get("date"))
            value = row.get("value")
            if when is None or row.get("code") is None or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            reading = Reading(when, float(value), str(row.get("unit") or ""), str(row.get("display") or ""),
                              str(resource.get("id")))
            key = row["code"] if when <= record.now else f"future:{row['code']}"
            if invalid:
                key = f"invalid:{row['code']}"
            series[key].append(reading)
    for values in series.values():
        values.sort(key=lambda reading: (reading.when, reading.resource_id))
    record.readings = dict(series)


# ------------------------------------------------------------------------------------------- generation
@dataclass
class Context:
    """What a family gets: the records, a seeded RNG of its own, and the split rule."""

    records: list[PatientRecord]
    seed: int
    family: str
    test_fraction: float = 0.2
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        digest = hashlib.sha256(f"{self.seed}:{self.family}".encode()).digest()
        self.rng = random.Random(int.from_bytes(digest[:8], "big"))

    def split_of(self, key: str) -> str:
        """train or test, by a stable hash of the patient id (or of the question, for cohort tasks)."""
        digest = hashlib.sha256(f"split:{self.seed}:{key}".encode()).digest()
        return "test" if int.from_bytes(digest[:4], "big") / 2**32 < self.test_fraction else "train"

    def task(self, *, key: str, prompt: str, answer: Any, solution: list[dict[str, Any]], verifier: dict[str, Any],
             difficulty: str, record: PatientRecord | None = None, now: datetime | None = None,
             metadata: dict[str, Any] | None = None) -> Task:
        moment = record.now if record is not None else (now or datetime(2024, 12, 31, 12, tzinfo=timezone.utc))
        now_text = moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        meta: dict[str, Any] = {"now": now_text, "patient_id": record.id if record else None}
        meta.update(metadata or {})
        digest = hashlib.sha256(f"{self.family}:{key}".encode()).hexdigest()[:12]
        return Task(
            id=f"fhir-{self.family}-{digest}", domain="fhir", family=self.family,
            split=self.split_of(record.id if record else key),
            prompt=f"Today is {moment.date().isoformat()}. {prompt}", answer=answer, solution=solution,
            verifier=verifier, metadata=meta, difficulty=difficulty,
        )


def call(name: str, **arguments: Any) -> dict[str, Any]:
    """One solution step."""
    return {"name": name, "arguments": arguments}


def submit(answer: Any) -> dict[str, Any]:
    return call("submit", answer=answer)


def answer_spec(kind: str, **params: Any) -> dict[str, Any]:
    return {"name": "fhir_answer", "params": {"kind": kind, **params}}


# The answer contract of a number asked for with its unit: every family that asks for a unit says this, and
# `fhir_answer` with `unit=` and `require_unit=True` holds to it (`agentgym_fhir.units` knows the spellings).
UNIT_CONTRACT = ("the unit as the record gives it, by its UCUM code or its usual spelling (e.g. mmol/L, "
                 "mL/min/1.73m2, mm[Hg] or mmHg), or another unit of the same quantity with the value converted")


# What counts as a result, said in every prompt that reads results: the record keeps results entered in error
# (status entered-in-error), and amended or corrected results replace what they amend.
RESULT_RULE = ("A result whose status is entered-in-error is not a result; every other status (final, amended, "
               "corrected) counts.")


def units_agree(readings: Iterable[Reading]) -> bool:
    """Whether every reading is in the same unit (a change or an aggregate across units would mean nothing)."""
    from agentgym_fhir.units import same_unit

    listed = list(readings)
    return all(same_unit(reading.unit, listed[0].unit) for reading in listed[1:]) if listed else True


def half_up(value: float, decimals: int) -> float:
    """`value` rounded to `decimals` places the way people round (half away from zero, on the decimal the number
    reads as: 109.05 is 109.1), not Python's `round` of the binary float (109.0)."""
    from decimal import ROUND_HALF_UP, Decimal

    return float(Decimal(repr(value)).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP))


def rounding_tolerance(decimals: int) -> float:
    """The tolerance around an exact gold for an answer "rounded to `decimals` places": half a unit of the last
    place, so both neighbours of an exact tie score (109.05 to one decimal: 109.0 and 109.1), and nothing
    further away does."""
    return 0.5 * 10 ** -decimals + 1e-6


def fmt(value: float) -> str:
    """A number as a person writes it (no trailing .0)."""
    return f"{value:g}" if abs(value) < 1e6 else f"{value:.0f}"


def balance(candidates: list[tuple[Any, Any]], rng: random.Random) -> list[Any]:
    """Keep (answer, item) candidates so that no answer is the gold of more than half the kept items: the most
    common answer is cut, at random, to as many as the second most common (a family with one answer keeps
    nothing, since a constant would solve it). Returns the kept items in their original order."""
    groups: dict[str, list[int]] = defaultdict(list)
    for position, (answer, _item) in enumerate(candidates):
        groups[repr(answer)].append(position)
    sizes = sorted((len(positions) for positions in groups.values()), reverse=True)
    cap = sizes[1] if len(sizes) > 1 else 0
    kept: set[int] = set()
    for positions in groups.values():
        kept.update(positions if len(positions) <= cap else rng.sample(positions, cap))
    return [item for position, (_answer, item) in enumerate(candidates) if position in kept]


# ------------------------------------------------------------------------------------------- difficulty
# Difficulty is measured from the task, not guessed from its family (docs/fhir-env.md, "Difficulty"):
#   work = the tool calls the oracle's solution makes before it submits
#        + the resource types those calls read, beyond the first
#        + 1 for each record read that needs a value the prompt does not give (a hop: a date, an encounter or a
#          resource id read from an earlier result)
#        + 2 for each trap the answer depends on (metadata["traps"]: a result entered in error that a naive
#          reading would take, a unit to convert, a value on a window's or a rule's edge, a derived age that
#          differs from a stored one, a page the answer needs past the first, a patient named by name and birth
#          date whose name another patient shares, a dose recorded as not given)
# easy: work <= 2; medium: 3 or more; hard: 6 or more with at least one trap.
TRAPS = ("entered_in_error", "unit_conversion", "window_edge", "rule_edge", "derived_value", "paging", "namesake",
         "not_given")
HARD_WORK, MEDIUM_WORK = 6, 3
_TYPE_OF_CALL = {"latest_observation": "Observation", "observation_history": "Observation",
                 "medication_list": "MedicationRequest", "problem_list": "Condition", "fhir_read": None,
                 "fhir_search": None}


def task_work(task: Task) -> int:
    """The difficulty proxy `work` of a task (see above)."""
    calls = [step for step in task.solution if step.get("name") != "submit"]
    types: set[str] = set()
    for step in calls:
        name = step.get("name")
        if name in ("fhir_read", "fhir_search"):
            types.add(str((step.get("arguments") or {}).get("resource_type")))
        elif _TYPE_OF_CALL.get(str(name)):
            types.add(str(_TYPE_OF_CALL[str(name)]))
    traps = [trap for trap in task.metadata.get("traps") or [] if trap in TRAPS]
    return len(calls) + max(0, len(types) - 1) + sum(_is_hop(step, task.prompt) for step in calls) + 2 * len(traps)


_HOP_ARGUMENTS = ("start", "end", "context", "encounter", "resource_id", "_id", "date", "authoredon", "patient",
                  "patient_id")


def _is_hop(step: dict[str, Any], prompt: str) -> bool:
    if step.get("name") not in _TYPE_OF_CALL:
        return False
    arguments = dict(step.get("arguments") or {})
    arguments.update(arguments.get("params") or {})
    return any(str(arguments[key]) not in prompt for key in _HOP_ARGUMENTS if arguments.get(key) is not None)


def latest_traps(record: PatientRecord, code: str, unit: str | None = None) -> list[str]:
    """The traps in reading the latest valid result of `code`: a newer result entered in error, and a unit that
    is not `unit` (the one the task asks for)."""
    latest = record.latest(code)
    traps = []
    if latest is not None and any(error.when > latest.when for error in record.invalid(code)):
        traps.append("entered_in_error")
    if latest is not None and unit is not None:
        from agentgym_fhir.units import same_unit

        if not same_unit(latest.unit, unit):
            traps.append("unit_conversion")
    return traps


def identify(ctx: Context, record: PatientRecord, share: float = 0.4) -> tuple[str, list[dict[str, Any]], list[str]]:
    """How a hard task names its patient: by FHIR id, or (a `share` of tasks whose patient has a birth date) by
    name and birth date only, which costs a Patient search and, when another patient shares the name, a choice
    between them (the "namesake" trap). Returns (the words for the prompt, the solution's steps to find the
    patient, traps)."""
    born = record.patient.get("birthDate")
    if not born or not record.family_name or ctx.rng.random() >= share:
        return record.describe(), [], []
    same = [other for other in ctx.records if other.name == record.name and other.id != record.id]
    if any(other.patient.get("birthDate") == born for other in same):
        return record.describe(), [], []  # name and birth date would not tell them apart
    search = call("fhir_search", resource_type="Patient",
                  params={"family": record.family_name, "given": record.first_given, "birthdate": born})
    return record.describe_by_name(), [search], ["namesake"] if same else []


def latest_lookup(record: PatientRecord, code: str) -> tuple[dict[str, Any], list[str]]:
    """The solution step that finds the latest valid result of `code`, and its traps: `latest_observation` shows
    the newest observation whatever its status, so when that one was entered in error the history is read."""
    traps = latest_traps(record, code)
    if "entered_in_error" in traps:
        return call("observation_history", patient_id=record.id, code=code), traps
    return call("latest_observation", patient_id=record.id, code=code), traps


def measured_difficulty(task: Task) -> str:
    """easy, medium or hard from `task_work`; hard also needs a trap in the data (a long but clean chain of
    lookups is medium: the playtest solved such tasks without effort)."""
    work = task_work(task)
    trapped = any(trap in TRAPS for trap in task.metadata.get("traps") or [])
    return "hard" if work >= HARD_WORK and trapped else "medium" if work >= MEDIUM_WORK else "easy"


def sample(rng: random.Random, items: Iterable[Any], k: int) -> list[Any]:
    items = list(items)
    return items if len(items) <= k else rng.sample(items, k)


__all__ = [
    "ICD10CM",
    "LOINC",
    "RESULT_RULE",
    "RXNORM",
    "SNOMED",
    "UNIT_CONTRACT",
    "Context",
    "PatientRecord",
    "Reading",
    "answer_spec",
    "balance",
    "call",
    "fmt",
    "half_up",
    "identify",
    "latest_lookup",
    "latest_traps",
    "load_records",
    "measured_difficulty",
    "parse_instant",
    "rounding_tolerance",
    "sample",
    "submit",
    "task_work",
    "units_agree",
]
