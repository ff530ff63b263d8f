"""Conditional order: replace potassium when it is low, with the dose the stated rule gives; no order otherwise."""

from __future__ import annotations

from agentgym.tasks import Task
from agentgym_fhir.tasks.common import (
    RESULT_RULE,
    Context,
    PatientRecord,
    Reading,
    call,
    fmt,
    latest_lookup,
    submit,
)
from agentgym_fhir.tools import RXNORM, SNOMED
from agentgym_fhir.vocab.drugs import ROUTES

FAMILY = "potassium_replacement"
REQUIRES = "serum potassium Observations (LOINC 2823-3)"
POTASSIUM = "2823-3"
KCL = "8591"
RULE = ("Rule: if that potassium is below 3.5 mmol/L, order oral potassium chloride (RxNorm 8591) as one "
        "MedicationRequest for this patient, coded with that one RxNorm coding: 10 mEq for every 0.1 mmol/L below "
        "3.5 (dose = (3.5 - K) x 100 mEq; the dose unit mEq, UCUM meq), route oral, once a day (timing frequency 1 "
        "per 1 d), status active, intent order. If it is 3.5 or higher, order nothing. Either way, submit the "
        "potassium value you used, as recorded (a unit after it is optional).")


def dose_for(potassium: float) -> float:
    return round((3.5 - potassium) * 100, 6)


def order(record: PatientRecord, dose: float) -> dict:  # type: ignore[type-arg]
    route_code, route_display = ROUTES["oral"]
    return {
        "resourceType": "MedicationRequest", "status": "active", "intent": "order",
        "subject": {"reference": record.reference},
        "authoredOn": record.now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "medicationCodeableConcept": {"coding": [{"system": RXNORM, "code": KCL, "display": "potassium chloride"}]},
        "dosageInstruction": [{
            "route": {"coding": [{"system": SNOMED, "code": route_code, "display": route_display}]},
            "timing": {"repeat": {"frequency": 1, "period": 1, "periodUnit": "d"}},
            "doseAndRate": [{"doseQuantity": {"value": dose, "unit": "meq", "system": "http://unitsofmeasure.org",
                                              "code": "meq"}}]}],
    }


def expected(record: PatientRecord, dose: float) -> dict:  # type: ignore[type-arg]
    return {"resourceType": "MedicationRequest", "subject": record.reference, "code": [RXNORM, KCL],
            "status": ["active"], "intent": ["order"], "dose": {"value": dose, "unit": "meq", "tolerance": 0.5},
            "route": [SNOMED, ROUTES["oral"][0]], "per_day": 1}


def build(ctx: Context) -> list[Task]:
    tasks = []
    for record in ctx.records:
        values = record.series(POTASSIUM)
        if not values or record.has_future(POTASSIUM):
            continue
        latest = values[-1]
        if sum(1 for v in values if v.when == latest.when) == 1:
            if latest.value < 3.5 or ctx.rng.random() < 0.5:
                tasks.append(_task(ctx, record, latest, dated=False))
        # dated variants: each earlier low result, checked as of its own day
        for reading in values[:-1]:
            if reading.value < 3.5 and sum(1 for v in values if v.day == reading.day) == 1:
                tasks.append(_task(ctx, record, reading, dated=True))
    return tasks


def _task(ctx: Context, record: PatientRecord, reading: Reading, *, dated: bool) -> Task:
    low = reading.value < 3.5
    dose = dose_for(reading.value) if low else 0.0
    day = reading.day.isoformat()
    if dated:
        which = f"the serum potassium (LOINC 2823-3) measured on {day}"
        look, traps = call("observation_history", patient_id=record.id, code=POTASSIUM, start=day, end=day), []
    else:
        which = "the most recent serum potassium (LOINC 2823-3)"
        look, traps = latest_lookup(record, POTASSIUM)
    steps = [look]
    if low:
        steps.append(call("create_medication_request", resource=order(record, dose)))
    steps.append(submit(f"{fmt(reading.value)} mmol/L"))
    return ctx.task(
        key=f"{record.id}:{day}:{'dated' if dated else 'latest'}", record=record,
        prompt=f"Check {which} of {record.describe()}. {RESULT_RULE} {RULE}",
        answer=reading.value, solution=steps,
        verifier={"name": "fhir_write", "params": {
            "expected": [expected(record, dose)] if low else [],
            "answer": {"gold": reading.value, "kind": "number", "tolerance": 0.001}}},
        difficulty="hard" if low else "medium",
        metadata={"potassium": reading.value, "order_expected": low, "dose_meq": dose, "dated": dated,
                  "traps": traps})
