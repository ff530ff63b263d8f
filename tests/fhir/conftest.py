"""Shared fixtures for the FHIR data platform tests: a small generated population and a hand-made store
whose every value is known, so search results can be checked exactly."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from agentgym_fhir.data.generate import generate_store
from agentgym_fhir.store import FhirStore

if TYPE_CHECKING:
    from agentgym_fhir.server import FhirHTTPServer

SAMPLES = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "samples" / "synthea"
META = {"versionId": "1", "lastUpdated": "2024-01-01T00:00:00Z"}


@pytest.fixture(scope="session")
def population(tmp_path_factory: pytest.TempPathFactory) -> FhirStore:
    """30 generated patients (seed 0), opened read-only."""
    path = tmp_path_factory.mktemp("population") / "pop.sqlite"
    return generate_store(path, 30, seed=0, workers=1)


def _observation(oid: str, patient: str, code: str, when: str, value: float, unit: str = "mmol/L",
                 display: str = "Potassium", category: str = "laboratory") -> dict[str, Any]:
    return {"resourceType": "Observation", "id": oid, "meta": META, "status": "final",
            "category": [{"coding": [{"system": "http://terminology.hl7.org/CodeSystem/observation-category",
                                      "code": category}]}],
            "code": {"coding": [{"system": "http://loinc.org", "code": code, "display": display}], "text": display},
            "subject": {"reference": f"Patient/{patient}"}, "encounter": {"reference": "Encounter/e1"},
            "effectiveDateTime": when,
            "valueQuantity": {"value": value, "unit": unit, "system": "http://unitsofmeasure.org", "code": unit}}


KNOWN: list[dict[str, Any]] = [
    {"resourceType": "Patient", "id": "p1", "meta": META,
     "identifier": [{"system": "urn:mrn", "value": "MRN001"}],
     "name": [{"family": "Smith", "given": ["John", "Paul"]}], "gender": "male", "birthDate": "1960-05-01"},
    {"resourceType": "Patient", "id": "p2", "meta": META,
     "identifier": [{"system": "urn:mrn", "value": "MRN002"}],
     "name": [{"family": "Müller", "given": ["Zoë"]}], "gender": "female", "birthDate": "1985-11-20"},
    {"resourceType": "Patient", "id": "p3", "meta": META,
     "identifier": [{"system": "urn:other", "value": "MRN001"}],
     "name": [{"family": "Smithson", "given": ["Ann"]}], "gender": "female", "birthDate": "1960"},
    {"resourceType": "Encounter", "id": "e1", "meta": META, "status": "finished",
     "class": {"system": "http://terminology.hl7.org/CodeSystem/v3-ActCode", "code": "AMB"},
     "subject": {"reference": "Patient/p1"},
     "period": {"start": "2021-03-01T09:00:00Z", "end": "2021-03-01T10:00:00Z"}},
    _observation("k2020", "p1", "2823-3", "2020-06-15T10:00:00Z", 3.1),
    _observation("k2021", "p1", "2823-3", "2021-03-01T09:30:00Z", 4.2),
    _observation("k2022", "p1", "2823-3", "2022-12-31T23:59:59Z", 5.4),
    _observation("kp2", "p2", "2823-3", "2021-03-01T09:30:00Z", 3.6),
    _observation("a1c", "p1", "4548-4", "2021-03-01T09:30:00Z", 7.2, "%", "Hemoglobin A1c"),
    _observation("hr", "p2", "8867-4", "2021-07-04", 72, "/min", "Heart rate", "vital-signs"),
    {"resourceType": "Condition", "id": "c1", "meta": META,
     "clinicalStatus": {"coding": [{"system": "http://terminology.hl7.org/CodeSystem/condition-clinical",
                                    "code": "active"}]},
     "code": {"coding": [{"system": "http://snomed.info/sct", "code": "44054006", "display": "Type 2 diabetes"},
                         {"system": "http://hl7.org/fhir/sid/icd-10-cm", "code": "E11.9"}]},
     "subject": {"reference": "Patient/p1"}, "onsetDateTime": "2019-04"},
    {"resourceType": "MedicationRequest", "id": "m1", "meta": META, "status": "active", "intent": "order",
     "medicationCodeableConcept": {"coding": [{"system": "http://www.nlm.nih.gov/research/umls/rxnorm",
                                               "code": "6809", "display": "metformin"}]},
     "subject": {"reference": "Patient/p1"}, "authoredOn": "2019-04-02T10:00:00Z"},
]


@pytest.fixture()
def known(tmp_path: Path) -> FhirStore:
    """A store holding exactly `KNOWN` (3 patients, 6 observations...)."""
    store = FhirStore.create(tmp_path / "known.sqlite")
    with store.bulk_writer() as writer:
        for resource in KNOWN:
            writer.put(resource)
    return store


@pytest.fixture()
def server(known: FhirStore) -> Iterator[FhirHTTPServer]:
    """A real FHIR REST server over `known`, on a free loopback port, serving in a background thread."""
    from agentgym_fhir.server import make_server

    http = make_server(known, "127.0.0.1", 0)
    http.start_background()
    yield http
    http.shutdown()
    http.server_close()
