"""FHIR-v0 hints from real episodes: the task's patient (only where the prompt names it), search parameters,
resource types and code systems; and "none" unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from agentgym_fhir.env import FhirEnv, make_env

from agentgym.feedback import HINT_PREFIX
from agentgym.tasks import Task


@pytest.fixture(scope="module")
def env() -> Iterator[FhirEnv]:
    made = make_env(feedback="hints", max_turns=8)
    yield made
    made.close()


def _task(env: FhirEnv, family: str) -> Task:
    return next(task for task in env.task_set if task.family == family)


def _step(env: FhirEnv, task: Task, name: str, **arguments: Any) -> str:
    env.reset(seed=0, options={"task_id": task.id})
    observation, *_ = env.step({"name": name, "arguments": arguments})
    return str(observation)


def _hints(observation: str) -> list[str]:
    return observation.split(HINT_PREFIX)[1:]


def test_asking_about_another_patient_gets_the_patient_the_prompt_names(env: FhirEnv) -> None:
    task = _task(env, "lab_value")
    patient = task.metadata["patient_id"]
    assert patient in task.prompt
    for name, arguments in (("latest_observation", {"patient_id": "someone-else", "code": "2823-3"}),
                            ("fhir_read", {"resource_type": "Patient", "resource_id": "someone-else"}),
                            ("fhir_search", {"resource_type": "Condition", "params": {"patient": "someone-else"}})):
        hints = _hints(_step(env, task, name, **arguments))
        assert hints and hints[0].startswith(f"This task is about the patient with id {patient}, as its prompt says.")
    # asking about the right patient gets no patient hint, even when nothing is found
    right = _step(env, task, "latest_observation", patient_id=patient, code="0000-0")
    assert '"found": false' in right and not _hints(right)


def test_a_lookup_task_never_gets_the_patient_it_asks_for(env: FhirEnv) -> None:
    task = _task(env, "patient_lookup")
    patient = task.metadata["patient_id"]
    assert patient not in task.prompt
    for name, arguments in (("fhir_read", {"resource_type": "Patient", "resource_id": "nobody"}),
                            ("fhir_search", {"resource_type": "Patient", "params": {"_id": "nobody"}}),
                            ("medication_list", {"patient_id": "nobody"})):
        assert patient not in _step(env, task, name, **arguments)


def test_an_unknown_search_parameter_gets_the_closest_and_the_valid_ones(env: FhirEnv) -> None:
    task = _task(env, "lab_value")
    (hint,) = _hints(_step(env, task, "fhir_search", resource_type="Observation", params={"cod": "2823-3"}))
    assert hint.startswith("Did you mean the search parameter 'code'? Observation searches filter on: based-on,")


def test_a_misspelt_resource_type_or_code_system_gets_the_closest(env: FhirEnv) -> None:
    task = _task(env, "lab_value")
    patient = task.metadata["patient_id"]
    typo = _step(env, task, "fhir_search", resource_type="Observaton", params={"patient": patient})
    assert any(hint.startswith("There is no resource type 'Observaton' here; the closest is 'Observation'.")
               for hint in _hints(typo))
    system = _step(env, task, "fhir_search", resource_type="Observation",
                   params={"patient": patient, "code": "http://loinc.com|2823-3"})
    assert any(hint.startswith("'http://loinc.com' is not a code system of this record; the closest is "
                               "'http://loinc.org'.") for hint in _hints(system))
    lookup = _step(env, task, "lookup_code", code="2823-3", system="lonic")
    assert _hints(lookup)[0].startswith("The closest code system is 'loinc'.")


def test_feedback_none_shows_the_tool_result_alone() -> None:
    plain = make_env(max_turns=4)
    try:
        task = _task(plain, "lab_value")
        observation = _step(plain, task, "latest_observation", patient_id="someone-else", code="2823-3")
    finally:
        plain.close()
    assert observation == '{"found": false, "message": "no observation with code 2823-3 for patient someone-else"}'
