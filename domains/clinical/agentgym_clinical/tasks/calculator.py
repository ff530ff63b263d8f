"""calculator: a short case with the numbers a clinical score needs, answered by the score's category.

Child-Pugh class (A, B, C), Glasgow Coma Scale severity (mild, moderate, severe) and HEART score risk (low,
moderate, high), computed with `agentgym_fhir.calculators` (the same functions the `calculate` tool runs).
Cases are drawn at random until each category has the same number, so no category is right more often than
chance. The solution calls the calculator, then submits its category.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from agentgym_fhir.calculators import calculate

from agentgym import Task

from .common import TEST_SHARE, arrange, choice_task, difficulty_of, question_digest, split_of

FAMILY = "calculator"
WORK = {"tool_calls": 1, "thresholds": 1}  # the steps it needs (common.difficulty_of)
CASES_PER_CATEGORY = 10

_EYE = {4: "opens the eyes spontaneously", 3: "opens the eyes to voice", 2: "opens the eyes only to pain",
        1: "does not open the eyes"}
_VERBAL = {5: "is oriented", 4: "is confused", 3: "says inappropriate words", 2: "makes incomprehensible sounds",
           1: "makes no sound"}
_MOTOR = {6: "obeys commands", 5: "localizes pain", 4: "withdraws from pain", 3: "flexes abnormally to pain",
          2: "extends to pain", 1: "makes no movement"}
_HISTORY = {0: "slightly suspicious", 1: "moderately suspicious", 2: "highly suspicious"}
_ECG = {0: "a normal ECG", 1: "non-specific repolarization changes on the ECG", 2: "significant ST depression"}


def _child_pugh(rng: random.Random) -> tuple[dict[str, Any], str]:
    inputs: dict[str, Any] = {"bilirubin_mg_dl": round(rng.uniform(0.6, 5.0), 1), "albumin_g_dl": round(rng.uniform(2.2, 4.4), 1),
              "inr": round(rng.uniform(0.9, 2.8), 1), "ascites": rng.choice(["none", "slight", "moderate"]),
              "encephalopathy": rng.choice(["none", "grade 1-2", "grade 3-4"])}
    ascites = {"none": "no ascites", "slight": "slight ascites", "moderate": "moderate to severe ascites"}
    brain = {"none": "no hepatic encephalopathy", "grade 1-2": "grade 1-2 hepatic encephalopathy",
             "grade 3-4": "grade 3-4 hepatic encephalopathy"}
    age = rng.randint(38, 79)
    text = (f"A {age}-year-old with cirrhosis has total bilirubin {inputs['bilirubin_mg_dl']:g} mg/dL, albumin "
            f"{inputs['albumin_g_dl']:g} g/dL and INR {inputs['inr']:g}, with {ascites[inputs['ascites']]} and "
            f"{brain[inputs['encephalopathy']]}. What is the Child-Pugh class?")
    return inputs, text


def _gcs(rng: random.Random) -> tuple[dict[str, Any], str]:
    inputs: dict[str, Any] = {"eye": rng.randint(1, 4), "verbal": rng.randint(1, 5), "motor": rng.randint(1, 6)}
    age = rng.randint(18, 85)
    text = (f"After a fall, a {age}-year-old {_EYE[inputs['eye']]}, {_VERBAL[inputs['verbal']]} and "
            f"{_MOTOR[inputs['motor']]}. What grade of brain injury does the Glasgow Coma Scale give?")
    return inputs, text


def _heart(rng: random.Random) -> tuple[dict[str, Any], str]:
    inputs: dict[str, Any] = {"age_years": rng.randint(30, 85), "history": rng.randint(0, 2), "ecg": rng.randint(0, 2),
              "risk_factor_count": rng.randint(0, 4),
              "troponin_times_normal_limit": rng.choice([0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 4.0, 6.0])}
    troponin = inputs["troponin_times_normal_limit"]
    text = (f"A {inputs['age_years']}-year-old with chest pain has a {_HISTORY[inputs['history']]} history, "
            f"{_ECG[inputs['ecg']]}, {inputs['risk_factor_count']} cardiovascular risk factors (of hypertension, "
            f"raised cholesterol, diabetes, obesity, smoking, family history) and an initial troponin "
            f"{troponin:g} times the upper normal limit. What is the risk by the HEART score?")
    return inputs, text


# calculator name -> (case maker, {the calculator's category: the option's text})
SCORES: dict[str, tuple[Callable[[random.Random], tuple[dict[str, Any], str]], dict[str, str]]] = {
    "child_pugh": (_child_pugh, {"A": "Child-Pugh class A", "B": "Child-Pugh class B", "C": "Child-Pugh class C"}),
    "glasgow_coma_scale": (_gcs, {"mild": "mild", "moderate": "moderate", "severe": "severe"}),
    "heart_score": (_heart, {"low": "low risk", "moderate": "moderate risk", "high": "high risk"}),
}


def generate(seed: int = 0) -> list[Task]:
    rng = random.Random(f"{FAMILY}:{seed}")
    tasks = []
    ordinal = seed
    for name, (make_case, labels) in SCORES.items():
        for category, gold in labels.items():
            # Each category the same number of cases in each split, so no category is a constant win on a split.
            quota = {"test": round(CASES_PER_CATEGORY * TEST_SHARE),
                     "train": CASES_PER_CATEGORY - round(CASES_PER_CATEGORY * TEST_SHARE)}
            while any(quota.values()):
                inputs, text = make_case(rng)
                split = split_of(f"case:{name}:{text}")
                if calculate(name, inputs).category != category or not quota[split]:
                    continue
                quota[split] -= 1
                tasks.append(choice_task(
                    task_id=f"clinical-{FAMILY}-{name}-{question_digest(text)}", family=FAMILY,
                    split=split, question=text,
                    options=arrange(gold, [other for other in labels.values() if other != gold], ordinal),
                    answer=gold, difficulty=difficulty_of(WORK),
                    solution_prefix=[{"name": "calculate", "arguments": {"calculator": name, "inputs": inputs}}],
                    metadata={"fact": f"case:{name}:{text}", "calculator": name, "inputs": inputs, "work": WORK},
                ))
                ordinal += 1
    return tasks
