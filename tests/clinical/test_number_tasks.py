"""ClinicalQA-v0's free-number families (renal_dosing, calculator_value) and its hard tier, as a user meets them:
the prompt states the answer contract and `submit` is typed a number; every way of writing the right number
scores 1, hedges, other units and near misses score 0; the dosing rules hold on their cut-offs; the test split
is large and its hard tier is the multi-step work; generated tasks are cached."""

from __future__ import annotations

from collections import Counter
from typing import Any

import gymnasium as gym
import pytest
from agentgym_clinical.tasks import default_tasks, renal_dosing
from agentgym_clinical.tasks.common import difficulty_of
from agentgym_knowledge.clinical_facts import CONVERSIONS, DOSE_RULES, fact_passages

import agentgym  # noqa: F401  (registers ClinicalQA-v0)


@pytest.fixture(scope="module")
def env() -> Any:
    made = gym.make("ClinicalQA-v0", split="test")
    yield made
    made.close()


def _submit(env: Any, task_id: str, answer: Any) -> float:
    env.reset(seed=0, options={"task_id": task_id})
    _, reward, terminated, _, _ = env.step({"name": "submit", "arguments": {"answer": answer}})
    assert terminated
    return float(reward)


def _first(env: Any, **wanted: Any) -> Any:
    return next(task for task in env.unwrapped.task_set
                if all(task.metadata.get(key, getattr(task, key, None)) == value for key, value in wanted.items()))


def test_the_test_split_is_large_and_its_hard_tier_is_multi_step_work() -> None:
    test = [task for task in default_tasks(0) if task.split == "test"]
    assert len({task.prompt for task in test}) >= 400
    hard = [task for task in test if task.difficulty == "hard"]
    assert len(hard) >= 100
    for task in hard:  # a knowledge-base rule, a calculation and a threshold, joined, and a free number
        work = task.metadata["work"]
        assert work["lookups"] and work["thresholds"] and (work["tool_calls"] or work["arithmetic"]), task.id
        assert task.verifier.name in ("clinical_number", "clinical_numbers") and not task.metadata.get("options")
    # The old three-option calculator family is one tool call: it is not hard any more.
    assert {task.difficulty for task in test if task.family == "calculator"} == {"medium"}


def test_difficulty_comes_from_the_measured_work() -> None:
    assert difficulty_of({"lookups": 1}) == "easy"
    assert difficulty_of({"tool_calls": 1, "thresholds": 1}) == "medium"
    assert difficulty_of({"tool_calls": 1, "conversions": 3}) == "medium"  # no knowledge-base rule joined
    assert difficulty_of({"tool_calls": 1, "lookups": 1, "thresholds": 1, "conversions": 1}) == "hard"
    assert difficulty_of({"tool_calls": 1, "lookups": 1, "thresholds": 1}) == "medium"
    assert difficulty_of({"tool_calls": 1, "lookups": 1, "thresholds": 1, "edges": 1}) == "hard"


def test_a_number_prompt_states_its_contract_and_submit_is_typed_a_number(env: Any) -> None:
    task = _first(env, family="renal_dosing")
    prompt, info = env.reset(seed=0, options={"task_id": task.id})
    assert "one number in mg per day, rounded to a whole number" in prompt and "1 g being 1,000 mg" in prompt
    assert "The exact value rounded so, and answers within 1% of the exact value, score 1" in prompt
    assert "more than one number" in prompt
    assert "Options:" not in prompt
    submit = next(schema for schema in info["tools"] if schema["function"]["name"] == "submit")
    assert submit["function"]["parameters"]["properties"]["answer"]["type"] == "number"
    score = _first(env, calculator="meld_na")
    assert "Only the exact value scores 1" in env.reset(seed=0, options={"task_id": score.id})[0]


def test_every_spelling_of_the_right_dose_scores_and_hedges_do_not(env: Any) -> None:
    task = next(task for task in env.unwrapped.task_set
                if task.family == "renal_dosing" and task.metadata["drug"] == "dabigatran" and task.answer == 150)
    for answer in (150, 150.0, "150", "150 mg", "150 mg/day", "150 mg per day", "150 mg daily", "150mg/d",
                   " 150 MG/DAY. ", "150 mg a day", "Total daily dose: 150 mg", "1.5e2", "150.4",
                   # Playtest #17 and #13: a once-daily phrase is the unit, and grams are the same dose.
                   "150 mg once daily", "150 mg once a day", "150 mg every 24 hours", "150 mg/24h", "0.15 g",
                   "0.15 g/day", "0.15 g daily"):
        assert _submit(env, task.id, answer) == 1.0, answer
    for answer in ("75 or 150", "75-150", "2 x 75 = 150", "150 mg (75 mg twice a day)", "300", "75", "0",
                   "150 g", "150 mg twice daily", "150 mg every 12 hours", "150 mg/kg", "", "none", "nan", "inf",
                   float("nan"), "152", "0.15 kg", "150 mcg"):
        assert _submit(env, task.id, answer) == 0.0, answer


def test_weight_based_doses_are_graded_within_the_stated_tolerance(env: Any) -> None:
    task = next(task for task in env.unwrapped.task_set
                if task.family == "renal_dosing" and task.metadata["drug"] == "enoxaparin")
    exact = task.metadata["exact"]
    assert _submit(env, task.id, round(exact * 1.009, 1)) == 1.0
    assert _submit(env, task.id, round(exact * 0.991, 1)) == 1.0
    assert _submit(env, task.id, round(exact * 1.02)) == 0.0
    assert _submit(env, task.id, round(exact / 2)) == 0.0 and _submit(env, task.id, round(exact * 2)) == 0.0


def test_scores_take_a_number_and_points_but_no_other_unit(env: Any) -> None:
    task = _first(env, calculator="cha2ds2_vasc")
    gold = task.answer
    for answer in (gold, str(gold), f"{gold} points", f"CHA2DS2-VASc score: {gold}"):
        assert _submit(env, task.id, answer) == 1.0, answer
    for answer in (gold + 1, f"{gold} mg", f"{gold} or {gold + 1}"):
        assert _submit(env, task.id, answer) == 0.0, answer


@pytest.mark.parametrize(("drug", "kidney", "expected"), [
    ("dabigatran", 30.0, 150), ("dabigatran", 30.1, 300), ("dabigatran", 15.0, 150), ("dabigatran", 14.9, 0),
    ("rivaroxaban", 50.0, 15), ("rivaroxaban", 50.1, 20), ("rivaroxaban", 15.0, 15),
    ("gabapentin", 60.0, 3600), ("gabapentin", 59.9, 1400), ("gabapentin", 30.0, 1400), ("gabapentin", 15.0, 700),
    ("gabapentin", 14.9, 300), ("metformin", 45.0, 2000), ("metformin", 44.9, 1000), ("metformin", 30.0, 1000),
    ("metformin", 29.9, 0), ("enoxaparin", 30.0, 160), ("enoxaparin", 29.9, 80),
])
def test_the_dosing_rules_hold_exactly_on_their_cut_offs(drug: str, kidney: float, expected: float) -> None:
    dose = renal_dosing.daily_dose(drug, crcl=kidney, egfr=kidney, age=60, weight_kg=80, creatinine_mg_dl=1.0)
    assert dose == expected


def test_apixaban_counts_its_criteria_on_their_cut_offs() -> None:
    def dose(age: float, weight: float, creatinine: float) -> float:
        return renal_dosing.daily_dose("apixaban", crcl=50, egfr=50, age=age, weight_kg=weight,
                                       creatinine_mg_dl=creatinine)

    assert dose(80, 60, 1.0) == 5 and dose(79, 60, 1.5) == 5 and dose(80, 61, 1.5) == 5
    assert dose(79, 60.5, 1.5) == 10 and dose(80, 61, 1.49) == 10


def test_the_rules_and_factors_the_tasks_use_are_in_the_knowledge_base() -> None:
    passages = {identifier: text for identifier, _, _, text in fact_passages()}
    for rule in DOSE_RULES:
        assert rule.rule in passages[f"dosing:{rule.drug}"]
    assert "under 30 mL/min: 1 mg per kg once every 24 hours" in passages["dosing:enoxaparin"]
    assert "15 to 30 mL/min (both ends included): 75 mg twice a day" in passages["dosing:dabigatran"]
    units = [text for identifier, text in passages.items() if identifier.startswith("units:")]
    assert len(units) == len(CONVERSIONS) and any("1 mg/dL = 88.4 umol/L" in text for text in units)


def test_no_dose_or_value_is_the_answer_of_much_of_a_family() -> None:
    tasks = [task for task in default_tasks(0) if task.verifier.name == "clinical_number"]
    for drug in {rule.drug for rule in DOSE_RULES} - {"enoxaparin"}:
        golds = Counter(task.answer for task in tasks if task.metadata.get("drug") == drug)
        assert max(golds.values()) / sum(golds.values()) <= 0.5 + 1e-9, (drug, golds)
    for calculator in {task.metadata.get("calculator") for task in tasks} - {None}:
        golds = Counter(task.answer for task in tasks if task.metadata.get("calculator") == calculator)
        assert max(golds.values()) / sum(golds.values()) <= 0.2, (calculator, golds.most_common(2))


def test_a_case_is_graded_the_same_whatever_conversion_factor_a_model_uses(env: Any) -> None:
    # A model dividing by 2.2 lb/kg and 88 umol/L per mg/dL (rather than 2.2046 and 88.4) still gets the dose.
    checked = 0
    for task in env.unwrapped.task_set:
        if task.family != "renal_dosing" or "lb" not in task.metadata["question"]:
            continue
        case_text = task.metadata["question"]
        pounds = float(case_text.split(" weighs ")[1].split(" lb")[0])
        if task.metadata["drug"] == "enoxaparin":
            per_kg = round(task.metadata["exact"] / (pounds / 2.2046))
            assert _submit(env, task.id, round(per_kg * pounds / 2.2)) == 1.0, task.id
            checked += 1
    assert checked >= 5


def test_generated_tasks_are_cached_and_rebuilt_when_the_generator_changes(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentgym_clinical import tasks as clinical_tasks

    monkeypatch.setenv("AGENTGYM_CACHE", str(tmp_path))
    few = [task for task in default_tasks(0)][:30]  # the cache is under test here, not the generator
    calls: list[int] = []
    # A spy on the real generator entry point: counts builds, so the test sees the cache serve the second make.
    monkeypatch.setattr(clinical_tasks, "generate", lambda seed: calls.append(seed) or few)
    clinical_tasks.default_tasks.cache_clear()
    try:
        made = clinical_tasks.default_tasks(0)
        files = list((tmp_path / "clinical").glob("tasks-*-seed0.jsonl"))
        assert [file.name for file in files] == [f"tasks-{clinical_tasks.cache_key()}-seed0.jsonl"]
        clinical_tasks.default_tasks.cache_clear()
        assert [task.id for task in clinical_tasks.default_tasks(0)] == [task.id for task in made]
        assert calls == [0]  # the second process-level call read the file
        old_key = clinical_tasks.cache_key()
        monkeypatch.setattr(clinical_tasks, "TASKS_VERSION", clinical_tasks.TASKS_VERSION + 1)
        assert clinical_tasks.cache_key() != old_key
        clinical_tasks.default_tasks.cache_clear()
        clinical_tasks.default_tasks(0)
        names = [file.name for file in (tmp_path / "clinical").glob("tasks-*-seed0.jsonl")]
        assert names == [f"tasks-{clinical_tasks.cache_key()}-seed0.jsonl"]  # the stale file is gone
        assert calls == [0, 0]
    finally:
        clinical_tasks.default_tasks.cache_clear()


def test_a_medication_review_takes_its_doses_as_a_list_in_the_order_asked(env: Any) -> None:
    task = next(task for task in env.unwrapped.task_set
                if task.family == "medication_review" and len(set(task.answer)) == 3)
    prompt, info = env.reset(seed=0, options={"task_id": task.id})
    assert "JSON array of 3 numbers" in prompt and "in the order the medicines are named" in prompt
    submit = next(schema for schema in info["tools"] if schema["function"]["name"] == "submit")
    assert submit["function"]["parameters"]["properties"]["answer"]["type"] == "array"
    first, second, third = task.answer
    for answer in ([first, second, third], [str(first), str(second), str(third)], f"[{first}, {second}, {third}]",
                   f"{first}, {second}, {third}", f"{first}\n{second}\n{third}", f"{first}; {second}; {third}",
                   [f"{first} mg", f"{second} mg/day", f"{third} mg once daily"], f'"[{first}, {second}, {third}]"'):
        assert _submit(env, task.id, answer) == 1.0, answer
    for answer in ([third, second, first], [first, second], [first, second, third, 0], f"{first} or {second}",
                   [first, second, f"{third} or {first}"], [first, second, third + 10 + third], ""):
        assert _submit(env, task.id, answer) == 0.0, answer


def test_a_medication_review_is_hard_multi_rule_work() -> None:
    reviews = [task for task in default_tasks(0) if task.family == "medication_review"]
    assert all(task.difficulty == "hard" and task.metadata["work"]["lookups"] == 3 for task in reviews)
    assert {drug for task in reviews for drug in task.metadata["drugs"]} == {rule.drug for rule in DOSE_RULES}
    assert max(Counter(tuple(task.answer) for task in reviews).values()) / len(reviews) < 0.1


def test_the_exact_value_rounded_as_asked_always_scores(env: Any) -> None:
    # Playtest #42: "rounded to a whole number" with a 2% band: below 25 the rounding step can be wider than the
    # band (15.45 -> 15 is 2.9% off). The value rounded as the prompt asks scores wherever it falls.
    from agentgym_clinical.verify import clinical_number

    task = _first(env, calculator="egfr_ckd_epi_2021")
    narrow = task.model_copy(update={"metadata": {**task.metadata, "exact": 15.45}})
    assert clinical_number(narrow, "15", None).value == 1.0 and clinical_number(narrow, "15.45", None).value == 1.0
    assert clinical_number(narrow, "16", None).value == 0.0 and clinical_number(narrow, "14", None).value == 0.0


def test_an_osmolality_takes_its_full_unit_spelling(env: Any) -> None:
    # Playtest #41: "mOsm/kg H2O" is the standard full spelling of the asked unit.
    task = _first(env, calculator="serum_osmolality")
    for unit in ("mOsm/kg", "mOsm/kg H2O", "mOsm/kg water", "mosmol/kg"):
        assert _submit(env, task.id, f"{task.answer} {unit}") == 1.0, unit
    assert _submit(env, task.id, f"{task.answer} mOsm/L") == 0.0


@pytest.mark.parametrize("template", ["not {}", "> {}", "<{}", "less than {}", "more than {}", "at least {} mg",
                                      "\u2265 {}", "over {} mg", "not {} mg"])
def test_a_bound_or_a_denial_of_the_number_scores_zero(env: Any, template: str) -> None:
    # Playtest (lenient replay): "not 0", ">0", "less than 150" scored 1.
    task = next(task for task in env.unwrapped.task_set
                if task.family == "renal_dosing" and task.metadata["drug"] == "dabigatran" and task.answer == 150)
    assert _submit(env, task.id, template.format(150)) == 0.0


def test_a_stated_maximum_is_the_number(env: Any) -> None:
    task = next(task for task in env.unwrapped.task_set
                if task.family == "renal_dosing" and task.metadata["drug"] == "metformin" and task.answer == 1000)
    for answer in ("at most 1000 mg/day", "up to 1000 mg per day", "max 1000 mg", "maximum: 1000 mg"):
        assert _submit(env, task.id, answer) == 1.0, answer
