"""calculator_value: a short case whose numbers come in other units, beside values the answer does not use; the
answer is the calculator's value itself, a free number.

Nine calculators: eGFR (creatinine in umol/L), Cockcroft-Gault (weight in lb, creatinine in umol/L), corrected
calcium (calcium in mmol/L, albumin in g/L), serum osmolality (glucose and urea in mmol/L), Friedewald LDL (lipids
in mmol/L), MELD-Na (creatinine and bilirubin in umol/L), QTc (the RR interval instead of the heart rate), BMI
(pounds, feet and inches) and CHA2DS2-VASc (a history in words, with conditions the score does not count and
ages exactly on its cut-offs). The conversion factors are in the knowledge base's `units` passages.

A case is kept only when every reasonable conversion factor (88 or 88.4 umol/L per mg/dL, 2.2 or 2.2046 lb per
kg, 18 or 18.02 for glucose, ...) gives a value within the stated tolerance, and the near misses (the input left
unconverted, the other QTc formula, the eGFR instead of the clearance) fall outside it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentgym_fhir.calculators import calculate

from agentgym import Task

from .common import number_task, question_digest, split_of

FAMILY = "calculator_value"
CASES_PER_CALCULATOR = 60

# Conversion factors, the knowledge base's first (conventional unit -> SI: multiply), then other values a careful
# model might use. A case must give the same answer, within its tolerance, with every column.
FACTORS: dict[str, tuple[float, ...]] = {
    "creatinine": (88.4, 88.0, 88.42), "bilirubin": (17.1, 17.0, 17.1), "calcium": (1 / 0.2495, 4.0, 4.008),
    "glucose": (1 / 0.0555, 18.0, 18.016), "urea": (1 / 0.357, 2.8, 2.8), "cholesterol": (1 / 0.02586, 38.6, 38.67),
    "triglycerides": (1 / 0.01129, 88.5, 88.57), "lb": (2.2046, 2.2, 2.20462), "inch": (2.54, 2.54, 2.54),
}
VARIANTS = 3
# Spellings of an asked unit that `same_unit` does not know as the same (playtest #41: "mOsm/kg H2O").
UNIT_SPELLINGS: dict[str, tuple[str, ...]] = {
    "mOsm/kg": ("mOsm/kg H2O", "mOsm/kg water", "mOsmol/kg", "mOsmol/kg H2O", "mOsm/kg of water"),
    "ms": ("msec", "millisecond", "milliseconds"),
    "mL/min": ("mL/minute", "ml per minute"),
}


def _factors(variant: int) -> dict[str, float]:
    return {name: values[variant] for name, values in FACTORS.items()}


@dataclass
class Case:
    """One question: its text, the calculator and inputs the solution calls, and how it is graded."""

    text: str
    calculator: str
    inputs: dict[str, Any]
    value: Callable[[dict[str, float]], float]  # the answer, computed with the given conversion factors
    unit: str
    decimals: int
    tolerance: dict[str, float]
    work: dict[str, int]
    near_misses: list[float] = field(default_factory=list)


def _pronouns(female: bool) -> tuple[str, str, str]:
    return ("woman", "she", "her") if female else ("man", "he", "his")


def _egfr(rng: random.Random) -> Case:
    female, age = rng.random() < 0.5, rng.randint(25, 90)
    umol, kg, bun = rng.randint(45, 420), rng.randint(50, 120), rng.randint(8, 60)
    person, _they, their = _pronouns(female)
    sex = "female" if female else "male"

    def value(f: dict[str, float]) -> float:
        return calculate("egfr_ckd_epi_2021", {"creatinine_mg_dl": umol / f["creatinine"], "age_years": age,
                                               "sex": sex}).value

    clearance = calculate("cockcroft_gault", {"age_years": age, "weight_kg": kg, "sex": sex,
                                              "creatinine_mg_dl": umol / 88.4}).value
    text = (f"A {age}-year-old {person} weighs {kg} kg. {their.capitalize()} serum creatinine is {umol} umol/L and "
            f"{their} blood urea nitrogen {bun} mg/dL. What is {their} eGFR by the CKD-EPI 2021 creatinine "
            "equation, in mL/min/1.73m2?")
    return Case(text, "egfr_ckd_epi_2021", {"creatinine_mg_dl": round(umol / 88.4, 3), "age_years": age, "sex": sex},
                value, "mL/min/1.73m2", 0, {"rel": 0.02},
                {"tool_calls": 1, "conversions": 1, "distractors": 2}, [clearance, value(_factors(0)) * 88.4])


def _cockcroft_gault(rng: random.Random) -> Case:
    female, age = rng.random() < 0.5, rng.randint(25, 90)
    height = rng.randint(152, 193)
    lb = round(rng.uniform(19, 38) * (height / 100) ** 2 * 2.2046)
    umol = rng.randint(50, 400)
    person, _they, their = _pronouns(female)
    sex = "female" if female else "male"

    def value(f: dict[str, float], basis: str = "actual") -> float:
        return calculate("cockcroft_gault", {"age_years": age, "weight_kg": lb / f["lb"], "sex": sex,
                                             "creatinine_mg_dl": umol / f["creatinine"], "height_cm": height,
                                             "weight_basis": basis}).value

    egfr = calculate("egfr_ckd_epi_2021", {"creatinine_mg_dl": umol / 88.4, "age_years": age, "sex": sex}).value
    text = (f"A {age}-year-old {person} is {height} cm tall and weighs {lb} lb; {their} serum creatinine is {umol} "
            f"umol/L. What is {their} creatinine clearance by the Cockcroft-Gault equation with actual body "
            "weight, in mL/min?")
    inputs = {"age_years": age, "weight_kg": round(lb / 2.2046, 2), "sex": sex,
              "creatinine_mg_dl": round(umol / 88.4, 3)}
    return Case(text, "cockcroft_gault", inputs, value, "mL/min", 0, {"rel": 0.02},
                {"tool_calls": 1, "conversions": 2, "distractors": 1},
                [egfr, value(_factors(0), "adjusted"), value(_factors(0)) * 88.4])


def _corrected_calcium(rng: random.Random) -> Case:
    calcium, albumin = round(rng.uniform(1.75, 2.75), 2), rng.randint(18, 46)
    phosphate = round(rng.uniform(0.8, 1.6), 2)
    age = rng.randint(30, 88)

    def value(f: dict[str, float]) -> float:
        return calculate("corrected_calcium", {"calcium_mg_dl": calcium * f["calcium"],
                                               "albumin_g_dl": albumin / 10}).value

    text = (f"A {age}-year-old has total serum calcium {calcium:.2f} mmol/L, albumin {albumin} g/L and phosphate "
            f"{phosphate:.2f} mmol/L. What is the calcium corrected for albumin (normal albumin 4.0 g/dL), in "
            "mg/dL?")
    inputs = {"calcium_mg_dl": round(calcium / 0.2495, 3), "albumin_g_dl": albumin / 10}
    # Near misses: albumin left in g/L, and the answer given in mmol/L.
    return Case(text, "corrected_calcium", inputs, value, "mg/dL", 1, {"abs": 0.1},
                {"tool_calls": 1, "conversions": 2, "distractors": 1},
                [calcium / 0.2495 + 0.8 * (4.0 - albumin), value(_factors(0)) * 0.2495])


def _osmolality(rng: random.Random) -> Case:
    sodium, glucose, urea = rng.randint(124, 156), round(rng.uniform(4.5, 32), 1), round(rng.uniform(3.0, 36), 1)
    potassium = round(rng.uniform(3.4, 5.6), 1)

    def value(f: dict[str, float]) -> float:
        return calculate("serum_osmolality", {"sodium_mmol_l": sodium, "glucose_mg_dl": glucose * f["glucose"],
                                              "bun_mg_dl": urea * f["urea"]}).value

    text = (f"Blood tests show sodium {sodium} mmol/L, potassium {potassium} mmol/L, glucose {glucose} mmol/L and "
            f"urea {urea} mmol/L. What is the calculated serum osmolality (2 x sodium + glucose / 18 + BUN / 2.8, "
            "with glucose and BUN in mg/dL), in mOsm/kg?")
    inputs = {"sodium_mmol_l": sodium, "glucose_mg_dl": round(glucose / 0.0555, 2), "bun_mg_dl": round(urea / 0.357, 2)}
    unconverted = [2 * sodium + glucose / 18 + urea / 0.357 / 2.8, 2 * sodium + glucose / 0.0555 / 18 + urea / 2.8]
    return Case(text, "serum_osmolality", inputs, value, "mOsm/kg", 0, {"abs": 1.0},
                {"tool_calls": 1, "conversions": 2, "distractors": 1}, unconverted)


def _ldl(rng: random.Random) -> Case:
    total, hdl = round(rng.uniform(3.6, 8.2), 2), round(rng.uniform(0.8, 2.2), 2)
    triglycerides = round(rng.uniform(0.7, 4.4), 2)

    def value(f: dict[str, float]) -> float:
        return calculate("ldl_friedewald", {"total_cholesterol_mg_dl": total * f["cholesterol"],
                                            "hdl_mg_dl": hdl * f["cholesterol"],
                                            "triglycerides_mg_dl": triglycerides * f["triglycerides"]}).value

    text = (f"A fasting lipid panel gives total cholesterol {total:.2f} mmol/L, HDL cholesterol {hdl:.2f} mmol/L and "
            f"triglycerides {triglycerides:.2f} mmol/L. What is the LDL cholesterol by the Friedewald equation, in "
            "mg/dL?")
    inputs = {"total_cholesterol_mg_dl": round(total / 0.02586, 1), "hdl_mg_dl": round(hdl / 0.02586, 1),
              "triglycerides_mg_dl": round(triglycerides / 0.01129, 1)}
    # Near misses: the value in mmol/L; triglycerides converted with the cholesterol factor.
    wrong_factor = total / 0.02586 - hdl / 0.02586 - triglycerides / 0.02586 / 5
    return Case(text, "ldl_friedewald", inputs, value, "mg/dL", 0, {"rel": 0.02},
                {"tool_calls": 1, "conversions": 3, "distractors": 0}, [value(_factors(0)) * 0.02586, wrong_factor])


def _meld_na(rng: random.Random) -> Case:
    creatinine, bilirubin = rng.randint(55, 360), rng.randint(15, 420)
    inr, sodium = round(rng.uniform(1.0, 3.2), 1), rng.randint(122, 142)
    albumin = rng.randint(20, 40)

    def value(f: dict[str, float]) -> float:
        return calculate("meld_na", {"creatinine_mg_dl": creatinine / f["creatinine"],
                                     "bilirubin_mg_dl": bilirubin / f["bilirubin"], "inr": inr,
                                     "sodium_mmol_l": sodium}).value

    text = (f"A patient with cirrhosis, not on dialysis, has serum creatinine {creatinine} umol/L, total bilirubin "
            f"{bilirubin} umol/L, INR {inr:g}, sodium {sodium} mmol/L and albumin {albumin} g/L. What is the "
            "MELD-Na score?")
    inputs = {"creatinine_mg_dl": round(creatinine / 88.4, 3), "bilirubin_mg_dl": round(bilirubin / 17.1, 3),
              "inr": inr, "sodium_mmol_l": sodium}
    unconverted = calculate("meld_na", {"creatinine_mg_dl": min(creatinine, 4.0), "bilirubin_mg_dl": bilirubin,
                                        "inr": inr, "sodium_mmol_l": sodium}).value
    return Case(text, "meld_na", inputs, value, "", 0, {},
                {"tool_calls": 1, "conversions": 2, "distractors": 1}, [unconverted])


def _qtc(rng: random.Random) -> Case:
    qt, rr = rng.randint(330, 520), rng.choice([*range(500, 860, 10), *range(1160, 1500, 10)])
    formula = rng.choice(["bazett", "fridericia"])
    other = "fridericia" if formula == "bazett" else "bazett"

    def value(f: dict[str, float], which: str = formula) -> float:
        return calculate("qtc", {"qt_ms": qt, "heart_rate_bpm": 60000 / rr, "formula": which}).value

    text = (f"An ECG shows a QT interval of {qt} ms and an RR interval of {rr} ms (the heart rate is not reported). "
            f"What is the corrected QT interval by the {formula.capitalize()} formula, in ms?")
    return Case(text, "qtc", {"qt_ms": qt, "heart_rate_bpm": round(60000 / rr, 3), "formula": formula}, value,
                "ms", 0, {"rel": 0.01}, {"tool_calls": 1, "conversions": 1, "distractors": 0},
                [value(_factors(0), other), float(qt)])


def _bmi(rng: random.Random) -> Case:
    feet, inches = rng.choice([(4, 11), *[(5, i) for i in range(12)], *[(6, i) for i in range(5)]])
    height_m = (feet * 12 + inches) * 0.0254
    lb = round(rng.uniform(16, 45) * height_m**2 * 2.2046)

    def value(f: dict[str, float]) -> float:
        return calculate("bmi", {"weight_kg": lb / f["lb"], "height_cm": (feet * 12 + inches) * f["inch"]}).value

    text = (f"An adult is {feet} ft {inches} in tall and weighs {lb} lb. What is the body mass index, in kg/m2?")
    inputs = {"weight_kg": round(lb / 2.2046, 2), "height_cm": round((feet * 12 + inches) * 2.54, 2)}
    return Case(text, "bmi", inputs, value, "kg/m2", 1, {"rel": 0.01},
                {"tool_calls": 1, "conversions": 2, "distractors": 0}, [lb / ((feet + inches / 12) * 0.3048) ** 2])


# CHA2DS2-VASc history: (calculator input, the ways a note says it). Distractors the score does not count follow.
_COUNTED_HISTORY = {
    "congestive_heart_failure": ("heart failure with a reduced ejection fraction", "congestive heart failure"),
    "hypertension": ("high blood pressure treated with amlodipine", "hypertension on ramipril"),
    "diabetes": ("type 2 diabetes on metformin", "diabetes treated with insulin"),
    "stroke_tia_or_thromboembolism": ("a transient ischaemic attack three years ago", "an ischaemic stroke in 2019"),
    "vascular_disease": ("a myocardial infarction five years ago", "peripheral artery disease"),
}
_UNCOUNTED_HISTORY = ("asthma", "hypothyroidism", "gout", "osteoarthritis of the knees", "a raised cholesterol",
                      "a 20 pack-year smoking history", "chronic kidney disease stage 3a", "obesity",
                      "a family history of heart disease", "COPD")


def _cha2ds2_vasc(rng: random.Random) -> Case:
    female = rng.random() < 0.5
    age = rng.choice([64, 65, 74, 75]) if rng.random() < 0.4 else rng.randint(45, 90)
    counted = {name: rng.random() < 0.4 for name in _COUNTED_HISTORY}
    phrases = [rng.choice(_COUNTED_HISTORY[name]) for name, present in counted.items() if present]
    phrases += rng.sample(_UNCOUNTED_HISTORY, rng.randint(1, 3))
    rng.shuffle(phrases)
    person, _they, their = _pronouns(female)
    listed = ", ".join(phrases[:-1]) + f" and {phrases[-1]}" if len(phrases) > 1 else phrases[0]
    text = (f"A {age}-year-old {person} with atrial fibrillation has {listed}; nothing else is known in {their} "
            "history. What is the CHA2DS2-VASc score?")
    inputs = {"age_years": age, "sex": "female" if female else "male", **counted}

    def value(f: dict[str, float]) -> float:
        return calculate("cha2ds2_vasc", inputs).value

    edge = int(age in (65, 75))
    return Case(text, "cha2ds2_vasc", inputs, value, "", 0, {},
                {"tool_calls": 1, "thresholds": 1, "edges": edge, "distractors": len(phrases) - sum(counted.values())})


MAKERS: dict[str, Callable[[random.Random], Case]] = {
    "egfr_ckd_epi_2021": _egfr, "cockcroft_gault": _cockcroft_gault, "corrected_calcium": _corrected_calcium,
    "serum_osmolality": _osmolality, "ldl_friedewald": _ldl, "meld_na": _meld_na, "qtc": _qtc, "bmi": _bmi,
    "cha2ds2_vasc": _cha2ds2_vasc,
}


def _fair(case: Case) -> bool:
    """Every factor column agrees within the tolerance; every near miss falls outside it."""
    from ..verify import within_tolerance

    gold = case.value(_factors(0))
    if not math.isfinite(gold) or gold <= 0:
        return False
    rounded = round(gold, case.decimals)
    if any(not within_tolerance(case.value(_factors(variant)), gold, case.tolerance)
           or not within_tolerance(rounded, case.value(_factors(variant)), case.tolerance)
           for variant in range(1, VARIANTS)):
        return False
    return not any(within_tolerance(miss, gold, case.tolerance) or within_tolerance(round(miss, case.decimals),
                                                                                     gold, case.tolerance)
                   for miss in case.near_misses)


def generate(seed: int = 0) -> list[Task]:
    rng = random.Random(f"{FAMILY}:{seed}")
    tasks: list[Task] = []
    for name, make in MAKERS.items():
        made, attempts, seen, golds = 0, 0, set(), {}
        while made < CASES_PER_CALCULATOR:
            attempts += 1
            if attempts > CASES_PER_CALCULATOR * 500:
                raise RuntimeError(f"{FAMILY}: could not draw enough fair {name} cases")
            try:
                case = make(rng)
                fair = _fair(case)
            except ValueError:  # an input the calculator refuses (triglycerides above 400 mg/dL)
                continue
            gold = round(case.value(_factors(0)), case.decimals)
            # No one value may be the gold of more than a fifth of a calculator's cases (scores bunch up).
            if not fair or case.text in seen or golds.get(gold, 0) >= CASES_PER_CALCULATOR // 5:
                continue
            seen.add(case.text)
            golds[gold] = golds.get(gold, 0) + 1
            tasks.append(number_task(
                task_id=f"clinical-{FAMILY}-{question_digest(case.text)}", family=FAMILY,
                split=split_of(f"calculator-case:{case.text}"), question=case.text, answer=case.value(_factors(0)),
                unit=case.unit, units=UNIT_SPELLINGS.get(case.unit, ()) if case.unit else ("points", "point"),
                decimals=case.decimals, tolerance=case.tolerance, work=case.work,
                solution_prefix=[{"name": "calculate", "arguments": {"calculator": name, "inputs": case.inputs}}],
                metadata={"fact": f"calculator-case:{case.text}", "calculator": name},
            ))
            made += 1
    return tasks
