"""renal_dosing: a patient vignette, a drug, and the knowledge base's dosing rule; the answer is the daily dose.

The work joins three things: the rule (a `dosing` passage of the knowledge base: which kidney measure, which
cut-offs, which dose), a calculation (creatinine clearance by Cockcroft-Gault or eGFR by CKD-EPI 2021, with
`calculate`), and the threshold that picks the dose. Inputs come in other units (weight in lb, creatinine in
umol/L; the factors are in the knowledge base's `units` passages), beside distractors (an old eGFR, height,
potassium, haemoglobin, another medicine). About one case in four puts the kidney measure, or an apixaban
criterion, exactly on a cut-off, in the rule's own units so that no rounding decides it.

The answer is a free number (mg per day), never an option. Each drug's possible doses are drawn in turn, so no
dose is the answer more often than its share; enoxaparin's dose follows the weight, so it has no constant.
A case is kept only when every reasonable conversion factor (2.2 or 2.2046 lb per kg; 88, 88.4 or 88.42
umol/L per mg/dL) and rounding of the kidney measure give the same dose, so the conversion never decides it.
"""

from __future__ import annotations

import random
from typing import Any

from agentgym_fhir.calculators import cockcroft_gault, egfr_ckd_epi_2021
from agentgym_knowledge.clinical_facts import DOSE_RULES

from agentgym import Task

from .common import number_task, question_digest, split_of

FAMILY = "renal_dosing"
CASES_PER_DRUG = 120
EDGE_SHARE = 4  # one draw in this many is put exactly on a cut-off (kept while its dose's share allows)
LB_PER_KG = (2.2046, 2.2, 2.20462)
UMOL_PER_MG_DL = (88.4, 88.0, 88.42)
TOLERANCE = {"rel": 0.01}
UNIT = "mg per day"
# The ways a daily dose's unit is written (a once-daily phrase is the unit, not a second number: "81 mg once
# daily", "81 mg every 24 hours"). "twice daily" is not among them: 81 mg twice daily is 162 mg a day.
UNITS = ("mg/day", "mg/d", "mg", "mg daily", "mg a day", "mg/24 h", "mg per 24 hours", "mg once daily",
         "mg once a day", "mg once per day", "mg every 24 hours", "mg every 24 h", "mg q24h", "mg per day total",
         "mg in total per day", "mg total daily", "mg total per day")
MARGIN = 1.0  # a kidney measure off a cut-off stays this far from it (mL/min), so rounding cannot move it
NEAR_SHARE = 0.7  # of the other draws, this share puts the kidney measure within 12% of a cut-off
MISREADINGS = 2  # at least this many of a case's usual wrong readings (`DosingCase.misread_doses`) change the dose
# (apixaban's rule has two: one of them)

_USE = {
    "metformin": "type 2 diabetes; metformin is being considered",
    "dabigatran": "atrial fibrillation; dabigatran is planned for stroke prevention",
    "rivaroxaban": "atrial fibrillation; rivaroxaban is planned for stroke prevention",
    "gabapentin": "nerve pain after shingles; gabapentin is planned",
    "enoxaparin": "a new deep vein thrombosis; enoxaparin is planned as treatment",
    "apixaban": "atrial fibrillation; apixaban is planned for stroke prevention",
}
_OTHER_MEDICINES = ("atorvastatin 20 mg daily", "amlodipine 5 mg daily", "levothyroxine 75 mcg daily",
                    "omeprazole 20 mg daily", "sertraline 50 mg daily", "ramipril 5 mg daily",
                    "allopurinol 100 mg daily", "tamsulosin 0.4 mg daily")


def _bands(measure: float, cuts: tuple[float, ...], doses: tuple[float, ...], *, upper_inclusive: bool) -> float:
    """The dose of the band `measure` falls in: `cuts` descending; at a cut the band above wins when
    `upper_inclusive` ("60 or more"), the one below otherwise ("above 30", "15 to 30 included")."""
    for cut, dose in zip(cuts, doses):
        if measure > cut or (upper_inclusive and measure == cut):
            return dose
    return doses[-1]


# drug -> (the kidney measure it is judged by, the cut-offs, dose of each band (mg/day), who holds the cut)
_RULES: dict[str, tuple[str, tuple[float, ...], tuple[float, ...], bool]] = {
    "metformin": ("egfr", (45, 30), (2000, 1000, 0), True),
    "dabigatran": ("crcl", (30, 15 - 1e-9), (300, 150, 0), False),
    "rivaroxaban": ("crcl", (50, 15 - 1e-9), (20, 15, 0), False),
    "gabapentin": ("crcl", (60, 30, 15), (3600, 1400, 700, 300), True),
    "enoxaparin": ("crcl", (30,), (2, 1), True),  # mg per kg per day
}


def daily_dose(drug: str, *, crcl: float, egfr: float, age: float, weight_kg: float, creatinine_mg_dl: float) -> float:
    """The rule's daily dose in mg for one patient (`DOSE_RULES`, read as the passages state it)."""
    if drug == "apixaban":
        criteria = (age >= 80) + (weight_kg <= 60) + (creatinine_mg_dl >= 1.5)
        return 5.0 if criteria >= 2 else 10.0
    measure_name, cuts, doses, upper = _RULES[drug]
    measure = crcl if measure_name == "crcl" else egfr
    dose = _bands(measure, cuts, doses, upper_inclusive=upper)
    return dose * weight_kg if drug == "enoxaparin" else dose


def _cuts(drug: str) -> tuple[float, ...]:
    return tuple(round(cut) for cut in _RULES[drug][1]) if drug in _RULES else ()


class DosingCase:
    """One patient: what the prompt shows (`shown_*`) and how to read it back with given factors."""

    def __init__(self, rng: random.Random, drug: str, edge: bool) -> None:
        self.drug = drug
        self.female = rng.random() < 0.5
        self.age = rng.randint(40, 92)
        self.height_cm = rng.randint(150, 195)
        self.weight_in_lb = not edge and rng.random() < 0.55
        self.creatinine_in_umol = not edge and rng.random() < 0.6
        kg = round(rng.uniform(17, 42) * (self.height_cm / 100) ** 2)  # a body mass index of 17 to 42
        self.shown_weight = round(kg * 2.2046) if self.weight_in_lb else kg
        creatinine = round(min(8.0, max(0.5, 0.55 * 1.045 ** rng.randint(0, 60))), 2)
        self.shown_creatinine: float = round(creatinine * 88.4) if self.creatinine_in_umol else creatinine
        self.old_egfr = rng.randint(20, 95)
        self.months_ago = rng.randint(4, 18)
        self.potassium = round(rng.uniform(3.6, 5.4), 1)
        self.haemoglobin = round(rng.uniform(10.5, 15.5), 1)
        self.other = rng.choice(_OTHER_MEDICINES)

    def near_a_cut(self, rng: random.Random) -> None:
        """Set today's creatinine so that the kidney measure lands a little (1 to 12%) above or below one of
        the drug's cut-offs, where a misread input, the old eGFR or another weight changes the band."""
        cut = rng.choice(_cuts(self.drug))
        target = cut * (1 + rng.choice((-1, 1)) * rng.uniform(0.01, 0.12))
        if _RULES[self.drug][0] == "crcl":
            creatinine = (140 - self.age) * self.weight_kg() * (0.85 if self.female else 1) / (72 * target)
        else:  # eGFR falls as creatinine rises: find the creatinine by bisection
            low, high = 0.2, 15.0
            for _ in range(40):
                middle = (low + high) / 2
                if egfr_ckd_epi_2021(middle, self.age, self.sex()).value > target:
                    low = middle
                else:
                    high = middle
            creatinine = (low + high) / 2
        creatinine = min(12.0, max(0.4, creatinine))
        self.shown_creatinine = round(creatinine * 88.4) if self.creatinine_in_umol else round(creatinine, 2)

    def weight_kg(self, lb_per_kg: float = LB_PER_KG[0]) -> float:
        return self.shown_weight / lb_per_kg if self.weight_in_lb else float(self.shown_weight)

    def creatinine_mg_dl(self, umol_per_mg_dl: float = UMOL_PER_MG_DL[0]) -> float:
        return self.shown_creatinine / umol_per_mg_dl if self.creatinine_in_umol else float(self.shown_creatinine)

    def sex(self) -> str:
        return "female" if self.female else "male"

    def crcl_inputs(self) -> dict[str, Any]:
        return {"age_years": self.age, "weight_kg": round(self.weight_kg(), 2),
                "creatinine_mg_dl": round(self.creatinine_mg_dl(), 3), "sex": self.sex()}

    def measures(self, lb_per_kg: float, umol_per_mg_dl: float) -> tuple[float, float]:
        weight, creatinine = self.weight_kg(lb_per_kg), self.creatinine_mg_dl(umol_per_mg_dl)
        # The calculators the `calculate` tool runs, called directly (no argument validation: thousands of draws).
        crcl = cockcroft_gault(self.age, weight, creatinine, self.sex()).value
        egfr = egfr_ckd_epi_2021(creatinine, self.age, self.sex()).value
        return crcl, egfr

    def misread_doses(self) -> list[float]:
        """The doses of the usual wrong readings: the old eGFR as today's kidney function; the other kidney
        measure (eGFR for a clearance rule, clearance for an eGFR rule); the clearance with adjusted body
        weight; pounds taken as kilograms; for apixaban, one criterion taken as enough."""
        crcl, egfr = self.measures(LB_PER_KG[0], UMOL_PER_MG_DL[0])
        weight, creatinine = self.weight_kg(), self.creatinine_mg_dl()
        if self.drug == "apixaban":
            criteria = (self.age >= 80) + (weight <= 60) + (creatinine >= 1.5)
            as_kg = (self.age >= 80) + (self.shown_weight <= 60) + (creatinine >= 1.5)
            return [5.0 if criteria >= 1 else 10.0, 5.0 if as_kg >= 2 else 10.0]
        adjusted = cockcroft_gault(self.age, weight, creatinine, self.sex(), self.height_cm, "adjusted").value
        as_kg = cockcroft_gault(self.age, float(self.shown_weight), creatinine, self.sex()).value
        readings = [(self.old_egfr, self.old_egfr), (egfr, crcl), (adjusted, egfr)]
        if self.weight_in_lb:
            readings.append((as_kg, egfr))
        return [daily_dose(self.drug, crcl=wrong_crcl, egfr=wrong_egfr, age=self.age, weight_kg=weight,
                           creatinine_mg_dl=creatinine) for wrong_crcl, wrong_egfr in readings]

    def dose(self, lb_per_kg: float = LB_PER_KG[0], umol_per_mg_dl: float = UMOL_PER_MG_DL[0]) -> float:
        crcl, egfr = self.measures(lb_per_kg, umol_per_mg_dl)
        return daily_dose(self.drug, crcl=crcl, egfr=egfr, age=self.age, weight_kg=self.weight_kg(lb_per_kg),
                          creatinine_mg_dl=self.creatinine_mg_dl(umol_per_mg_dl))

    def text(self) -> str:
        person, they, their = ("woman", "she", "her") if self.female else ("man", "he", "his")
        weight = f"{self.shown_weight} lb" if self.weight_in_lb else f"{self.shown_weight} kg"
        creatinine = (f"{self.shown_creatinine:g} umol/L" if self.creatinine_in_umol
                      else f"{self.shown_creatinine:.2f} mg/dL")
        return (f"A {self.age}-year-old {person} has {_USE[self.drug]}. Today {they} weighs {weight} and is "
                f"{self.height_cm} cm tall; serum creatinine is {creatinine}, potassium {self.potassium:g} mmol/L "
                f"and haemoglobin {self.haemoglobin:g} g/dL. {self.months_ago} months ago {their} eGFR was "
                f"{self.old_egfr} mL/min/1.73m2. {they.capitalize()} also takes {self.other}. Using today's "
                f"values and the knowledge base's dosing rule for {self.drug}, what total daily dose of "
                f"{self.drug} does the rule give? Where the rule gives a maximum, answer that maximum; where it "
                "says not to use the drug, answer 0.")


def is_robust(case: DosingCase) -> bool:
    """Every reasonable conversion factor gives the same dose (within the tolerance), and a kidney measure that
    is not exactly on a cut-off stays `MARGIN` away from every cut-off."""
    gold = case.dose()
    for lb_per_kg in LB_PER_KG:
        for umol_per_mg_dl in UMOL_PER_MG_DL:
            other = case.dose(lb_per_kg, umol_per_mg_dl)
            if abs(other - gold) > TOLERANCE["rel"] * abs(gold) + 1e-9:
                return False
    if case.drug == "apixaban":
        weight, creatinine = case.weight_kg(), case.creatinine_mg_dl()
        return ((not case.weight_in_lb or abs(weight - 60) >= 0.5)
                and (not case.creatinine_in_umol or abs(creatinine - 1.5) >= 0.02))
    crcl, egfr = case.measures(LB_PER_KG[0], UMOL_PER_MG_DL[0])
    measure = egfr if _RULES[case.drug][0] == "egfr" else crcl
    return all(measure == cut or abs(measure - cut) >= MARGIN for cut in _cuts(case.drug))


def _on_a_cut(case: DosingCase, rng: random.Random) -> bool:
    """Move the case exactly onto one of its drug's cut-offs (in the rule's units); False if none fits."""
    if case.drug == "apixaban":
        criterion = rng.randrange(3)
        if criterion == 0:
            case.age = 80
        elif criterion == 1:
            case.shown_weight = 60
        else:
            case.shown_creatinine = 1.5
        return True
    if _RULES[case.drug][0] != "crcl":
        return False  # eGFR is a power law of creatinine: it does not land on a cut-off exactly
    cut = rng.choice(_cuts(case.drug))
    # Cockcroft-Gault solved for creatinine, in hundredths of a mg/dL: (140 - age) * kg * (0.85) * 100 / (72 * cut),
    # in whole numbers (0.85 * 100 = 85), so that the creatinine has two decimals and the clearance is the cut.
    for _ in range(200):
        age, kg = rng.randint(40, 92), rng.randint(42, 135)
        numerator, denominator = (140 - age) * kg * (85 if case.female else 100), 72 * int(cut)
        if numerator % denominator == 0 and 50 <= numerator // denominator <= 800:
            case.age, case.shown_weight = age, kg
            case.shown_creatinine = numerator // denominator / 100
            return True
    return False


def _work(case: DosingCase) -> dict[str, int]:
    conversions = int(case.weight_in_lb and case.drug != "metformin") + int(case.creatinine_in_umol)
    edge = case.drug == "apixaban" and (case.age == 80 or case.weight_kg() == 60 or case.creatinine_mg_dl() == 1.5)
    if case.drug in _RULES:
        crcl, egfr = case.measures(LB_PER_KG[0], UMOL_PER_MG_DL[0])
        measure = egfr if _RULES[case.drug][0] == "egfr" else crcl
        edge = measure in _cuts(case.drug)
    return {"tool_calls": 0 if case.drug == "apixaban" else 1, "lookups": 1, "conversions": conversions,
            "thresholds": 3 if case.drug == "apixaban" else 1, "edges": int(edge),
            "arithmetic": int(case.drug == "enoxaparin"), "distractors": 5}


def generate(seed: int = 0) -> list[Task]:
    rng = random.Random(f"{FAMILY}:{seed}")
    tasks: list[Task] = []
    seen: set[str] = set()
    for rule in DOSE_RULES:
        drug = rule.drug
        outcomes: list[float] = sorted({5.0, 10.0} if drug == "apixaban" else set(_RULES[drug][2]), reverse=True)
        if drug == "enoxaparin":
            outcomes = [2.0, 1.0]  # mg per kg per day
        quota = {outcome: -(-CASES_PER_DRUG // len(outcomes)) for outcome in outcomes}  # ceil: all reachable
        made = 0
        attempts = 0
        while made < CASES_PER_DRUG:
            attempts += 1
            if attempts > CASES_PER_DRUG * 4000:
                raise RuntimeError(f"{FAMILY}: could not draw enough {drug} cases")
            edge = rng.randrange(EDGE_SHARE) == 0 and (drug not in _RULES or _RULES[drug][0] == "crcl")
            case = DosingCase(rng, drug, edge)
            if edge and not _on_a_cut(case, rng):
                continue
            if not edge and drug in _RULES and rng.random() < NEAR_SHARE:
                case.near_a_cut(rng)
            gold = case.dose()
            # Each dose (for enoxaparin: once or twice a day) its share of the drug's cases, edges included.
            outcome = gold if drug != "enoxaparin" else float(gold / case.weight_kg())
            if quota.get(outcome, 0) <= 0 or not is_robust(case):
                continue
            # At least `MISREADINGS` of the usual wrong readings must give another dose, so care is rewarded.
            required = 1 if drug == "apixaban" else MISREADINGS
            if sum(abs(wrong - gold) > TOLERANCE["rel"] * gold for wrong in case.misread_doses()) < required:
                continue
            text = case.text()
            if text in seen:
                continue
            seen.add(text)
            quota[outcome] -= 1
            calls: list[dict[str, Any]] = []
            if drug in _RULES:
                calculator = "egfr_ckd_epi_2021" if _RULES[drug][0] == "egfr" else "cockcroft_gault"
                inputs = case.crcl_inputs()
                if calculator == "egfr_ckd_epi_2021":
                    inputs.pop("weight_kg")
                calls.append({"name": "calculate", "arguments": {"calculator": calculator, "inputs": inputs}})
            tasks.append(number_task(
                task_id=f"clinical-{FAMILY}-{question_digest(text)}", family=FAMILY,
                split=split_of(f"dosing-case:{text}"), question=text, answer=gold, unit=UNIT, units=UNITS,
                decimals=0, tolerance=TOLERANCE, work=_work(case), solution_prefix=calls, grams=True,
                metadata={"fact": f"dosing-case:{text}", "drug": drug},
            ))
            made += 1
    return tasks

