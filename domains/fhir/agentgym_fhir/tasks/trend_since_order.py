"""A trend since the last medication change: how a measurement moved from the most recent order of a drug class
on, in a stated unit.

Temporal and multi-hop: the date is not in the prompt but in the record (the latest `authoredOn` among the
patient's orders of the listed drugs, whatever their status), the results are read from that date on (a
result drawn on the order's own date counts, and often there is one), some are entered in error, and an
outside lab reports glucose in mmol/L and weights in lb, so the trend hides a unit conversion.
"""

from __future__ import annotations

from agentgym.tasks import Task
from agentgym_fhir.tasks.common import (
    RESULT_RULE,
    Context,
    PatientRecord,
    Reading,
    answer_spec,
    call,
    fmt,
    half_up,
    identify,
    parse_instant,
    rounding_tolerance,
    submit,
)
from agentgym_fhir.units import convert, same_unit
from agentgym_fhir.vocab.drugs import DRUGS

FAMILY = "trend_since_order"
REQUIRES = "MedicationRequests of diabetes, blood-pressure or diuretic drugs, and results of glucose, HbA1c, "\
    "systolic blood pressure or weight after them"

# (drug keys of the class, measurements: LOINC -> (name, unit asked, analyte, decimals, conversion slack: how far
# an agent's value may be off when it converts with a rounded factor, 18 mg/dL per mmol/L of glucose))
CLASSES: dict[str, tuple[tuple[str, ...], dict[str, tuple[str, str, str | None, int, float]]]] = {
    "glucose-lowering": (("metformin", "insulin_glargine", "insulin_lispro", "empagliflozin", "glipizide"),
                         {"2345-7": ("glucose", "mg/dL", "glucose", 1, 0.5),
                          "4548-4": ("hemoglobin A1c", "%", None, 1, 0.0)}),
    "blood-pressure": (("lisinopril", "losartan", "amlodipine", "hydrochlorothiazide", "metoprolol", "carvedilol"),
                       {"8480-6": ("systolic blood pressure", "mm[Hg]", None, 1, 0.0),
                        "29463-7": ("body weight", "kg", None, 1, 0.0)}),
    "diuretic": (("furosemide", "hydrochlorothiazide", "spironolactone"),
                 {"29463-7": ("body weight", "kg", None, 1, 0.0), "2823-3": ("potassium", "mmol/L", None, 1, 0.0)}),
}
STATISTICS = {"change": "the change from the first to the last valid result (last minus first, negative if it fell)",
              "mean": "the mean of the valid results", "max": "the highest valid result"}


def _value(reading: Reading, unit: str, analyte: str | None) -> float:
    return reading.value if same_unit(reading.unit, unit) else convert(reading.value, reading.unit, unit, analyte)


def _last_order(record: PatientRecord, keys: tuple[str, ...]) -> tuple[str, str] | None:
    codes = {DRUGS[key].rxcui for key in keys}
    dated = []
    for order in record.medications:
        coding = ((order.get("medicationCodeableConcept") or {}).get("coding") or [{}])[0]
        moment = parse_instant(order.get("authoredOn"))
        if coding.get("code") in codes and moment is not None and moment <= record.now:
            dated.append((moment, str(coding.get("display") or coding.get("code"))))
    if not dated:
        return None
    moment, name = max(dated)
    return moment.date().isoformat(), name


def build(ctx: Context) -> list[Task]:
    tasks: list[Task] = []
    for record in ctx.records:
        for label, (keys, measures) in CLASSES.items():
            found = _last_order(record, keys)
            if found is None:
                continue
            since, _drug_name = found
            for code, (name, unit, analyte, decimals, slack) in measures.items():
                inside = [r for r in record.series(code) if r.day.isoformat() >= since]
                if len(inside) < 2 or record.has_future(code) or inside[0].when == inside[1].when:
                    continue
                statistic = ctx.rng.choice(list(STATISTICS))
                values = [_value(r, unit, analyte) for r in inside]
                answer = {"change": values[-1] - values[0], "mean": sum(values) / len(values),
                          "max": max(values)}[statistic]
                shown = half_up(answer, decimals)
                if statistic == "change" and shown == 0:
                    continue
                who, find, traps = identify(ctx, record)
                if any(not same_unit(r.unit, unit) for r in inside):
                    traps.append("unit_conversion")
                if inside[0].day.isoformat() == since:
                    traps.append("window_edge")
                if any(r.day.isoformat() >= since for r in record.invalid(code)):
                    traps.append("entered_in_error")
                listed = ", ".join(DRUGS[key].name for key in keys)
                shown_unit = "mmHg" if unit == "mm[Hg]" else unit
                places = f"{decimals} decimal{'s' if decimals != 1 else ''}" if decimals else "a whole number"
                prompt = (f"The most recent order of a {label} drug for {who} is the latest authored "
                          f"MedicationRequest, whatever its status, for any of: {listed}. From that order's date on "
                          f"(results on that date count) through today, what is {STATISTICS[statistic]} of the "
                          f"patient's {name} (LOINC {code})? {RESULT_RULE} Answer in {shown_unit}, converting any "
                          f"result reported in another unit, rounded to {places}, with the unit.")
                steps = [call("medication_list", patient_id=record.id, status="all"),
                         call("observation_history", patient_id=record.id, code=code, start=since)]
                if "unit_conversion" in traps:
                    odd = next(r for r in inside if not same_unit(r.unit, unit))
                    steps.append(call("convert_units", value=odd.value, from_unit=odd.unit, to_unit=unit,
                                      analyte=analyte))
                tasks.append(ctx.task(
                    key=f"{record.id}:{label}:{code}", record=record, prompt=prompt, answer=answer,
                    solution=[*find, *steps, submit(f"{fmt(shown)} {unit}")],
                    # graded against the exact value: either rounding of a tie, either usual conversion factor
                    verifier=answer_spec("number", tolerance=rounding_tolerance(decimals) + slack, unit=unit,
                                         require_unit=True, analyte=analyte),
                    difficulty="hard",
                    metadata={"loinc": code, "drug_class": label, "since": since, "statistic": statistic,
                              "readings": len(inside), "traps": sorted(traps)}))
    return tasks
