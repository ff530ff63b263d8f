"""FHIR-v0 grades what the prompt asked and shows what it says it shows (issues 25 and 26).

- Units: a unit is accepted by its UCUM code, its usual display, case and spacing variants and Unicode
  superscripts; a family that asks for a unit checks it (lab_value, lab_change, vital_aggregate), one that does
  not ignores it (risk_score). Hedges and wrong units score 0.
- Writes: one coding per coded concept, the asked code; a quantity in exactly the asked unit (not a unit it
  converts to); one dosage instruction. Played through `gym.make` / `reset` / `step` on the families' tasks.
- Observations: a tool output too long for the env's output limit keeps whole entries, stays valid JSON, and its
  counts (`shown`, `left_out`, `total`) match what it shows; paging with `next` reaches every entry once.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import gymnasium as gym
import pytest
from agentgym_fhir import units
from agentgym_fhir.store import FhirStore
from agentgym_fhir.verify import check_resource, score_answer

from agentgym.tasks import Task

EGFR = "mL/min/{1.73_m2}"
RXNORM = "http://www.nlm.nih.gov/research/umls/rxnorm"


def _number(gold: float, submission: Any, unit: str, tolerance: float = 0.002) -> float:
    return score_answer(gold, submission, kind="number", tolerance=tolerance, relative=True, unit=unit,
                        require_unit=True).value


# ------------------------------------------------------------------------------------------- units
@pytest.mark.parametrize("submission", [
    "93 mL/min/1.73m2", "93 mL/min/1.73 m2", "93 mL/min/1.73m\u00b2", "93 mL/min/{1.73_m2}", "93 ml/min/1.73m2",
    "93 ML/MIN/1.73 M2", "93 mL/min per 1.73 m2", "93 mL/min/1.73 m^2", "93\u00a0mL/min/1.73\u00a0m\u00b2",
    {"value": 93, "unit": "mL/min/1.73m\u00b2"},
])
def test_egfr_unit_in_every_spelling_scores(submission: Any) -> None:
    assert _number(93.0, submission, EGFR) == 1.0


@pytest.mark.parametrize("gold, unit, submission", [
    (6.1, "10*3/uL", "6.1 x10^3/\u00b5L"), (6.1, "10*3/uL", "6.1 10\u00b3/\u03bcL"), (6.1, "10*3/uL", "6.1 K/uL"),
    (120.0, "mm[Hg]", "120 mmHg"), (120.0, "mm[Hg]", "120 mm Hg"), (72.0, "/min", "72 bpm"),
    (72.0, "/min", "72 beats per minute"), (7.2, "%", "7.2%"), (7.2, "%", "7.2 percent"),
    (37.2, "Cel", "37.2 \u00b0C"), (37.2, "Cel", "37.2 degrees Celsius"), (4.1, "mmol/L", "4.1 mEq/L"),
    (2.4, "m[IU]/L", "2.4 mIU/L"), (2.1, "{INR}", "2.1"), (2.1, "{INR}", "2.1 INR"), (12.0, "{score}", "12 points"),
    (100.0, "mg/dL", "5.55 mmol/L"),  # another unit of the same quantity, the value converted
])
def test_lab_units_in_other_spellings_score(gold: float, unit: str, submission: str) -> None:
    analyte = "glucose" if unit == "mg/dL" else None
    assert score_answer(gold, submission, kind="number", tolerance=0.01, relative=True, unit=unit,
                        require_unit=True, analyte=analyte).value == 1.0


@pytest.mark.parametrize("submission", [
    "93", "93 mL/min", "93 mL/min/1.73m2 or 94 mL/min/1.73m2", "93 or 94 mL/min/1.73m2",
    "93 mL/min/1.73m2, 93 mL/min", "93 mg/dL", "94 mL/min/1.73m2",
])
def test_egfr_hedges_missing_and_wrong_units_score_zero(submission: str) -> None:
    assert _number(93.0, submission, EGFR) == 0.0


def test_same_unit_is_the_unit_not_a_convertible_one() -> None:
    assert units.same_unit("kg", "kg") and units.same_unit("kilograms", "kg") and units.same_unit("[lb_av]", "lbs")
    assert units.same_unit("\u00b0F", "[degF]") and units.same_unit("units", "[iU]") and units.same_unit("mEq", "meq")
    assert not units.same_unit("g", "kg") and not units.same_unit("[lb_av]", "kg") and not units.same_unit("K", "Cel")
    assert not units.same_unit("mmol", "meq") and not units.same_unit("", "kg")


def _env(store: FhirStore, tasks: list[Task], **kwargs: Any) -> Any:
    return gym.make("FHIR-v0", store=store, tasks=tasks, knowledge=False, **kwargs)


def _submit(env: Any, task: Task, answer: Any, calls: list[dict[str, Any]] | None = None) -> float:
    env.reset(options={"task_id": task.id})
    for call in calls or []:
        env.step(call)
    _observation, reward, terminated, _truncated, _info = env.step({"name": "submit", "arguments": {"answer": answer}})
    assert terminated
    return float(reward)


def _first(tasks: list[Task], family: str, test: Any = None) -> Task:
    found = [task for task in tasks if task.family == family and (test is None or test(task))]
    if not found:
        pytest.skip(f"the small population made no {family} task for this case")
    return found[0]


def test_lab_value_through_the_env_accepts_spellings_and_refuses_hedges(small_store: FhirStore,
                                                                         small_tasks: list[Task]) -> None:
    task = _first(small_tasks, "lab_value", lambda t: t.verifier.params["unit"] in ("mg/dL", "mmol/L", "g/dL", "%"))
    unit, value = task.verifier.params["unit"], float(task.answer)
    env = _env(small_store, small_tasks)
    try:
        assert "UCUM code or its usual spelling" in task.prompt
        assert _submit(env, task, f"{value:g} {unit}") == 1.0
        assert _submit(env, task, f"{value:g} {unit.upper()}") == 1.0
        assert _submit(env, task, f"{value:g}") == 0.0  # the prompt asks for the unit
        assert _submit(env, task, f"{value:g} {unit} or {value + 1:g} {unit}") == 0.0
        assert _submit(env, task, f"{value:g} mL/min") == 0.0
    finally:
        env.close()


def test_lab_change_checks_the_unit_it_asks_for(small_store: FhirStore, small_tasks: list[Task]) -> None:
    task = _first(small_tasks, "lab_change")
    unit, change = task.verifier.params["unit"], float(task.answer)
    wrong = "mg/dL" if units.ucum_code(unit) == "%" else "%"
    env = _env(small_store, small_tasks)
    try:
        assert "number and its unit" in task.prompt
        assert _submit(env, task, f"{change:g} {unit}") == 1.0
        assert _submit(env, task, f"{change:g} {wrong}") == 0.0  # the right number in a wrong unit
        assert _submit(env, task, f"{change:g}") == 0.0
    finally:
        env.close()


def test_vital_aggregate_checks_the_unit_and_risk_score_ignores_it(small_store: FhirStore,
                                                                    small_tasks: list[Task]) -> None:
    vital = _first(small_tasks, "vital_aggregate")
    risk = _first(small_tasks, "risk_score", lambda t: t.metadata["calculator"] == "bmi")
    env = _env(small_store, small_tasks)
    try:
        unit = vital.verifier.params["unit"]
        assert _submit(env, vital, f"{float(vital.answer):g} {unit}") == 1.0
        assert _submit(env, vital, f"{float(vital.answer):g} points") == 0.0
        assert "not graded" in risk.prompt
        assert _submit(env, risk, f"{float(risk.answer):g}") == 1.0
        assert _submit(env, risk, f"{float(risk.answer):g} kg/m\u00b2") == 1.0
    finally:
        env.close()


# ------------------------------------------------------------------------------------------- writes
def _written(task: Task) -> dict[str, Any]:
    for step in task.solution:
        if step["name"].startswith("create_"):
            return copy.deepcopy(step["arguments"]["resource"])
    raise AssertionError(f"{task.id} writes nothing")


def _play_write(env: Any, task: Task, resource: dict[str, Any]) -> float:
    tool = {"MedicationRequest": "create_medication_request", "Observation": "create_observation",
            "ServiceRequest": "create_service_request"}[resource["resourceType"]]
    answer = task.solution[-1]["arguments"]["answer"]
    return _submit(env, task, answer, [{"name": tool, "arguments": {"resource": resource}}])


def _dose(resource: dict[str, Any]) -> dict[str, Any]:
    quantity: dict[str, Any] = resource["dosageInstruction"][0]["doseAndRate"][0]["doseQuantity"]
    return quantity


@pytest.mark.parametrize("family", ["medication_order", "potassium_replacement", "record_vital", "referral"])
def test_each_write_family_checks_exactly_what_was_asked(family: str, small_store: FhirStore,
                                                        small_tasks: list[Task]) -> None:
    task = _first(small_tasks, family, lambda t: bool(t.verifier.params["expected"]))
    env = _env(small_store, small_tasks)
    try:
        right = _written(task)
        assert _play_write(env, task, right) == 1.0
        field = {"MedicationRequest": "medicationCodeableConcept", "Observation": "code",
                 "ServiceRequest": "performerType"}[right["resourceType"]]
        coding = right[field]["coding"][0]
        cheats = []
        twice = copy.deepcopy(right)
        twice[field]["coding"] = [coding, {**coding, "code": "999999"}]
        cheats.append(twice)
        same_twice = copy.deepcopy(right)
        same_twice[field]["coding"] = [coding, dict(coding)]
        cheats.append(same_twice)
        other_system = copy.deepcopy(right)
        other_system[field]["coding"] = [coding, {"system": "http://example.org/codes", "code": "x"}]
        cheats.append(other_system)
        if right["resourceType"] == "MedicationRequest":
            two_doses = copy.deepcopy(right)
            two_doses["dosageInstruction"].append(copy.deepcopy(two_doses["dosageInstruction"][0]))
            _dose({"dosageInstruction": two_doses["dosageInstruction"][1:]})["value"] *= 2
            cheats.append(two_doses)
            other_unit = copy.deepcopy(right)
            _dose(other_unit).update({"value": _dose(right)["value"] / 1000, "unit": "g", "code": "g"})
            cheats.append(other_unit)
            disagreeing = copy.deepcopy(right)
            _dose(disagreeing)["unit"] = "g"  # the code says one unit, the display another
            cheats.append(disagreeing)
        if right["resourceType"] == "Observation":
            given = task.metadata["given"]
            unconverted = copy.deepcopy(right)
            given_unit = {"kg": "[lb_av]", "Cel": "[degF]", "cm": "[in_i]"}[right["valueQuantity"]["code"]]
            unconverted["valueQuantity"].update({"value": given, "unit": given_unit, "code": given_unit})
            cheats.append(unconverted)
            two_categories = copy.deepcopy(right)
            two_categories["category"].append({"coding": [{"system": right["category"][0]["coding"][0]["system"],
                                                           "code": "laboratory"}]})
            cheats.append(two_categories)
        for cheat in cheats:
            assert _play_write(env, task, cheat) == 0.0, json.dumps(cheat)[:400]
    finally:
        env.close()


@pytest.mark.parametrize("unit_fields, ok", [
    ({"unit": "kg"}, True), ({"code": "kg"}, True), ({"unit": "kilograms", "code": "kg"}, True),
    ({"unit": "kg", "code": "kg", "system": "http://unitsofmeasure.org"}, True),
    ({"unit": "g", "code": "g"}, False), ({"unit": "lb", "code": "[lb_av]"}, False), ({}, False),
    ({"unit": "lb", "code": "kg"}, False), ({"unit": "kg", "code": "kg", "system": "http://example.org"}, False),
])
def test_a_written_quantity_is_in_the_asked_unit(unit_fields: dict[str, str], ok: bool) -> None:
    resource = {"resourceType": "Observation", "valueQuantity": {"value": 70.0, **unit_fields}}
    spec = {"resourceType": "Observation", "value": {"value": 70.0, "unit": "kg", "tolerance": 0.15}}
    assert check_resource(resource, spec)["value"] is ok


@pytest.mark.parametrize("unit, display", [("[iU]", "units"), ("{puff}", "puffs"), ("meq", "mEq"),
                                           ("ug", "micrograms"), ("mg", "mg")])
def test_a_dose_unit_may_be_its_prompt_display(unit: str, display: str) -> None:
    resource = {"resourceType": "MedicationRequest",
                "medicationCodeableConcept": {"coding": [{"system": RXNORM, "code": "1"}]},
                "dosageInstruction": [{"doseAndRate": [{"doseQuantity": {"value": 10, "unit": display}}]}]}
    spec = {"resourceType": "MedicationRequest", "code": [RXNORM, "1"], "dose": {"value": 10, "unit": unit}}
    assert check_resource(resource, spec) == {"type": True, "code": True, "dose": True}


# ------------------------------------------------------------------------------------------- observations
def _tool_text(env: Any, name: str, **arguments: Any) -> str:
    observation, *_rest = env.step({"name": name, "arguments": arguments})
    return str(observation)


def _as_json(text: str) -> Any:
    start = text.index("{")
    return json.loads(text[start:text.rindex("}") + 1])


@pytest.mark.parametrize("limit", [1500, 8000])
def test_a_long_search_page_shows_whole_entries_and_pages_to_the_rest(limit: int, small_store: FhirStore,
                                                                      small_tasks: list[Task]) -> None:
    task = _first(small_tasks, "lab_value")
    patient = task.metadata["patient_id"]
    env = _env(small_store, small_tasks, output_limit=limit, max_turns=400)
    try:
        env.reset(options={"task_id": task.id})
        seen: list[str] = []
        offset, total = 0, None
        while True:
            text = _tool_text(env, "fhir_search", resource_type="Observation",
                              params={"patient": patient, "_count": 100, "_offset": offset, "_sort": "date"})
            page = _as_json(text)
            assert len(text) <= limit + 200  # the output (with any hint the env adds) fits the limit
            assert page["shown"] == len(page["entry"]) and "truncated" not in text
            total = page["total"]
            seen.extend(entry["id"] for entry in page["entry"])
            if "next" not in page:
                break
            assert page["shown"] > 0
            offset = int(page["next"].rsplit("_offset=", 1)[1])
            assert offset == len(seen)
        assert len(seen) == len(set(seen)) == total > 0
        if limit == 1500:
            assert total > 10  # the small limit really cut pages
    finally:
        env.close()


@pytest.mark.parametrize("tool", ["observation_history", "problem_list", "medication_list"])
def test_list_tools_count_what_they_show_and_page_on(tool: str, small_store: FhirStore,
                                                     small_tasks: list[Task]) -> None:
    task = _first(small_tasks, "lab_value")
    patient = task.metadata["patient_id"]
    arguments: dict[str, Any] = {"patient_id": patient}
    key = {"observation_history": "observations", "problem_list": "conditions", "medication_list": "medications"}[tool]
    if tool == "observation_history":
        arguments["code"] = task.metadata["loinc"]
    else:
        arguments["include_inactive" if tool == "problem_list" else "status"] = True if tool == "problem_list" else "all"
    env = _env(small_store, small_tasks, output_limit=600, max_turns=400)
    try:
        env.reset(options={"task_id": task.id})
        rows: list[Any] = []
        offset = 0
        while True:
            result = _as_json(_tool_text(env, tool, **arguments, offset=offset))
            assert result["shown"] == len(result[key]) and result["offset"] == offset
            rows.extend(result[key])
            if "left_out" not in result:
                break
            assert result["shown"] + result["left_out"] == result["total"] - offset and result["shown"] > 0
            offset += result["shown"]
        assert len(rows) == result["total"]
    finally:
        env.close()


def test_a_resource_too_long_to_show_names_the_fields_it_left_out(small_store: FhirStore,
                                                                  small_tasks: list[Task]) -> None:
    task = _first(small_tasks, "lab_value")
    env = _env(small_store, small_tasks, output_limit=600)
    try:
        env.reset(options={"task_id": task.id})
        text = _tool_text(env, "fhir_read", resource_type="Patient", resource_id=task.metadata["patient_id"])
        shown = _as_json(text)
        assert shown["resourceType"] == "Patient" and shown["left_out_fields"]
        assert not set(shown["left_out_fields"]) & set(shown)
    finally:
        env.close()
