"""Referrals: refer to a specialty when a stated threshold is crossed by the latest result, otherwise not."""

from __future__ import annotations

from agentgym.tasks import Task
from agentgym_fhir.tasks.common import RESULT_RULE, Context, PatientRecord, call, fmt, latest_lookup, submit
from agentgym_fhir.tools import SNOMED
from agentgym_fhir.vocab.conditions import REFERRAL, SPECIALTIES

FAMILY = "referral"
REQUIRES = "eGFR, HbA1c, PHQ-9 or BNP Observations (LOINC 98979-8, 4548-4, 44261-6, 30934-4)"
# (LOINC, what, comparison, threshold, unit, specialty)
RULES = [
    ("98979-8", "eGFR", "below", 30.0, "mL/min/1.73m2", "nephrology"),
    ("4548-4", "hemoglobin A1c", "at or above", 9.0, "%", "endocrinology"),
    ("44261-6", "PHQ-9 total score", "at or above", 15.0, "points", "psychiatry"),
    ("30934-4", "BNP", "above", 400.0, "pg/mL", "cardiology"),
]


def crosses(value: float, comparison: str, threshold: float) -> bool:
    return value < threshold if comparison == "below" else value >= threshold if comparison == "at or above" \
        else value > threshold


def referral(record: PatientRecord, specialty: str, reason: str) -> dict:  # type: ignore[type-arg]
    code, display = SPECIALTIES[specialty]
    return {"resourceType": "ServiceRequest", "status": "active", "intent": "order",
            "subject": {"reference": record.reference}, "authoredOn": record.now.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "code": {"coding": [{"system": SNOMED, "code": REFERRAL[0], "display": REFERRAL[1]}]},
            "performerType": {"coding": [{"system": SNOMED, "code": code, "display": display}]},
            "reasonCode": [{"text": reason}]}


def build(ctx: Context) -> list[Task]:
    tasks = []
    for record in ctx.records:
        options = []
        for rule in RULES:
            reading = record.latest(rule[0])
            if reading is not None and not record.has_future(rule[0]):
                options.append((rule, reading))
        positive = [o for o in options if crosses(o[1].value, o[0][2], o[0][3])]
        if positive:
            rule, reading = ctx.rng.choice(positive)
        elif options and ctx.rng.random() < 0.3:
            rule, reading = ctx.rng.choice(options)
        else:
            continue
        code, what, comparison, threshold, unit, specialty = rule
        refer = crosses(reading.value, comparison, threshold)
        specialty_code, specialty_name = SPECIALTIES[specialty]
        look, traps = latest_lookup(record, code)
        steps = [look]
        if refer:
            steps.append(call("create_service_request",
                              resource=referral(record, specialty, f"{what} {fmt(reading.value)}")))
        steps.append(submit(fmt(reading.value)))
        spec = {"resourceType": "ServiceRequest", "subject": record.reference, "code": [SNOMED, REFERRAL[0]],
                "performer_type": [SNOMED, specialty_code], "status": ["active"], "intent": ["order", "plan", "proposal"]}
        tasks.append(ctx.task(
            key=f"{record.id}:{code}", record=record,
            prompt=f"Review the most recent {what} (LOINC {code}) of {record.describe()}. {RESULT_RULE} Rule: if it is "
                   f"{comparison} {fmt(threshold)} {unit}, place a referral to {specialty_name} as a ServiceRequest "
                   f"(code SNOMED CT {REFERRAL[0]} \"{REFERRAL[1]}\", performerType SNOMED CT {specialty_code}, "
                   "status active, intent order); otherwise place no referral. Either way, submit the value you "
                   "based the decision on, as recorded (a unit after it is optional).",
            answer=reading.value, solution=steps,
            verifier={"name": "fhir_write", "params": {"expected": [spec] if refer else [],
                                                       "answer": {"gold": reading.value, "kind": "number",
                                                                  "tolerance": 0.001}}},
            difficulty="hard" if refer else "medium",
            metadata={"loinc": code, "value": reading.value, "referral_expected": refer, "specialty": specialty,
                      "traps": traps}))
    return tasks
