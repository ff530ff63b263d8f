"""lab_range: "An adult's serum potassium is 2.1 mmol/L: below, within or above the usual range?"

Each laboratory test gives three tasks, one value below, one inside and one above its usual adult range, so each
answer is right for exactly a third of the family. Values sit well clear of the range's ends in both this
project's tables (agentgym_fhir's generator ranges and the knowledge base's facts), which differ slightly.
"""

from __future__ import annotations

from agentgym_fhir.vocab.labs import LABS

from agentgym import Task

from .common import arrange, choice_task, difficulty_of, split_of

FAMILY = "lab_range"
WORK = {"lookups": 1, "thresholds": 1}  # the steps it needs (common.difficulty_of)
BANDS = ("below the usual range", "within the usual range", "above the usual range")
# LOINC codes of the tests asked about: both bounds known, and in the knowledge base's labs table.
TESTS = ("2823-3", "2951-2", "2075-0", "2028-9", "3094-0", "17861-6", "1751-7", "6690-2", "718-7", "777-3",
         "3016-3", "6301-6", "1742-6", "1920-8", "19123-9", "2160-0", "2345-7", "2524-7")
_UNITS = {"10*3/uL": "x10^3/uL", "m[IU]/L": "mIU/L", "{INR}": ""}


def _value(low: float, high: float, band: int, decimals: int) -> float:
    raw = (low * 0.6, (low + high) / 2, high * 1.5)[band]
    return round(raw, max(decimals, 1) if raw < 10 else decimals)


def generate(seed: int = 0) -> list[Task]:
    tasks = []
    ordinal = seed
    for loinc in TESTS:
        lab = LABS[loinc]
        assert lab.low is not None and lab.high is not None, loinc
        unit = _UNITS.get(lab.unit, lab.unit)
        for band, gold in enumerate(BANDS):
            value = _value(lab.low, lab.high, band, lab.decimals)
            shown = f"{value:g} {unit}".strip()
            tasks.append(choice_task(
                task_id=f"clinical-{FAMILY}-{loinc}-{value:g}", family=FAMILY,
                split=split_of(f"lab:{loinc}"),
                question=f"An adult's {lab.name.lower()} (LOINC {loinc}) result is {shown}. How does it compare "
                         "with the usual adult reference range?",
                options=arrange(gold, [other for other in BANDS if other != gold], ordinal), answer=gold,
                difficulty=difficulty_of(WORK), metadata={"fact": f"lab:{loinc}", "value": value, "unit": lab.unit, "work": WORK},
            ))
            ordinal += 1
    return tasks
