"""FHIR-v0 end to end: registration, the oracle solves every task, random play fails, tools read what the
answers claim, bad input is handled, and episodes never see each other's writes."""

from __future__ import annotations

import json
from collections import Counter

import gymnasium as gym
import pytest
from agentgym_fhir.env import make_env
from agentgym_fhir.store import FhirStore
from agentgym_fhir.tasks import FAMILIES
from agentgym_fhir.tasks.triage import level

import agentgym
from agentgym.agents.oracle import OracleAgent
from agentgym.agents.random import RandomAgent
from agentgym.tasks import Task


@pytest.fixture()
def env(small_store: FhirStore, small_tasks: list[Task]):  # type: ignore[no-untyped-def]
    environment = make_env(store=small_store, tasks=small_tasks, knowledge=False, max_turns=40)
    yield environment
    environment.close()


def test_registered_through_entry_point() -> None:
    assert "FHIR-v0" in [record.id for record in agentgym.registered()]
    assert not [f for f in agentgym.plugin_failures() if f.name == "fhir"]


def test_gym_make_with_store_families_and_split(small_store: FhirStore, small_tasks: list[Task]) -> None:
    env = gym.make("FHIR-v0", store=small_store, tasks=small_tasks, families=["lab_value", "triage"],
                   split="test", knowledge=False)
    prompt, info = env.reset(seed=1)
    assert info["family"] in ("lab_value", "triage") and info["split"] == "test"
    assert prompt.startswith("Today is ")
    names = {schema["function"]["name"] for schema in info["tools"]}
    assert {"fhir_search", "fhir_read", "latest_observation", "medication_list", "problem_list", "date_diff",
            "convert_units", "lookup_code", "calculate", "create_medication_request", "create_service_request",
            "create_observation", "submit"} <= names
    env.close()


def test_every_family_generated_with_labels(small_tasks: list[Task]) -> None:
    counts = Counter(task.family for task in small_tasks)
    assert set(counts) == set(FAMILIES) and len(FAMILIES) >= 12
    assert {task.difficulty for task in small_tasks} == {"easy", "medium", "hard"}
    assert all(task.metadata["now"].endswith("Z") for task in small_tasks)
    # splits by patient: no patient has tasks in both splits
    split_of: dict[str, set[str]] = {}
    for task in small_tasks:
        if task.metadata["patient_id"]:
            split_of.setdefault(task.metadata["patient_id"], set()).add(task.split)
    assert all(len(splits) == 1 for splits in split_of.values())
    assert {"train", "test"} <= {task.split for task in small_tasks}


def test_generation_is_deterministic(small_store: FhirStore, small_tasks: list[Task]) -> None:
    from agentgym_fhir.tasks import generate

    again = generate(seed=0, store=small_store, verbose=False)
    assert [t.model_dump() for t in again] == [t.model_dump() for t in small_tasks]


def test_oracle_solves_every_task(env, small_tasks: list[Task], play) -> None:  # type: ignore[no-untyped-def]
    oracle = OracleAgent()
    failures = []
    for task in small_tasks:
        reward, info = play(env, task, oracle)
        if reward != 1.0:
            failures.append((task.family, task.id, info["reward_breakdown"]))
    assert not failures, failures[:5]


def test_random_agent_scores_near_zero(env, small_tasks: list[Task], play) -> None:  # type: ignore[no-untyped-def]
    agent = RandomAgent(seed=0)
    rewards = [play(env, task, agent)[0] for task in small_tasks[::4]]
    assert sum(rewards) / len(rewards) < 0.05


def _tool(env, name: str, **arguments):  # type: ignore[no-untyped-def]
    outcome = env.unwrapped.tools[name].invoke(env.unwrapped.state, arguments)
    return outcome


def _solution_outputs(env, task: Task) -> list:  # type: ignore[no-untyped-def]
    env.reset(options={"task_id": task.id})
    outputs = []
    for step in task.solution[:-1]:
        outcome = _tool(env, step["name"], **step["arguments"])
        assert outcome.ok, (task.id, step, outcome.text)
        outputs.append(outcome.value)
    return outputs


def test_tools_show_what_the_answers_say(env, small_tasks: list[Task]) -> None:  # type: ignore[no-untyped-def]
    """The gold answers are computed from records read in bulk; the tools must show the same facts."""
    checked = Counter()
    for task in small_tasks:
        family, meta = task.family, task.metadata
        if family == "lab_value":
            outputs = _solution_outputs(env, task)
            if "observations" in outputs[0]:  # the history: the first, or the latest past a result entered in error
                valid = [row for row in outputs[0]["observations"] if row["status"] != "entered-in-error"]
                value = valid[-1 if meta["which"] == "latest" else 0]["value"]
            else:
                value = outputs[0]["value"]
            assert value == pytest.approx(task.answer), task.id
        elif family in ("lab_change", "vital_aggregate"):
            history = [row["value"] for row in _solution_outputs(env, task)[-1]["observations"]
                       if row["status"] != "entered-in-error"]
            if family == "lab_change":
                assert history[-1] - history[0] == pytest.approx(task.answer, abs=1e-6), task.id
            else:
                stat = meta["statistic"]  # a mean's gold is exact: the verifier takes either rounding of a tie
                got = sum(history) / len(history) if stat == "mean" else (max if stat == "max" else min)(history)
                assert got == pytest.approx(task.answer), task.id
        elif family == "risk_score":
            outputs = _solution_outputs(env, task)
            assert outputs[-1]["value"] == pytest.approx(task.answer), task.id
        elif family == "triage":
            values = [row["value"] for row in _solution_outputs(env, task)]
            assert level(dict(zip(("spo2", "sbp", "hr", "rr", "temp"), values))) == task.answer, task.id
        elif family == "encounter_timeline" and meta["variant"] == "count_window":
            page = json.loads(_solution_outputs(env, task)[0])
            assert page["total"] == task.answer, task.id
        elif family == "cohort":
            pages = [json.loads(text) for text in _solution_outputs(env, task)]
            if meta["variant"] == "demographic":
                assert pages[0]["total"] == task.answer
            else:
                subjects = {entry["subject"]["reference"] for page in pages for entry in page["entry"]}
                assert len(subjects) == task.answer, task.id
        elif family == "active_medications":
            rows = _solution_outputs(env, task)[0]["medications"]
            assert {row["rxnorm"] for row in rows} == {item[1] for item in task.answer}, task.id
        else:
            continue
        checked[family] += 1
    assert len(checked) >= 8, checked


def test_invalid_fhir_names_the_field(env, small_tasks: list[Task]) -> None:  # type: ignore[no-untyped-def]
    task = next(t for t in small_tasks if t.family == "medication_order")
    env.reset(options={"task_id": task.id})
    resource = json.loads(json.dumps(task.solution[1]["arguments"]["resource"]))
    resource["status"] = "bogus"
    outcome = _tool(env, "create_medication_request", resource=resource)
    assert not outcome.ok and "MedicationRequest.status" in outcome.text
    resource["status"] = "active"
    resource["dosageInstruction"][0]["timing"]["repeat"]["frequency"] = "often"
    outcome = _tool(env, "create_medication_request", resource=resource)
    assert not outcome.ok and "frequency" in outcome.text
    del resource["subject"]
    outcome = _tool(env, "create_medication_request", resource=resource)
    assert not outcome.ok and "subject" in outcome.text


def test_writes_to_another_patient_are_refused(env, small_tasks: list[Task]) -> None:  # type: ignore[no-untyped-def]
    task = next(t for t in small_tasks if t.family == "medication_order")
    other = next(t.metadata["patient_id"] for t in small_tasks
                 if t.metadata["patient_id"] not in (None, task.metadata["patient_id"]))
    env.reset(options={"task_id": task.id})
    resource = dict(task.solution[1]["arguments"]["resource"], subject={"reference": f"Patient/{other}"})
    outcome = _tool(env, "create_medication_request", resource=resource)
    assert not outcome.ok and "refused" in outcome.text
    assert env.unwrapped.state.written() == []


def test_forbidden_write_fails_the_task(env, small_tasks: list[Task]) -> None:  # type: ignore[no-untyped-def]
    task = next(t for t in small_tasks if t.family == "potassium_replacement" and not t.metadata["order_expected"])
    env.reset(options={"task_id": task.id})
    record_ref = f"Patient/{task.metadata['patient_id']}"
    write = {"resourceType": "MedicationRequest", "status": "active", "intent": "order",
             "subject": {"reference": record_ref},
             "medicationCodeableConcept": {"coding": [{"system": "http://www.nlm.nih.gov/research/umls/rxnorm",
                                                       "code": "8591"}]}}
    env.step({"name": "create_medication_request", "arguments": {"resource": write}})
    _, reward, terminated, _, info = env.step({"name": "submit", "arguments": {"answer": task.answer}})
    assert terminated and reward == 0.0
    assert info["reward_breakdown"]["verifier/no_forbidden_writes"] == 0.0


def test_whole_store_search_is_paged_and_capped(env, small_tasks: list[Task]) -> None:  # type: ignore[no-untyped-def]
    env.reset(options={"index": 0})
    outcome = _tool(env, "fhir_search", resource_type="Observation", params={"_count": 100000})
    page = json.loads(outcome.text)  # what the agent sees: whole entries, valid JSON, within the output limit
    assert len(outcome.text) <= env.unwrapped.output_limit and page["total"] > 100
    assert page["shown"] == len(page["entry"]) and page["shown"] + page["left_out"] == 100
    assert f"_offset={page['shown']}" in page["next"] and any("lowered" in note for note in page["notes"])
    assert any("spans every patient" in note for note in page["notes"])
    outcome = _tool(env, "fhir_search", resource_type="Observation", params={"bogus": "1"})
    assert not outcome.ok and "unknown search parameter" in outcome.text


def test_episodes_do_not_see_each_others_writes(env, small_tasks: list[Task], small_store: FhirStore) -> None:  # type: ignore[no-untyped-def]
    task = next(t for t in small_tasks if t.family == "record_vital")
    before = small_store.count("Observation")
    env.reset(options={"task_id": task.id})
    created = _tool(env, "create_observation", resource=task.solution[1]["arguments"]["resource"]).value
    kind, ident = created["created"].split("/")
    assert _tool(env, "fhir_read", resource_type=kind, resource_id=ident).ok
    env.reset(options={"task_id": task.id})
    assert not _tool(env, "fhir_read", resource_type=kind, resource_id=ident).ok
    assert small_store.count("Observation") == before


def test_garbage_actions_never_raise(env) -> None:  # type: ignore[no-untyped-def]
    env.reset(seed=3)
    for action in ["", "{not json", {"name": "fhir_search", "arguments": {"resource_type": 5}},
                   {"name": "calculate", "arguments": {"calculator": "bmi", "inputs": {"weight_kg": "x"}}},
                   {"name": "date_diff", "arguments": {"start": "yesterday-ish"}},
                   {"name": "lookup_code", "arguments": {}}, {"name": "nope", "arguments": {}}]:
        observation, reward, terminated, truncated, info = env.step(action)
        assert isinstance(observation, str) and reward == 0.0 and not terminated


def test_gymnasium_checker_passes(small_store: FhirStore, small_tasks: list[Task]) -> None:
    from gymnasium.utils.env_checker import check_env

    env = make_env(store=small_store, tasks=small_tasks[:20], knowledge=False)
    check_env(env, skip_render_check=True)
    env.close()
