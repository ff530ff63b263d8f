"""Cases the FHIR-v0 playtest (issue 26) judged unfair, each at its cause: the equivalent spellings score 1, the
hedges and near misses score 0. Numbers are the playtest's episode numbers (/work/playtest/FHIR-v0.md)."""

from __future__ import annotations

import pytest
from agentgym_fhir.verify import score_answer

from agentgym import answers

IDS = [["1b2c", "MedicationRequest/1b2c"], ["9f8e", "MedicationRequest/9f8e"]]
MEDS = [["amlodipine", "17767"], ["lisinopril", "29046"], ["omeprazole", "7646"]]


# #14: a bracketed list written without JSON quotes
@pytest.mark.parametrize(("submission", "expected"), [
    ("[1b2c, 9f8e]", 1.0), ("['1b2c', '9f8e']", 1.0), ('["1b2c", "9f8e"]', 1.0), ("1b2c, 9f8e", 1.0),
    ("[1b2c]", 0.0), ("[1b2c, 9f8e, 7a7a]", 0.0), ("[1b2c or 9f8e]", 0.0),
])
def test_a_bracketed_list_without_quotes_is_a_list(submission: str, expected: float) -> None:
    assert score_answer(IDS, submission, kind="set").value == expected, submission


def test_the_core_reads_a_bracketed_list_without_quotes() -> None:
    assert answers.parse_list("[a, b]") == ["a", "b"]
    assert answers.parse_list("['a', 'b']") == ["a", "b"]
    assert answers.parse_list("[a]") == ["a"]
    assert answers.parse_list("[]") == []


# #16: an item that names the drug with its dose, or with its own code
@pytest.mark.parametrize(("submission", "expected"), [
    (["amlodipine 5 mg", "lisinopril 10 mg", "omeprazole 20 mg"], 1.0),
    ("Amlodipine 5 mg daily, Lisinopril 10 mg daily, Omeprazole 20 mg daily", 1.0),
    ("amlodipine (17767), lisinopril (29046), omeprazole (7646)", 1.0),
    (["Amlodipine", "Lisinopril", "Omeprazole"], 1.0),
    (["amlodipine 5 mg", "lisinopril 10 mg"], 0.0),
    (["amlodipine or lisinopril", "omeprazole"], 0.0),
    (["amlodipine 5 mg", "lisinopril 10 mg", "omeprazole 20 mg", "aspirin 81 mg"], 0.0),
    (["amlodipine", "amlodipine 5 mg", "omeprazole"], 0.0),
    (["amlodipine/lisinopril", "lisinopril", "omeprazole"], 0.0),
])
def test_a_listed_drug_may_carry_its_dose_or_code(submission: object, expected: float) -> None:
    assert score_answer(MEDS, submission, kind="set").value == expected, submission


# #18: a change converted to another unit, rounded to the asked decimals in that unit
@pytest.mark.parametrize(("submission", "expected"), [
    ("8.00 mg/dL", 1.0), ("0.21 mmol/L", 1.0), ("0.207 mmol/L", 1.0), ("0.2069 mmol/L", 1.0),
    ("0.20 mmol/L", 0.0), ("0.22 mmol/L", 0.0), ("0.2 mmol/L", 0.0), ("-0.21 mmol/L", 0.0), ("0.21", 0.0),
])
def test_a_converted_answer_is_rounded_in_its_own_unit(submission: str, expected: float) -> None:
    # lab_change of HDL cholesterol: +8 mg/dL, asked to two decimals (tolerance 0.011)
    score = score_answer(8.0, submission, kind="number", tolerance=0.011, unit="mg/dL", require_unit=True,
                         analyte="cholesterol")
    assert score.value == expected, submission


# #26: a total daily dose asked in mg, written as a rate per day
@pytest.mark.parametrize(("submission", "expected"), [
    ("1800 mg", 1.0), (1800, 1.0), ("1800 mg/day", 1.0), ("1800 mg/d", 1.0), ("1800 mg daily", 1.0),
    ("1800 mg per day", 1.0), ("1.8 g/day", 1.0), ("1800 mg a day", 1.0),
    ("900 mg/day", 0.0), ("600 mg three times daily", 0.0), ("1800 mg/h", 0.0), ("1800 mg/week", 0.0),
])
def test_a_daily_dose_may_be_written_per_day(submission: object, expected: float) -> None:
    score = score_answer(1800, submission, kind="number", tolerance=0, unit="mg", daily=True)
    assert score.value == expected, submission


@pytest.mark.parametrize("submission", ["600 mg three times daily", "600 mg TID", "300 mg every 8 hours", "600 mg twice a day"])
def test_a_dose_per_administration_is_not_the_daily_total(submission: str) -> None:
    assert score_answer(600, submission, kind="number", tolerance=0, unit="mg", daily=True).value == 0.0


def test_a_one_code_list_is_that_code_and_two_codes_are_a_hedge() -> None:
    """FHIR playtest #2: `["M54.17"]` for "that one code" scored 0; a list of two codes is still no answer."""
    from agentgym_fhir.verify import normalize_code

    for spelling in (["M54.17"], '["M54.17"]', "M54.17", ("m54.17",), {"code": "M54.17"}):
        assert normalize_code(spelling) == "M5417", spelling
    for hedge in (["M54.17", "M54.16"], '["M54.17", "M54.16"]', "M54.17, M54.16", [], "[]"):
        assert normalize_code(hedge) == "", hedge
