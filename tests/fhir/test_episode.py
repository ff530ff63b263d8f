"""Episodes: copy-on-write views whose writes never reach the base store or another episode."""

from __future__ import annotations

import threading

import pytest
from agentgym_fhir.errors import FhirError
from agentgym_fhir.store import FhirStore

POTASSIUM_ORDER = {
    "resourceType": "MedicationRequest", "status": "active", "intent": "order",
    "medicationCodeableConcept": {"coding": [{"system": "http://www.nlm.nih.gov/research/umls/rxnorm",
                                              "code": "8591", "display": "potassium chloride"}]},
    "subject": {"reference": "Patient/p1"}, "authoredOn": "2024-06-01T10:00:00Z",
    "dosageInstruction": [{"doseAndRate": [{"doseQuantity": {"value": 20, "unit": "meq",
                                                             "system": "http://unitsofmeasure.org",
                                                             "code": "meq"}}]}],
}


def test_writes_stay_in_their_episode(known: FhirStore) -> None:
    first, second = known.episode(now="2024-06-01T12:00:00Z"), known.episode()
    created = first.create_resource(POTASSIUM_ORDER)
    assert created["meta"] == {"versionId": "1", "lastUpdated": "2024-06-01T12:00:00Z"}
    assert first.read("MedicationRequest", created["id"])["status"] == "active"
    assert first.search("MedicationRequest", {"patient": "p1"}).total == 2
    assert first.search("MedicationRequest", {"code": "8591"}).total == 1
    for other in (second, known):
        assert other.search("MedicationRequest", {"patient": "p1"}).total == 1
        with pytest.raises(FhirError):
            other.read("MedicationRequest", created["id"])
    assert first.written() == [created]
    first.close()
    second.close()
    reopened = FhirStore.open(known.path)
    assert reopened.count("MedicationRequest") == 1


def test_updates_shadow_the_base(known: FhirStore) -> None:
    with known.episode() as episode:
        observation = episode.read("Observation", "k2021")
        updated = episode.update_resource({**observation, "status": "amended",
                                           "valueQuantity": {**observation["valueQuantity"], "value": 9.9}})
        assert updated["meta"]["versionId"] == "2"
        assert episode.read("Observation", "k2021")["status"] == "amended"
        assert [e["id"] for e in episode.search("Observation", {"code": "2823-3", "value-quantity": "gt9"}).entries] == ["k2021"]
        assert episode.search("Observation", {"code": "2823-3", "value-quantity": "4.2"}).total == 0
        # The base row is hidden, not duplicated: totals and paging count it once.
        assert episode.search("Observation", {"code": "2823-3"}).total == 4
        sorted_ids = [e["id"] for e in episode.search("Observation", {"code": "2823-3", "_sort": "-value-quantity"}).entries]
        assert sorted_ids[0] == "k2021" and len(sorted_ids) == 4
    assert known.read("Observation", "k2021")["status"] == "final"


def test_snapshot_restore_and_reset(known: FhirStore) -> None:
    with known.episode() as episode:
        episode.create_resource(POTASSIUM_ORDER)
        snapshot = episode.snapshot()
        later = episode.create_resource(POTASSIUM_ORDER)
        assert episode.search("MedicationRequest", {}).total == 3
        episode.restore(snapshot)
        assert episode.search("MedicationRequest", {}).total == 2
        with pytest.raises(FhirError):
            episode.read("MedicationRequest", later["id"])
        again = episode.create_resource(POTASSIUM_ORDER)
        assert again["id"] == later["id"]  # ids come from the episode's counter: reproducible
        episode.reset()
        assert episode.search("MedicationRequest", {}).total == 1 and episode.written() == []


def test_invalid_writes_are_refused_with_the_field(known: FhirStore) -> None:
    with known.episode() as episode:
        with pytest.raises(FhirError) as caught:
            episode.create_resource({**POTASSIUM_ORDER, "status": "done"})
        assert caught.value.status == 422 and "MedicationRequest.status" in caught.value.message
        with pytest.raises(FhirError, match="authoredOn"):
            episode.create_resource({**POTASSIUM_ORDER, "authoredOn": "June 1st"})
        with pytest.raises(FhirError, match="unknown resource type"):
            episode.create_resource({"resourceType": "Prescription"})
        assert episode.written() == []


def test_closed_episode_refuses_calls(known: FhirStore) -> None:
    episode = known.episode()
    episode.close()
    episode.close()  # idempotent
    with pytest.raises(FhirError, match="closed"):
        episode.search("Patient", {})


def test_base_store_writes_validate_and_persist(known: FhirStore) -> None:
    created = known.create_resource(POTASSIUM_ORDER)
    assert FhirStore.open(known.path).read("MedicationRequest", created["id"])["intent"] == "order"
    readonly = FhirStore.open(known.path, readonly=True)
    with pytest.raises(FhirError, match="read-only"):
        readonly.create_resource(POTASSIUM_ORDER)


def test_many_concurrent_episodes(population: FhirStore) -> None:
    patients = [p["id"] for p in population.search("Patient", {"_count": "8"}).entries]
    errors: list[BaseException] = []

    def work(patient: str) -> None:
        try:
            with population.episode() as episode:
                before = episode.search("Observation", {"patient": patient, "_summary": "count"}).total
                for _ in range(3):
                    episode.create_resource({"resourceType": "Observation", "status": "final",
                                             "code": {"text": "note"}, "subject": {"reference": f"Patient/{patient}"}})
                    assert episode.search("Observation", {"patient": patient, "_summary": "count"}).total is not None
                after = episode.search("Observation", {"patient": patient, "_summary": "count"}).total
                assert after == before + 3
        except BaseException as error:  # noqa: BLE001 (collected and re-raised in the main thread)
            errors.append(error)

    threads = [threading.Thread(target=work, args=(p,)) for p in patients for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert population.search("Observation", {"code:text": "note"}).total == 0
