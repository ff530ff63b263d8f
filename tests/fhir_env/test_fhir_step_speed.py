"""`fhir_search` builds its page from cached compact texts of the stored resources instead of decoding and
re-encoding every match. The observation must stay byte for byte what the decoded path shows, for base
resources and for the episode's own writes, and one episode's writes must never show in another."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agentgym_fhir import tools
from agentgym_fhir.env import make_env
from agentgym_fhir.store import Episode, FhirStore

from agentgym.tasks import Task


class _Decoded:
    """Any backend that is not an `Episode` (a server session, say) takes the decoded path: the reference."""

    def __init__(self, episode: Episode) -> None:
        self.episode = episode

    def search(self, resource_type: str, params: dict[str, Any] | None = None) -> Any:
        return self.episode.search(resource_type, params)

    def read(self, resource_type: str, resource_id: str) -> dict[str, Any]:
        return self.episode.read(resource_type, resource_id)

    def create_resource(self, resource: dict[str, Any]) -> dict[str, Any]:
        return self.episode.create_resource(resource)

    def written(self) -> list[dict[str, Any]]:
        return self.episode.written()


@pytest.fixture()
def env(small_store: FhirStore, small_tasks: list[Task]):  # type: ignore[no-untyped-def]
    environment = make_env(store=small_store, tasks=small_tasks, knowledge=False, max_turns=200)
    yield environment
    environment.close()


def _queries(patient: str, code: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("Observation", {"patient": patient, "code": code, "_sort": "-date"}),
        ("Observation", {"patient": patient, "_count": "3"}),
        ("Observation", {"patient": patient, "_count": "3", "_offset": "3"}),
        ("Observation", {"patient": patient, "_count": "500"}),  # lowered to 100, with a note
        ("Observation", {"code": code, "_count": "5"}),  # across patients, with a note
        ("Observation", {"patient": patient, "category": "vital-signs", "_sort": "date"}),
        ("Observation", {"patient": patient, "_summary": "count"}),
        ("Observation", {"patient": patient, "_count": 0}),
        ("Observation", {"patient": patient, "_elements": "code,valueQuantity", "_count": "4"}),
        ("Observation", {"patient": patient, "_include": "Observation:subject", "_count": "2"}),
        ("Patient", {"_id": patient, "_revinclude": "Observation:subject"}),
        ("Patient", {"_id": patient}),
        ("Condition", {"patient": patient}),
        ("MedicationRequest", {"patient": patient, "status": "active"}),
        ("Encounter", {"patient": patient, "_sort": "-date", "_count": "2"}),
        ("Observation", {"patient": patient, "code": "no-such-code"}),
    ]


def _both(env, resource_type: str, params: dict[str, Any]) -> tuple[Any, Any]:  # type: ignore[no-untyped-def]
    state = env.unwrapped.state
    fast = env.unwrapped.tools["fhir_search"].invoke(state, {"resource_type": resource_type, "params": params})
    saved = state.backend
    state.backend = _Decoded(saved)
    try:
        slow = env.unwrapped.tools["fhir_search"].invoke(state, {"resource_type": resource_type, "params": params})
    finally:
        state.backend = saved
    return fast, slow


def test_search_pages_are_byte_identical_to_the_decoded_path(env, small_tasks: list[Task]) -> None:  # type: ignore[no-untyped-def]
    lab = [t for t in small_tasks if t.family == "lab_value"][:6]
    assert lab
    compared = 0
    for task in lab:
        env.reset(options={"task_id": task.id})
        for _ in range(2):  # the second round is served from the cache
            for resource_type, params in _queries(task.metadata["patient_id"], task.metadata["loinc"]):
                fast, slow = _both(env, resource_type, params)
                assert fast.text == slow.text, (resource_type, params)
                assert fast.ok == slow.ok
                compared += 1
    assert compared >= 100


def test_bad_searches_say_the_same(env, small_tasks: list[Task]) -> None:  # type: ignore[no-untyped-def]
    env.reset(options={"task_id": small_tasks[0].id})
    for params in ({"bogus": "1"}, {"date": "geyesterday"}, {"_count": "many"}, {"_sort": "nope"}):
        fast, slow = _both(env, "Observation", params)
        assert not fast.ok and fast.text == slow.text


def test_own_writes_show_identically_and_never_leak(env, small_tasks: list[Task]) -> None:  # type: ignore[no-untyped-def]
    task = next(t for t in small_tasks if t.family == "record_vital")
    resource = task.solution[1]["arguments"]["resource"]
    patient = task.metadata["patient_id"]
    code = resource["code"]["coding"][0]["code"]
    params = {"patient": patient, "code": code, "_sort": "-date", "_count": "50"}

    env.reset(options={"task_id": task.id})
    before, _ = _both(env, "Observation", params)  # warms the cache with the base resources
    created = env.unwrapped.tools["create_observation"].invoke(env.unwrapped.state, {"resource": resource})
    assert created.ok, created.text
    ident = created.value["created"].split("/")[1]
    fast, slow = _both(env, "Observation", params)
    assert fast.text == slow.text
    page = json.loads(fast.text)
    assert ident in [entry["id"] for entry in page["entry"]]
    assert page["total"] == json.loads(before.text)["total"] + 1
    assert all("meta" not in entry and "text" not in entry for entry in page["entry"])

    env.reset(options={"task_id": task.id})  # a fresh episode of the same task
    again, slow_again = _both(env, "Observation", params)
    assert again.text == slow_again.text == before.text
    assert ident not in again.text


def test_cache_is_bounded(env, small_tasks: list[Task], monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    # An empty cache with a limit of 5, so that a handful of searches crosses it.
    monkeypatch.setattr(tools, "_COMPACT_TEXTS", {})
    monkeypatch.setattr(tools, "_COMPACT_TEXTS_LIMIT", 5)
    task = next(t for t in small_tasks if t.family == "lab_value")
    env.reset(options={"task_id": task.id})
    fast, slow = _both(env, "Observation", {"patient": task.metadata["patient_id"], "_count": "30"})
    assert fast.text == slow.text
    assert 0 < len(tools._COMPACT_TEXTS) <= 5  # the page came from the cache path
