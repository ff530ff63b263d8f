"""FHIR-v0's diagnosis labels (docs/diagnosis.md, "FHIR-v0"): each comes out of a real episode on the default
generated population, and none carries a patient id, code or value."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from agentgym_fhir.diagnosis import LABELS
from agentgym_fhir.env import FhirEnv, make_env

from agentgym import Task


@pytest.fixture(scope="module")
def env() -> Any:
    made = make_env(max_turns=6)
    yield made
    made.close()


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def first(env: FhirEnv, family: str) -> Task:
    return next(task for task in env.task_set if task.family == family)


def play(env: FhirEnv, task: Task, actions: list[dict[str, Any]]) -> dict[str, Any]:
    env.reset(options={"task_id": task.id})
    for action in actions:
        *_, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return info["diagnosis"]
    raise AssertionError("the episode did not end")


def another_patient(env: FhirEnv, task: Task) -> str:
    return next(other.metadata["patient_id"] for other in env.task_set
                if other.metadata.get("patient_id") not in (None, task.metadata["patient_id"]))


def test_wrong_patient_by_helper_search_and_read(env: FhirEnv) -> None:
    task = first(env, "lab_value")  # the first Lactate result of one patient, with its unit (mmol/L)
    patient, other = task.metadata["patient_id"], another_patient(env, task)
    gold = task.solution[-1]["arguments"]["answer"]
    assert play(env, task, [call("observation_history", patient_id=other, code="2524-7"), call("submit", answer=gold)]
                )["domain"] == ["wrong_patient"]
    assert play(env, task, [call("fhir_search", resource_type="Observation", params={"subject": f"Patient/{other}"}),
                            call("submit", answer=gold)])["domain"] == ["wrong_patient"]
    assert play(env, task, [call("fhir_read", resource_type="Patient", resource_id=other), call("submit", answer=gold)]
                )["domain"] == ["wrong_patient"]
    # The task's own patient, however it is written, is not another one.
    found = play(env, task, [call("fhir_search", resource_type="Observation",
                                  params={"patient": f"Patient/{patient}", "code": "2524-7"}),
                             call("submit", answer=gold)])
    assert found == {"episode": "solved", "turns": ["ok", "submitted"], "counts": {"ok": 1, "submitted": 1},
                     "domain": [], "truncated": False}


def test_unit_mismatch_in_an_answer(env: FhirEnv) -> None:
    task = first(env, "lab_value")
    number = task.solution[-1]["arguments"]["answer"].split()[0]
    assert play(env, task, [call("submit", answer=f"{number} kg")])["domain"] == ["unit_mismatch"]
    # A unit that converts is not a mismatch (the verifier converts it).
    assert play(env, task, [call("submit", answer=f"{float(number) + 1} mmol/L")])["domain"] == []


def test_wrong_code_system_in_an_answer(env: FhirEnv) -> None:
    task = first(env, "condition_coding")  # asks for an ICD-10-CM code
    found = play(env, task, [call("problem_list", patient_id=task.metadata["patient_id"]),
                             call("submit", answer="44054006")])  # a SNOMED CT concept id
    assert found["episode"] == "wrong_answer" and found["domain"] == ["wrong_code_system"]
    assert play(env, task, [call("submit", answer="E11.9")])["domain"] == []  # the right system, the wrong code


def test_list_answers_missing_or_extra_items_and_none_found(env: FhirEnv) -> None:
    task = first(env, "active_medications")
    gold = [item[0] for item in task.answer]
    assert play(env, task, [call("submit", answer=gold[:1])])["domain"] == ["answer_missing_items"]
    assert play(env, task, [call("submit", answer=[*gold, "aspirin"])])["domain"] == ["answer_extra_items"]
    assert play(env, task, [call("submit", answer="none found")])["domain"] == ["said_none_found"]


def _observation(task: Task) -> dict[str, Any]:
    return copy.deepcopy(next(step for step in task.solution if step["name"] == "create_observation")
                         ["arguments"]["resource"])


def test_write_labels(env: FhirEnv) -> None:
    task = first(env, "record_vital")  # record a body height in cm as a LOINC-coded Observation
    assert play(env, task, [call("submit", answer="done")])["domain"] == ["missing_write"]
    in_kilograms = _observation(task)
    in_kilograms["valueQuantity"].update(unit="kg", code="kg")
    assert play(env, task, [call("create_observation", resource=in_kilograms), call("submit", answer="done")]
                )["domain"] == ["unit_mismatch"]
    other_system = _observation(task)
    other_system["code"]["coding"] = [{"system": "http://snomed.info/sct", "code": "50373000"}]
    assert play(env, task, [call("create_observation", resource=other_system), call("submit", answer="done")]
                )["domain"] == ["wrong_code_system"]
    twice = _observation(task)
    found = play(env, task, [call("create_observation", resource=twice), call("create_observation", resource=twice),
                             call("submit", answer="done")])
    assert found["domain"] == ["unrequested_write"]
    # A write to another patient is refused, and still shows which patient the agent meant.
    elsewhere = _observation(task)
    elsewhere["subject"] = {"reference": f"Patient/{another_patient(env, task)}"}
    found = play(env, task, [call("create_observation", resource=elsewhere), call("submit", answer="done")])
    assert found["domain"] == ["wrong_patient", "missing_write"] and found["turns"][0] == "tool_error"


def test_labels_are_documented_and_carry_no_gold(env: FhirEnv) -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "diagnosis.md").read_text(encoding="utf-8")
    for label in LABELS:
        assert f"`{label}`" in doc, label
    task = first(env, "lab_value")
    other = another_patient(env, task)
    actions = [call("observation_history", patient_id=other, code="2524-7"), call("submit", answer="1 kg")]
    found = play(env, task, actions)
    text = json.dumps(found)
    assert task.metadata["patient_id"] not in text and other not in text and "mmol" not in text
    assert play(env, task, actions) == found  # deterministic
