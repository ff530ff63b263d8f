"""Recording a measurement: convert a reported value and write it as an Observation dated today."""

from __future__ import annotations

from agentgym.tasks import Task
from agentgym_fhir.tasks.common import LOINC, Context, call, submit
from agentgym_fhir.units import convert

FAMILY = "record_vital"
REQUIRES = "patients (any data); the measurement is given in the prompt"
CATEGORY = "http://terminology.hl7.org/CodeSystem/observation-category"
# (LOINC, name, given unit, stored UCUM unit, analyte, range of the given value)
MEASURES = [
    ("29463-7", "body weight", "lb", "kg", (100, 280)),
    ("8310-5", "body temperature", "[degF]", "Cel", (97.0, 103.0)),
    ("8302-2", "body height", "in", "cm", (58, 76)),
]


def build(ctx: Context) -> list[Task]:
    tasks = []
    for record in ctx.records:
        if ctx.rng.random() < 0.5:
            continue
        code, name, given_unit, unit, (low, high) = ctx.rng.choice(MEASURES)
        given = round(ctx.rng.uniform(low, high), 1)
        value = round(convert(given, given_unit, unit), 1)
        day = record.now.date().isoformat()
        resource = {"resourceType": "Observation", "status": "final", "subject": {"reference": record.reference},
                    "category": [{"coding": [{"system": CATEGORY, "code": "vital-signs"}]}],
                    "code": {"coding": [{"system": LOINC, "code": code, "display": name}]},
                    "effectiveDateTime": record.now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "valueQuantity": {"value": value, "unit": unit, "system": "http://unitsofmeasure.org",
                                      "code": unit}}
        shown = {"lb": "lb", "[degF]": "degrees Fahrenheit", "in": "inches"}[given_unit]
        spec = {"resourceType": "Observation", "subject": record.reference, "code": [LOINC, code],
                "status": ["final", "preliminary", "amended"], "category": [CATEGORY, "vital-signs"],
                "value": {"value": value, "unit": unit, "tolerance": 0.15}, "effective_date": day}
        tasks.append(ctx.task(
            key=f"{record.id}:{code}", record=record,
            prompt=f"A nurse measured the {name} of {record.describe()} today: {given} {shown}. Record it as a "
                   f"final vital-signs Observation (LOINC {code}) dated today, with the value converted to "
                   f"{unit} (UCUM) and rounded to one decimal. Then submit \"done\".",
            answer="done",
            solution=[call("convert_units", value=given, from_unit=given_unit, to_unit=unit),
                      call("create_observation", resource=resource), submit("done")],
            verifier={"name": "fhir_write", "params": {"expected": [spec]}}, difficulty="easy",
            metadata={"loinc": code, "given": given, "value": value}))
    return tasks
