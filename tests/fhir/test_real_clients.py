"""`agentgym fhir serve` as two widely used third-party FHIR clients see it: `fhirpy` (SyncFHIRClient) and
`fhirclient` (SMART on FHIR, whose R4 models check every field they read). Each searches with paging, counts,
includes, reads, creates, updates and meets the server's errors; every response body the clients received
is then parsed with the `fhir.resources` models.

Which `fhir.resources`: versions 7 and 8 (this project pins >=8) put R5 at the top level and R4B, FHIR 4.3 —
R4 plus a handful of fixes — under `fhir.resources.R4B`; no version >=7 ships 4.0.1 itself. R4B is what parses
R4 here: every element this server returns has the same shape in both. `fhirclient`'s own models are 4.0.1.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from agentgym_fhir.server import FhirHTTPServer
from agentgym_fhir.store import FhirStore


def _require(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as error:
        message = f"{module} is not installed ({error}); pip install -e 'domains/fhir[dev]'"
        if os.environ.get("CI"):  # CI installs the dev extra: a missing client there is a failure
            pytest.fail(message, pytrace=False)
        pytest.skip(message, allow_module_level=True)


fhirpy = _require("fhirpy")
fhirclient_client = _require("fhirclient.client")
R4B = _require("fhir.resources.R4B")

from fhirclient.models.bundle import Bundle as SmartBundle
from fhirclient.models.observation import Observation as SmartObservation
from fhirclient.models.patient import Patient as SmartPatient
from fhirpy.base.exceptions import MultipleResourcesFound, OperationOutcome, ResourceNotFound

STRICT = {"Prefer": "handling=strict"}


class Responses:
    """Every HTTP response a client got (a `requests` response hook), for checking against the R4 models."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int, Any]] = []

    def hook(self, response: Any, *args: Any, **kwargs: Any) -> Any:
        body = json.loads(response.content) if response.content else None
        self.seen.append((f"{response.request.method} {response.url}", response.status_code, body))
        return response

    def check_r4(self) -> int:
        """Parse every body with fhir.resources (R4B); returns how many were parsed."""
        for where, _status, body in self.seen:
            assert body is not None, where
            _parse(body, where)
            for entry in body.get("entry") or []:
                _parse(entry["resource"], where)
        return len(self.seen)


def _parse(resource: dict[str, Any], where: str) -> None:
    model = R4B.get_fhir_model_class(resource["resourceType"])
    try:
        model.model_validate(resource)
    except Exception as error:  # noqa: BLE001 (pydantic's ValidationError; the message names the element)
        pytest.fail(f"{where}: the {resource['resourceType']} does not parse as FHIR R4: {error}")


@pytest.fixture()
def responses() -> Iterator[Responses]:
    recorded = Responses()
    yield recorded
    assert recorded.check_r4() > 0


# ------------------------------------------------------------------------------------------- fhirpy

def _fhirpy(server: FhirHTTPServer, responses: Responses, headers: dict[str, str] | None = None) -> Any:
    return fhirpy.SyncFHIRClient(server.url, extra_headers=headers,
                                 requests_config={"hooks": {"response": [responses.hook]}, "timeout": 10})


def test_fhirpy_search_pages_counts_and_includes(server: FhirHTTPServer, responses: Responses) -> None:
    client = _fhirpy(server, responses)
    potassium = client.resources("Observation").search(code="http://loinc.org|2823-3").sort("date")
    # count() sends _count=0&_totalMethod=count: the unknown _totalMethod is ignored, as FHIR asks
    assert potassium.count() == 4
    # iterating follows the Bundle's next links, two per page
    assert [o.id for o in potassium.limit(2)] == ["k2020", "k2021", "kp2", "k2022"]
    assert len(responses.seen) == 1 + 2
    assert [o.id for o in potassium.limit(2).fetch()] == ["k2020", "k2021"]  # one page only
    assert [o.id for o in client.resources("Observation").search(patient="p2").sort("-date").fetch_all()] \
        == ["hr", "kp2"]
    assert client.resources("Patient").search(family="smith").count() == 2  # Smith, Smithson
    summary = client.resources("Observation").search(code="4548-4", _summary="count").fetch_raw()
    assert summary["total"] == 1 and not summary.get("entry")
    raw = client.resources("Observation").search(_id="a1c").include("Observation", "patient").fetch_raw()
    modes = {(e["resource"]["resourceType"], e["search"]["mode"]) for e in raw["entry"]}
    assert modes == {("Observation", "match"), ("Patient", "include")}
    rev = client.resources("Patient").search(_id="p2").revinclude("Observation", "subject").fetch_raw()
    assert sorted(e["resource"]["id"] for e in rev["entry"] if e["search"]["mode"] == "include") == ["hr", "kp2"]
    assert client.resources("Patient").search(identifier="urn:mrn|MRN002").get().id == "p2"
    with pytest.raises(MultipleResourcesFound):
        client.resources("Patient").search(identifier="MRN001").get()


def test_fhirpy_read_create_update_and_conditional_writes(server: FhirHTTPServer, responses: Responses,
                                                          known: FhirStore) -> None:
    client = _fhirpy(server, responses)
    patient = client.reference("Patient", "p1").to_resource()
    assert patient["name"][0]["family"] == "Smith" and patient["birthDate"] == "1960-05-01"
    with pytest.raises(ResourceNotFound):
        client.reference("Patient", "nobody").to_resource()
    created = client.resource("Observation", status="final", code={"text": "note"},
                              subject={"reference": "Patient/p2"})
    created.save()
    assert created.id and created["meta"]["versionId"] == "1"
    created["status"] = "amended"
    created.save()
    assert created["meta"]["versionId"] == "2"
    assert known.read("Observation", created.id)["status"] == "amended"
    # get_or_create: fhirpy's conditional create (POST with the criteria as a query)
    newcomer = client.resource("Patient", identifier=[{"system": "urn:mrn", "value": "MRN777"}],
                               name=[{"family": "Okafor"}])
    first, was_created = client.resources("Patient").search(identifier="urn:mrn|MRN777").get_or_create(newcomer)
    again, created_again = client.resources("Patient").search(identifier="urn:mrn|MRN777").get_or_create(newcomer)
    assert was_created and not created_again and again.id == first.id
    # conditional update: PUT /Patient?identifier=...
    renamed = client.resource("Patient", identifier=[{"system": "urn:mrn", "value": "MRN777"}],
                              name=[{"family": "Okafor-Ade"}])
    updated, made = client.resources("Patient").search(identifier="urn:mrn|MRN777").update(renamed)
    assert not made and updated.id == first.id and updated["meta"]["versionId"] == "2"
    assert known.read("Patient", first.id)["name"][0]["family"] == "Okafor-Ade"


def test_fhirpy_sees_the_errors(server: FhirHTTPServer, responses: Responses) -> None:
    lenient = _fhirpy(server, responses)
    assert lenient.resources("Observation").search(colour="red", code="2823-3").count() == 4
    strict = _fhirpy(server, responses, STRICT)
    with pytest.raises(OperationOutcome, match="unknown search parameter 'colour'"):
        strict.resources("Observation").search(colour="red").fetch()
    with pytest.raises(OperationOutcome, match="not a FHIR date"):
        lenient.resources("Observation").search(date="yesterday").fetch()
    invalid = lenient.resource("Observation", status="final", subject={"reference": "Patient/p1"})  # no code
    with pytest.raises(OperationOutcome, match="Observation.code"):
        invalid.save()
    status = [status for _, status, _ in responses.seen]
    assert 400 in status and 422 in status


# -------------------------------------------------------------------------------------- fhirclient

def _smart(server: FhirHTTPServer, responses: Responses, headers: dict[str, str] | None = None) -> Any:
    smart = fhirclient_client.FHIRClient(settings={"app_id": "agentgym-tests", "api_base": server.url + "/"})
    smart.server.session.hooks["response"].append(responses.hook)
    smart.server.session.headers.update(headers or {})
    return smart


def test_fhirclient_search_pages_counts_and_includes(server: FhirHTTPServer, responses: Responses) -> None:
    smart = _smart(server, responses)
    search = SmartObservation.where(struct={"code": "2823-3", "_count": "2", "_sort": "date"})
    pages = list(search.perform_iter(smart.server))
    assert [len(page.entry) for page in pages] == [2, 2] and pages[0].total == 4
    assert [r.id for r in search.perform_resources_iter(smart.server)] == ["k2020", "k2021", "kp2", "k2022"]
    counted = SmartObservation.where(struct={"code": "2823-3", "_summary": "count"}).perform_iter(smart.server)
    assert next(counted).total == 4
    included = SmartObservation.where(struct={"_id": "a1c"}).include("subject")
    bundle = next(included.perform_iter(smart.server))
    assert [(e.resource.resource_type, e.search.mode) for e in bundle.entry] == [("Observation", "match"),
                                                                                 ("Patient", "include")]
    reverse = SmartPatient.where(struct={"_id": "p2"}).include("subject", SmartObservation, reverse=True)
    bundle = next(reverse.perform_iter(smart.server))
    assert sorted(e.resource.id for e in bundle.entry if e.search.mode == "include") == ["hr", "kp2"]
    by_name = SmartPatient.where(struct={"name": "müller"}).perform_resources_iter(smart.server)
    assert [p.id for p in by_name] == ["p2"]


def test_fhirclient_read_create_update(server: FhirHTTPServer, responses: Responses, known: FhirStore) -> None:
    smart = _smart(server, responses)
    patient = SmartPatient.read("p1", smart.server)
    assert patient.name[0].family == "Smith" and patient.birthDate.isostring == "1960-05-01"
    observation = SmartObservation({"resourceType": "Observation", "status": "final", "code": {"text": "note"},
                                    "subject": {"reference": "Patient/p1"}})
    stored = observation.create(smart.server)
    assert stored["meta"]["versionId"] == "1"
    observation = SmartObservation.read(stored["id"], smart.server)
    observation.status = "amended"
    updated = observation.update(smart.server)
    assert updated["meta"]["versionId"] == "2" and known.read("Observation", stored["id"])["status"] == "amended"
    capabilities = smart.server.request_json("metadata")
    assert capabilities["fhirVersion"] == "4.0.1"


def test_fhirclient_sees_the_errors(server: FhirHTTPServer, responses: Responses) -> None:
    from fhirclient.server import FHIRNotFoundException
    from requests import HTTPError

    smart = _smart(server, responses)
    with pytest.raises(FHIRNotFoundException):
        SmartPatient.read("nobody", smart.server)
    # lenient by default: the unknown parameter is ignored and the outcome entry says so
    found = list(SmartPatient.where(struct={"colour": "red"}).perform_resources_iter(smart.server))
    assert sorted(r.id for r in found if r.resource_type == "Patient") == ["p1", "p2", "p3"]
    outcome = next(r for r in found if r.resource_type == "OperationOutcome")
    assert "ignored colour" in outcome.issue[0].diagnostics
    strict = _smart(server, responses, STRICT)
    with pytest.raises(HTTPError) as refused:
        SmartBundle.read_from("Patient?colour=red", strict.server)
    assert refused.value.response.status_code == 400
    assert "colour" in refused.value.response.json()["issue"][0]["diagnostics"]
    invalid = SmartObservation({"resourceType": "Observation", "status": "final", "code": {"text": "x"},
                                "subject": {"reference": "Patient/p1"}})
    invalid.status = "not-a-status"
    with pytest.raises(HTTPError) as rejected:
        invalid.create(smart.server)
    assert rejected.value.response.status_code == 422
    assert "status" in rejected.value.response.json()["issue"][0]["diagnostics"]
