"""Risk scores and derived values that need several facts from the record, computed with the calculators."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentgym.tasks import Task
from agentgym_fhir.calculators import calculate
from agentgym_fhir.tasks.common import (
    RESULT_RULE,
    Context,
    PatientRecord,
    answer_spec,
    call,
    fmt,
    latest_lookup,
    latest_traps,
    submit,
)
from agentgym_fhir.units import UnitError, convert, same_unit
from agentgym_fhir.vocab.conditions import CONDITIONS

FAMILY = "risk_score"
REQUIRES = "patients with a birth date and sex, and the labs, vitals or conditions a score needs"

CREATININE, WEIGHT, HEIGHT = "2160-0", "29463-7", "8302-2"
SODIUM, CHLORIDE, BICARBONATE = "2951-2", "2075-0", "2028-9"
CALCIUM, ALBUMIN, SYSTOLIC, DIASTOLIC = "17861-6", "1751-7", "8480-6", "8462-4"


# The unit each calculator input is asked in; a reading in another unit (an outside lab's umol/L, a weight in
# lb) is converted, as the agent must convert it before calling the calculator.
INPUT_UNITS = {"2160-0": ("mg/dL", "creatinine"), "29463-7": ("kg", None)}


def _latest(record: PatientRecord, *codes: str) -> list[float] | None:
    values = []
    for code in codes:
        reading = record.latest(code)
        if reading is None or record.has_future(code):
            return None
        wanted = INPUT_UNITS.get(code)
        if wanted is not None and not same_unit(reading.unit, wanted[0]):
            try:
                values.append(round(convert(reading.value, reading.unit, wanted[0], wanted[1]), 4))
            except UnitError:
                return None
            continue
        values.append(reading.value)
    return values


def _has(record: PatientRecord, *keys: str) -> bool:
    active = record.condition_codes()
    return any(CONDITIONS[key].snomed in active for key in keys)


def _facts_calls(record: PatientRecord, codes: tuple[str, ...]) -> list[dict[str, Any]]:
    return [latest_lookup(record, code)[0] for code in codes]


def _egfr(record: PatientRecord) -> tuple[str, dict[str, Any], tuple[str, ...], str] | None:
    values = _latest(record, CREATININE)
    if values is None or record.age is None or record.sex is None:
        return None
    inputs = {"creatinine_mg_dl": values[0], "age_years": record.age, "sex": record.sex}
    return ("egfr_ckd_epi_2021", inputs, (CREATININE,),
            "the eGFR by the 2021 CKD-EPI creatinine equation, from the latest serum creatinine and the patient's "
            "age today and sex (mL/min/1.73m2, one decimal)")


def _crcl(record: PatientRecord) -> tuple[str, dict[str, Any], tuple[str, ...], str] | None:
    values = _latest(record, CREATININE, WEIGHT)
    if values is None or record.age is None or record.sex is None:
        return None
    inputs = {"age_years": record.age, "weight_kg": values[1], "creatinine_mg_dl": values[0], "sex": record.sex}
    return ("cockcroft_gault", inputs, (CREATININE, WEIGHT),
            "the creatinine clearance by Cockcroft-Gault with actual body weight, from the latest creatinine and "
            "weight and the patient's age today and sex (mL/min, one decimal)")


def _bmi(record: PatientRecord) -> tuple[str, dict[str, Any], tuple[str, ...], str] | None:
    values = _latest(record, WEIGHT, HEIGHT)
    if values is None:
        return None
    return ("bmi", {"weight_kg": values[0], "height_cm": values[1]}, (WEIGHT, HEIGHT),
            "the body mass index from the latest weight and height (kg/m2, one decimal)")


def _anion_gap(record: PatientRecord) -> tuple[str, dict[str, Any], tuple[str, ...], str] | None:
    values = _latest(record, SODIUM, CHLORIDE, BICARBONATE)
    if values is None:
        return None
    return ("anion_gap", dict(zip(("sodium_mmol_l", "chloride_mmol_l", "bicarbonate_mmol_l"), values)),
            (SODIUM, CHLORIDE, BICARBONATE), "the anion gap Na - (Cl + HCO3) from the latest sodium, chloride and "
            "bicarbonate (mmol/L, one decimal)")


def _calcium(record: PatientRecord) -> tuple[str, dict[str, Any], tuple[str, ...], str] | None:
    values = _latest(record, CALCIUM, ALBUMIN)
    if values is None:
        return None
    return ("corrected_calcium", {"calcium_mg_dl": values[0], "albumin_g_dl": values[1]}, (CALCIUM, ALBUMIN),
            "the albumin-corrected calcium (normal albumin 4.0 g/dL) from the latest calcium and albumin (mg/dL, two decimals)")


def _map(record: PatientRecord) -> tuple[str, dict[str, Any], tuple[str, ...], str] | None:
    values = _latest(record, SYSTOLIC, DIASTOLIC)
    if values is None:
        return None
    return ("mean_arterial_pressure", {"systolic_mmhg": values[0], "diastolic_mmhg": values[1]},
            (SYSTOLIC, DIASTOLIC), "the mean arterial pressure from the latest blood pressure (mmHg, one decimal)")


def _chads(record: PatientRecord) -> tuple[str, dict[str, Any], tuple[str, ...], str] | None:
    if not _has(record, "afib") or record.age is None or record.sex is None:
        return None
    inputs = {"age_years": record.age, "sex": record.sex,
              "congestive_heart_failure": _has(record, "heart_failure"),
              "hypertension": _has(record, "hypertension"), "diabetes": _has(record, "diabetes"),
              "stroke_tia_or_thromboembolism": False, "vascular_disease": _has(record, "cad")}
    return ("cha2ds2_vasc", inputs, (),
            "the CHA2DS2-VASc score from the active problem list (heart failure, hypertension, diabetes, prior "
            "stroke/TIA/thromboembolism, vascular disease such as coronary artery disease), age today and sex")


SCORES: list[Callable[[PatientRecord], tuple[str, dict[str, Any], tuple[str, ...], str] | None]] = [
    _egfr, _crcl, _bmi, _anion_gap, _calcium, _map, _chads]
TOLERANCE = {"egfr_ckd_epi_2021": 0.6, "cockcroft_gault": 0.6, "bmi": 0.11, "anion_gap": 0.01,
             "corrected_calcium": 0.021, "mean_arterial_pressure": 0.11, "cha2ds2_vasc": 0.0}


def build(ctx: Context) -> list[Task]:
    tasks = []
    per_patient = int(ctx.options.get("risk_score_per_patient", 2))
    for record in ctx.records:
        available = [made for made in (score(record) for score in SCORES) if made is not None]
        for name, inputs, codes, wording in ctx.rng.sample(available, min(per_patient, len(available))):
            result = calculate(name, inputs)
            steps = [call("fhir_read", resource_type="Patient", resource_id=record.id), *_facts_calls(record, codes)]
            if name == "cha2ds2_vasc":
                steps.append(call("problem_list", patient_id=record.id))
            if "age_years" in inputs:
                steps.append(call("date_diff", start=record.patient["birthDate"], end="now", unit="years"))
            steps.append(call("calculate", calculator=name, inputs=inputs))
            unit = f" {result.unit}" if result.unit else ""
            traps = sorted({trap for code in codes for trap in latest_traps(record, code, INPUT_UNITS.get(code, (None,))[0])})
            tasks.append(ctx.task(
                key=f"{record.id}:{name}", record=record,
                prompt=f"Compute {wording} for {record.describe()}. {RESULT_RULE} Answer with the number, rounded as stated (a unit "
                       "after it is optional and not graded).",
                answer=result.value, solution=[*steps, submit(f"{fmt(result.value)}{unit}")],
                verifier=answer_spec("number", tolerance=TOLERANCE[name]),
                difficulty="hard" if len(codes) >= 2 or name == "cha2ds2_vasc" else "medium",
                metadata={"calculator": name, "inputs": inputs, "traps": traps}))
    return tasks
