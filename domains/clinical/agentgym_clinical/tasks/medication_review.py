"""medication_review: one patient, three planned medicines, three dosing rules; the answer is the daily dose of
each, in the order asked.

The renal_dosing patient (`renal_dosing.DosingCase`: weight in lb or kg, creatinine in umol/L or mg/dL, an old eGFR,
height, potassium, haemoglobin, another medicine) is planned metformin, gabapentin and one anticoagulant
(dabigatran, rivaroxaban, apixaban or enoxaparin). The rules judge by different things: metformin by CKD-EPI
eGFR, gabapentin and the anticoagulants by Cockcroft-Gault clearance, apixaban by three criteria; enoxaparin's
dose follows the weight. So the work is three knowledge-base lookups, two calculations, a threshold or criteria
per drug, and the conversions, and one slip anywhere loses the answer.

Every drug's dose must pass renal_dosing's fairness checks (each conversion factor gives the same dose; a
kidney measure off a cut-off stays 1 mL/min clear of it), and the usual misreadings must change a dose at least
three times over (`REVIEW_MISREADINGS`). The kidney measure always lands 1-12% from one of the drugs' cut-offs.
"""

from __future__ import annotations

import random

from agentgym import Task, VerifierSpec

from .common import DOMAIN, difficulty_of, question_digest, split_of
from .renal_dosing import TOLERANCE, UNITS, DosingCase, is_robust

FAMILY = "medication_review"
CASES = 300
# At least this many (drug, misreading) pairs change a dose: the old eGFR, the other kidney measure, adjusted
# weight, pounds as kg, one apixaban criterion taken as enough (`renal_dosing.DosingCase.misread_doses`).
REVIEW_MISREADINGS = 3
ANTICOAGULANTS = ("dabigatran", "rivaroxaban", "apixaban", "enoxaparin")
_CONDITION = {"dabigatran": "atrial fibrillation", "rivaroxaban": "atrial fibrillation",
              "apixaban": "atrial fibrillation", "enoxaparin": "a new deep vein thrombosis"}


def list_contract(count: int, unit: str) -> str:
    """The answer contract of a list of numbers: shape, order, unit, rounding and tolerance."""
    return (f"Answer with submit(answer=[...]) giving a JSON array of {count} numbers, the daily doses in {unit} in "
            "the order the medicines are named, each rounded to a whole number (a unit after a number is "
            f"optional: {unit}, or g with 1 g being 1,000 mg; no thousands separators). Each dose within 1% of the "
            "rule's exact dose scores; the answer scores 1 only when every dose does. A list of another length, "
            "or an item with more than one number, scores 0.")


def _text(case: DosingCase, drugs: list[str]) -> str:
    person, they, their = ("woman", "she", "her") if case.female else ("man", "he", "his")
    weight = f"{case.shown_weight} lb" if case.weight_in_lb else f"{case.shown_weight} kg"
    creatinine = (f"{case.shown_creatinine:g} umol/L" if case.creatinine_in_umol
                  else f"{case.shown_creatinine:.2f} mg/dL")
    anticoagulant = next(drug for drug in drugs if drug in ANTICOAGULANTS)
    named = f"{drugs[0]}, {drugs[1]} and {drugs[2]}"
    return (f"A {case.age}-year-old {person} has type 2 diabetes, nerve pain after shingles and "
            f"{_CONDITION[anticoagulant]}; {named} are planned. Today {they} weighs {weight} and is "
            f"{case.height_cm} cm tall; serum creatinine is {creatinine}, potassium {case.potassium:g} mmol/L and "
            f"haemoglobin {case.haemoglobin:g} g/dL. {case.months_ago} months ago {their} eGFR was "
            f"{case.old_egfr} mL/min/1.73m2. {they.capitalize()} also takes {case.other}. Using today's values and "
            f"the knowledge base's dosing rule for each medicine, what total daily dose does each rule give, for "
            f"{named} in that order? Where a rule gives a maximum, answer that maximum; where it says not to use "
            "the drug, answer 0.")


def generate(seed: int = 0) -> list[Task]:
    rng = random.Random(f"{FAMILY}:{seed}")
    tasks: list[Task] = []
    seen: set[str] = set()
    attempts = 0
    while len(tasks) < CASES:
        attempts += 1
        if attempts > CASES * 2000:
            raise RuntimeError(f"{FAMILY}: could not draw enough fair cases")
        anticoagulant = ANTICOAGULANTS[len(tasks) % len(ANTICOAGULANTS)]
        drugs = ["metformin", "gabapentin", anticoagulant]
        rng.shuffle(drugs)
        case = DosingCase(rng, rng.choice([drug for drug in drugs if drug != "apixaban"]), False)
        case.near_a_cut(rng)  # always: a review with every measure far from a cut is one easy read (playtest #55)
        golds, misread = [], 0
        for drug in drugs:
            case.drug = drug
            if not is_robust(case):
                break
            gold = case.dose()
            golds.append(gold)
            misread += sum(abs(wrong - gold) > TOLERANCE["rel"] * gold for wrong in case.misread_doses())
        if len(golds) < len(drugs) or misread < REVIEW_MISREADINGS:
            continue
        text = _text(case, drugs)
        if text in seen:
            continue
        seen.add(text)
        rounded = [round(gold) for gold in golds]
        case.drug = "gabapentin"
        inputs = case.crcl_inputs()
        egfr_inputs = {key: value for key, value in inputs.items() if key != "weight_kg"}
        conversions = int(case.weight_in_lb) + int(case.creatinine_in_umol)
        work = {"tool_calls": 2, "lookups": 3, "conversions": conversions, "thresholds": 3,
                "arithmetic": int("enoxaparin" in drugs), "distractors": 5}
        tasks.append(Task(
            id=f"clinical-{FAMILY}-{question_digest(text)}", domain=DOMAIN, family=FAMILY,
            split=split_of(f"review-case:{text}"),
            prompt=f"{text}\n\n{list_contract(len(drugs), 'mg per day')}",
            answer=rounded,
            solution=[{"name": "calculate", "arguments": {"calculator": "cockcroft_gault", "inputs": inputs}},
                      {"name": "calculate", "arguments": {"calculator": "egfr_ckd_epi_2021", "inputs": egfr_inputs}},
                      {"name": "submit", "arguments": {"answer": rounded}}],
            verifier=VerifierSpec(name="clinical_numbers"),
            metadata={"question": text, "fact": f"review-case:{text}", "drugs": drugs, "exact": golds,
                      "units": ["mg per day", *UNITS], "tolerance": dict(TOLERANCE), "grams_read_as_mg": True,
                      "decimals": 0, "work": work,
                      "answer_schema": {"type": "array", "items": {"type": "number"},
                                        "description": "The answer: the daily doses in mg, one number each, in "
                                                       "the order the question names the medicines."}},
            difficulty=difficulty_of(work),
        ))
    return tasks

