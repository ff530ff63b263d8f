"""Latest or first value of a lab test, with its unit."""

from __future__ import annotations

from agentgym.tasks import Task
from agentgym_fhir.tasks.common import (
    RESULT_RULE,
    UNIT_CONTRACT,
    Context,
    answer_spec,
    call,
    fmt,
    latest_lookup,
    submit,
)
from agentgym_fhir.vocab.labs import LABS

FAMILY = "lab_value"
REQUIRES = "numeric laboratory Observations (LOINC code, valueQuantity with a unit)"


def lab_name(code: str, fallback: str) -> str:
    known = LABS.get(code)
    return known.name if known else (fallback or code)


def build(ctx: Context) -> list[Task]:
    tasks = []
    per_patient = int(ctx.options.get("lab_value_per_patient", 2))
    for record in ctx.records:
        codes = sorted(code for code, values in record.readings.items()
                       if not code.startswith(("future:", "invalid:")) and values and values[-1].unit
                       and (code in LABS or "laboratory" in _categories(record, values[-1].resource_id))
                       and not record.has_future(code))
        for code in ctx.rng.sample(codes, min(per_patient, len(codes))):
            values = record.series(code)
            which = "latest" if ctx.rng.random() < 0.65 else "first"
            reading = values[-1] if which == "latest" else values[0]
            name = lab_name(code, reading.display)
            # same-time duplicates would make "the latest" ambiguous
            if sum(1 for v in values if v.when == reading.when) > 1:
                continue
            answer = f"{fmt(reading.value)} {reading.unit}"
            if which == "latest":
                look, traps = latest_lookup(record, code)
                steps = [look]
                question = f"What is the most recent {name} result (LOINC {code}) of {record.describe()}?"
            else:
                steps, traps = [call("observation_history", patient_id=record.id, code=code)], []
                question = f"What was the first {name} result (LOINC {code}) ever recorded for {record.describe()}?"
            tasks.append(ctx.task(
                key=f"{record.id}:{code}:{which}", record=record,
                prompt=question + f" {RESULT_RULE} Answer with the value as recorded and its unit: {UNIT_CONTRACT}.",
                answer=reading.value, solution=[*steps, submit(answer)],
                verifier=answer_spec("number", tolerance=0.002, relative=True, unit=reading.unit, require_unit=True,
                                     analyte=_analyte(name)),
                difficulty="easy" if which == "latest" else "medium",
                metadata={"loinc": code, "which": which, "traps": traps}))
    return tasks


def _categories(record, resource_id: str) -> set[str]:  # type: ignore[no-untyped-def]
    for resource in record.observations:
        if resource.get("id") == resource_id:
            return {c.get("code") for cat in resource.get("category") or [] for c in cat.get("coding") or []}
    return set()


def _analyte(name: str) -> str | None:
    lowered = name.lower()
    for analyte in ("glucose", "creatinine", "calcium", "magnesium", "cholesterol", "triglycerides", "bilirubin",
                    "potassium", "sodium", "chloride", "lactate"):
        if analyte in lowered:
            return analyte
    if "urea nitrogen" in lowered or "bun" in lowered:
        return "bun"
    return None
