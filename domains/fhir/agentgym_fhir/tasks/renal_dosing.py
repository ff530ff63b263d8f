"""Renal dose adjustment: the daily dose a stated kidney-function rule gives for a drug, from the patient's eGFR.

The rule and the source of the eGFR are in the prompt; the work is in the record. The eGFR is either computed
(CKD-EPI 2021 from the latest valid creatinine, which an outside lab may report in umol/L, with the patient's
age today, which differs from the age the stored eGFR used) or read (the latest valid eGFR result, where a
newer result may have been entered in error). Bands are balanced per drug, so no dose is the gold of more than
half of a drug's tasks.
"""

from __future__ import annotations

from typing import Any

from agentgym.tasks import Task
from agentgym_fhir.calculators import calculate
from agentgym_fhir.tasks.common import (
    RESULT_RULE,
    Context,
    PatientRecord,
    answer_spec,
    balance,
    call,
    fmt,
    identify,
    latest_traps,
    submit,
)
from agentgym_fhir.units import UnitError, convert, same_unit

FAMILY = "renal_dosing"
REQUIRES = "patients with a birth date, sex and serum creatinine (LOINC 2160-0) or eGFR (98979-8) results"
CREATININE, EGFR = "2160-0", "98979-8"

# The rules the prompts state: (lower eGFR bound, total daily dose in mg), highest band first; the last band
# starts at 0. Each drug's bands differ, so one patient's eGFR gives different doses per drug.
RULES: dict[str, list[tuple[float, float]]] = {
    "metformin": [(45, 2000), (30, 1000), (0, 0)],
    "allopurinol": [(60, 300), (30, 200), (15, 100), (0, 50)],
    "empagliflozin": [(45, 25), (20, 10), (0, 0)],
    "rivaroxaban": [(50, 20), (15, 15), (0, 0)],
    "gabapentin": [(60, 1800), (30, 900), (15, 600), (0, 300)],
    "sitagliptin": [(45, 100), (30, 50), (0, 25)],
}
EDGE = 2.0  # an eGFR this close to a band's bound is on the rule's edge


def rule_text(drug: str) -> str:
    bands = RULES[drug]
    parts = []
    for position, (low, dose) in enumerate(bands):
        high = bands[position - 1][0] if position else None
        where = (f"eGFR {fmt(low)} or more" if high is None else
                 f"eGFR {fmt(low)} up to but not including {fmt(high)}" if low else f"eGFR below {fmt(high)}")
        parts.append(f"{where}: {fmt(dose)} mg a day" if dose else f"{where}: do not give it (0 mg)")
    return "; ".join(parts)


def dose_for(drug: str, egfr: float) -> float:
    return next(dose for low, dose in RULES[drug] if egfr >= low)


def _computed(record: PatientRecord) -> tuple[float, dict[str, Any], list[str]] | None:
    reading = record.latest(CREATININE)
    if reading is None or record.has_future(CREATININE) or record.age is None or record.sex is None:
        return None
    value = reading.value
    if not same_unit(reading.unit, "mg/dL"):
        try:
            value = round(convert(reading.value, reading.unit, "mg/dL", "creatinine"), 4)
        except UnitError:
            return None
    inputs = {"creatinine_mg_dl": value, "age_years": record.age, "sex": record.sex}
    egfr = float(calculate("egfr_ckd_epi_2021", inputs).value)
    traps = latest_traps(record, CREATININE, "mg/dL")
    stored = record.latest(EGFR)
    if stored is not None and abs(stored.value - egfr) >= 0.5:
        traps.append("derived_value")
    return egfr, inputs, traps


def build(ctx: Context) -> list[Task]:
    candidates: dict[tuple[str, str], list[tuple[Any, Task]]] = {}
    for record in ctx.records:
        computed = _computed(record)
        reported = record.latest(EGFR) if not record.has_future(EGFR) else None
        for drug in RULES:
            source = ctx.rng.choice(["computed", "computed", "reported"])
            if source == "computed" and computed is not None:
                egfr, inputs, traps = computed
                how = ("the eGFR computed with the 2021 CKD-EPI creatinine equation from the latest valid serum "
                       "creatinine (LOINC 2160-0, converted to mg/dL if reported in another unit), the patient's "
                       "age in whole years today and sex, rounded to one decimal; not a stored eGFR result")
                steps = [call("fhir_read", resource_type="Patient", resource_id=record.id),
                         call("observation_history", patient_id=record.id, code=CREATININE),
                         call("date_diff", start=record.patient["birthDate"], end="now", unit="years"),
                         call("calculate", calculator="egfr_ckd_epi_2021", inputs=inputs)]
            elif reported is not None:
                source, egfr, traps = "reported", reported.value, latest_traps(record, EGFR)
                how = "the latest valid eGFR result in the record (LOINC 98979-8)"
                steps = [call("observation_history", patient_id=record.id, code=EGFR)]
            else:
                continue
            dose = dose_for(drug, egfr)
            who, find, who_traps = identify(ctx, record)
            traps = [*traps, *who_traps]
            if any(low and abs(egfr - low) <= EDGE for low, _ in RULES[drug]):
                traps = [*traps, "rule_edge"]
            prompt = (f"Kidney dosing rule for {drug} (total daily dose by eGFR in mL/min/1.73m2): "
                      f"{rule_text(drug)}. Use {how}; a value exactly on a bound belongs to the band that starts "
                      f"there. {RESULT_RULE} What total daily dose of {drug} does the rule give for "
                      f"{who}? Answer with the dose in mg as a number (0 when the rule says not to "
                      "give it); a unit after it is optional (mg, or mg/day).")
            task = ctx.task(
                key=f"{record.id}:{drug}", record=record, prompt=prompt, answer=dose,
                solution=[*find, *steps, submit(f"{fmt(dose)} mg")],
                verifier=answer_spec("number", tolerance=0, unit="mg", daily=True), difficulty="hard",
                metadata={"drug": drug, "egfr": round(egfr, 1), "source": source, "traps": sorted(set(traps))})
            candidates.setdefault((drug, task.split), []).append((dose, task))
    tasks: list[Task] = []
    for key in sorted(candidates):
        tasks.extend(balance(candidates[key], ctx.rng))
    return sorted(tasks, key=lambda task: task.id)
