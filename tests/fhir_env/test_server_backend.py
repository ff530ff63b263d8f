"""FHIR-v0 against a real FHIR REST server (`server=URL`): the oracle solves tasks of every family, writes
included, through HTTP on a local port."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest
from agentgym_fhir.server import make_server
from agentgym_fhir.store import FhirStore

from agentgym.agents import OracleAgent
from agentgym.tasks import Task


@pytest.fixture
def server_url(small_store: FhirStore) -> Iterator[str]:
    episode = small_store.episode()  # the server's writes stay out of the shared store file
    server = make_server(episode, "127.0.0.1", 0)
    server.start_background()
    yield server.url
    server.shutdown()
    episode.close()


def test_oracle_solves_every_family_against_the_server(server_url: str, small_tasks: list[Task], play: Any) -> None:
    one_per_family: dict[str, Task] = {}
    for task in small_tasks:
        one_per_family.setdefault(task.family, task)
    env = gym.make("FHIR-v0", server=server_url, tasks=list(one_per_family.values()), knowledge=False)
    try:
        rewards = {family: play(env, task, OracleAgent())[0] for family, task in one_per_family.items()}
    finally:
        env.close()
    assert rewards == {family: 1.0 for family in one_per_family}
    assert len(rewards) >= 12


def test_invalid_write_against_the_server_names_the_field(server_url: str, small_tasks: list[Task]) -> None:
    task = next(t for t in small_tasks if t.metadata.get("patient_id"))
    env = gym.make("FHIR-v0", server=server_url, tasks=[task], knowledge=False)
    try:
        env.reset(options={"task_id": task.id})
        observation = env.step({"name": "create_observation", "arguments": {"resource": {
            "resourceType": "Observation", "status": "not-a-status", "code": {"text": "x"},
            "subject": {"reference": f"Patient/{task.metadata['patient_id']}"}}}})[0]
    finally:
        env.close()
    assert observation.startswith("Error") and "status" in observation


def test_server_episodes_cannot_change_another_episodes_truth(server_url: str, small_tasks: list[Task]) -> None:
    """An episode that writes a potassium result to the shared server must not change what the next episode (or
    any other client of that server) reads: a later potassium task still sees the record as generated."""
    from agentgym_fhir.client import FhirClient

    task = next(t for t in small_tasks if t.family == "potassium_replacement" and not t.metadata["dated"])
    patient = task.metadata["patient_id"]
    planted = {"resourceType": "Observation", "status": "final", "subject": {"reference": f"Patient/{patient}"},
               "code": {"coding": [{"system": "http://loinc.org", "code": "2823-3"}]},
               "effectiveDateTime": "2099-01-01T00:00:00Z",
               "valueQuantity": {"value": 9.9, "unit": "mmol/L", "system": "http://unitsofmeasure.org",
                                 "code": "mmol/L"}}
    env = gym.make("FHIR-v0", server=server_url, tasks=[task], knowledge=False)
    try:
        env.reset(options={"task_id": task.id})
        observation = env.step({"name": "create_observation", "arguments": {"resource": planted}})[0]
        assert "created" in observation
        env.reset(options={"task_id": task.id})
        latest = env.step({"name": "latest_observation", "arguments": {"patient_id": patient, "code": "2823-3"}})[0]
        assert "9.9" not in latest and f"{task.answer:g}" in latest
        # a crashed episode (never reset, never closed cleanly) leaves nothing behind either
        env.step({"name": "create_observation", "arguments": {"resource": planted}})
    finally:
        env.close()
    client = FhirClient(server_url)
    found = list(client.search_all("Observation", {"patient": patient, "code": "2823-3"}))
    assert all(resource.get("effectiveDateTime") != "2099-01-01T00:00:00Z" for resource in found)


def test_search_against_a_server_stays_strict(server_url: str, small_tasks: list[Task]) -> None:
    """A FHIR server ignores unknown search parameters by default; the env asks for strict handling, so a typo
    is an error the agent sees (as with the env's own store), not a silently wider search."""
    env = gym.make("FHIR-v0", server=server_url, tasks=[small_tasks[0]], knowledge=False)
    env.reset(seed=0)
    observation, *_ = env.step({"name": "fhir_search", "arguments": {"resource_type": "Patient",
                                                                     "params": {"familly": "Smith"}}})
    env.close()
    assert observation.startswith("Error") and "familly" in observation
