"""Cohort questions over a practice's patients: how many of one general practitioner's patients have a latest
valid lab result past a threshold.

Many patients and many records: the practice's patients are found by their `generalPractitioner`, their results
searched together (a comma in `patient` is OR) and paged (a page too long to show is cut into whole entries that
say how to page on), and for each patient only the latest valid result counts, after a unit conversion where an
outside lab reported it and past a result entered in error. Thresholds are chosen, where the data allow, so that
a latest value sits exactly on them. Split by question, as the other cohort questions.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from agentgym.tasks import Task
from agentgym_fhir.tasks.common import (
    RESULT_RULE,
    SNOMED,
    Context,
    PatientRecord,
    answer_spec,
    balance,
    call,
    latest_traps,
    submit,
)
from agentgym_fhir.units import convert, same_unit
from agentgym_fhir.vocab.conditions import CONDITIONS

FAMILY = "cohort_labs"
REQUIRES = "patients with a general practitioner (Patient.generalPractitioner) and lab results"
# LOINC -> (name, unit asked, analyte, (direction, threshold) choices)
LABS: dict[str, tuple[str, str, str | None, tuple[tuple[str, float], ...]]] = {
    "4548-4": ("hemoglobin A1c", "%", None, (("at or above", 6.5), ("at or above", 7.0), ("at or above", 8.0))),
    "2345-7": ("glucose", "mg/dL", "glucose", (("at or above", 100), ("at or above", 126), ("at or above", 140))),
    "2160-0": ("creatinine", "mg/dL", "creatinine", (("at or above", 1.2), ("at or above", 1.5), ("at or above", 2.0))),
    "98979-8": ("eGFR", "mL/min/{1.73_m2}", None, (("below", 60), ("below", 45), ("below", 30))),
    "2823-3": ("potassium", "mmol/L", None, (("below", 3.5), ("below", 4.0), ("at or above", 5.1))),
}
SHOWN_UNIT = {"mL/min/{1.73_m2}": "mL/min/1.73m2"}
# Each question is also asked with an active diagnosis, a join across Condition: which diagnoses go with a lab.
DIAGNOSES = {"4548-4": ("diabetes", "hypertension"), "2345-7": ("diabetes", "hypertension"),
             "2160-0": ("ckd", "hypertension", "diabetes"), "98979-8": ("ckd", "hypertension", "diabetes"),
             "2823-3": ("heart_failure", "ckd", "hypertension")}
ACTIVE = "active,recurrence,relapse"
PAGE = 100
# What one page of results shows within the default output limit (8,000 characters) with the elements the
# solution asks for: the solution pages by this many, and more results than this need paging.
TIGHT_PAGE = 20


def _gp(record: PatientRecord) -> str | None:
    for holder in record.patient.get("generalPractitioner") or []:
        reference = holder.get("reference") if isinstance(holder, dict) else None
        if reference and reference.startswith("Practitioner/"):
            return str(reference)
    return None


def _latest_in(record: PatientRecord, code: str, unit: str, analyte: str | None) -> float | None:
    reading = record.latest(code)
    if reading is None or record.has_future(code):
        return None
    return reading.value if same_unit(reading.unit, unit) else convert(reading.value, reading.unit, unit, analyte)


def _passes(value: float, direction: str, threshold: float) -> bool:
    return value >= threshold - 1e-9 if direction == "at or above" else value < threshold - 1e-9


def build(ctx: Context) -> list[Task]:
    practices: dict[str, list[PatientRecord]] = defaultdict(list)
    for record in ctx.records:
        gp = _gp(record)
        if gp is not None:
            practices[gp].append(record)
    candidates: dict[tuple[str, str], list[tuple[Any, Task]]] = defaultdict(list)
    groups = [(gp, sex, [r for r in patients if sex is None or r.sex == sex])
              for gp, patients in sorted(practices.items()) for sex in (None, "female", "male")]
    for gp, sex, members in groups:
        if len(members) < 3:
            continue
        who = "patients" if sex is None else f"{sex} patients"
        find = {"general-practitioner": gp, "_count": PAGE, "_elements": "id", **({"gender": sex} if sex else {})}
        questions = [(loinc, lab, diagnosis) for loinc, lab in LABS.items()
                     for diagnosis in (None, CONDITIONS[ctx.rng.choice(DIAGNOSES[loinc])])]
        for code, (name, unit, analyte, choices), diagnosis in questions:
            eligible = [r for r in members if diagnosis is None or diagnosis.snomed in r.condition_codes()]
            if len(eligible) < 2:
                continue
            values = {record.id: _latest_in(record, code, unit, analyte) for record in eligible}
            measured = {pid: value for pid, value in values.items() if value is not None}
            if len(measured) < 2:
                continue
            on_edge = [(d, t) for d, t in choices if any(abs(v - t) < 1e-9 for v in measured.values())]
            direction, threshold = ctx.rng.choice(on_edge) if on_edge and ctx.rng.random() < 0.6 else ctx.rng.choice(choices)
            count = sum(_passes(value, direction, threshold) for value in measured.values())
            holders = [record for record in eligible if record.id in measured]
            traps = sorted({trap for record in holders for trap in latest_traps(record, code, unit)})
            results = sum(len(record.series(code)) + len(record.invalid(code)) for record in holders)
            if results > TIGHT_PAGE:
                traps.append("paging")
            if on_edge and any(abs(value - threshold) < 1e-9 for value in measured.values()):
                traps.append("rule_edge")
            ids = ",".join(record.id for record in eligible)
            joins = [] if diagnosis is None else [call(
                "fhir_search", resource_type="Condition",
                params={"patient": ",".join(record.id for record in members), "code": f"{SNOMED}|{diagnosis.snomed}",
                        "clinical-status": ACTIVE, "_count": PAGE, "_elements": "subject"})]
            having = "" if diagnosis is None else (f" who have an active diagnosis of {diagnosis.name} (SNOMED CT "
                                                   f"{diagnosis.snomed})")
            pages = [call("fhir_search", resource_type="Observation",
                          params={"patient": ids, "code": code, "_sort": "-date", "_count": TIGHT_PAGE, "_offset": offset,
                                  "_elements": "subject,effectiveDateTime,valueQuantity,status"})
                     for offset in range(0, max(results, 1), TIGHT_PAGE)]
            shown_unit = SHOWN_UNIT.get(unit, unit)
            key = f"{gp}:{sex}:{code}:{diagnosis.key if diagnosis else ''}"
            task = ctx.task(
                key=key,
                prompt=(f"Among the {who} whose general practitioner is {gp} (Patient.generalPractitioner){having}, how "
                        f"many have a latest valid {name} result (LOINC {code}) {direction} {threshold:g} "
                        f"{shown_unit}? Judge each patient by their most recent valid result only, converted to "
                        f"{shown_unit} if reported in another unit; patients with no such result do not count. "
                        f"{RESULT_RULE} Answer with the count as a whole number."),
                answer=count,
                solution=[call("fhir_search", resource_type="Patient", params=find), *joins, *pages, submit(count)],
                verifier=answer_spec("number", tolerance=0), difficulty="hard",
                metadata={"practitioner": gp, "sex": sex, "diagnosis": diagnosis.key if diagnosis else None, "loinc": code, "direction": direction, "threshold": threshold,
                          "patients": len(members), "with_results": len(measured), "results": results,
                          "traps": sorted(set(traps))})
            candidates[(code, task.split)].append((count, task))
    tasks: list[Task] = []
    for key in sorted(candidates):
        tasks.extend(balance(candidates[key], ctx.rng))
    return sorted(tasks, key=lambda task: task.id)
