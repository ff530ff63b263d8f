"""The real HTTP server on a local port, with the FHIR client (and raw HTTP) against it."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from agentgym_fhir.client import FhirClient
from agentgym_fhir.errors import FhirError
from agentgym_fhir.server import FhirHTTPServer, make_server
from agentgym_fhir.store import FhirStore

STRICT = {"Prefer": "handling=strict"}


def _raw(url: str, method: str = "GET", body: bytes | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=body, method=method,
                                     headers={"Content-Type": "application/fhir+json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_metadata_read_and_search(server: FhirHTTPServer) -> None:
    client = FhirClient(server.url)
    capabilities = client.capabilities()
    assert capabilities["resourceType"] == "CapabilityStatement" and capabilities["fhirVersion"] == "4.0.1"
    observation = next(r for r in capabilities["rest"][0]["resource"] if r["type"] == "Observation")
    assert {"name": "code", "type": "token"} in observation["searchParam"]
    assert client.read("Patient", "p1")["name"][0]["family"] == "Smith"
    result = client.search("Observation", {"patient": "p1", "code": "http://loinc.org|2823-3",
                                           "date": ["ge2021", "le2022-12-31"]})
    assert sorted(e["id"] for e in result.entries) == ["k2021", "k2022"] and result.total == 2


def test_paging_follows_next_links(server: FhirHTTPServer) -> None:
    status, bundle = _raw(f"{server.url}/Observation?code=2823-3&_count=3&_sort=date")
    assert status == 200 and bundle["type"] == "searchset" and bundle["total"] == 4
    next_url = next(link["url"] for link in bundle["link"] if link["relation"] == "next")
    assert next_url.startswith(server.url + "/Observation?") and "_offset=3" in next_url
    status, page2 = _raw(next_url)
    assert [e["resource"]["id"] for e in page2["entry"]] == ["k2022"]
    assert not any(link["relation"] == "next" for link in page2["link"])
    client = FhirClient(server.url)
    assert [r["id"] for r in client.search_all("Observation", {"code": "2823-3", "_count": "1", "_sort": "date"})] \
        == ["k2020", "k2021", "kp2", "k2022"]


def test_include_over_http(server: FhirHTTPServer) -> None:
    result = FhirClient(server.url).search("Observation", {"_id": "a1c", "_include": "Observation:patient"})
    assert [r["id"] for r in result.entries] == ["a1c"] and [r["id"] for r in result.included] == ["p1"]


def test_create_and_update(server: FhirHTTPServer, known: FhirStore) -> None:
    client = FhirClient(server.url)
    created = client.create_resource({"resourceType": "Observation", "status": "final", "code": {"text": "note"},
                                      "subject": {"reference": "Patient/p2"}})
    assert created["id"] and created["meta"]["versionId"] == "1"
    assert known.read("Observation", created["id"])["code"]["text"] == "note"
    updated = client.update_resource({**created, "status": "amended"})
    assert updated["meta"]["versionId"] == "2" and client.read("Observation", created["id"])["status"] == "amended"
    status, body = _raw(f"{server.url}/Observation", "POST", json.dumps(
        {"resourceType": "Observation", "status": "final", "code": {"text": "x"}}).encode())
    assert status == 201 and body["resourceType"] == "Observation"


def test_errors_are_operation_outcomes_with_status(server: FhirHTTPServer) -> None:
    cases = [
        (f"{server.url}/Observation?date=yesterday", "GET", None, 400, "not a FHIR date"),
        (f"{server.url}/Patient/nobody", "GET", None, 404, "not found"),
        (f"{server.url}/nothing-here", "GET", None, 404, "no such endpoint"),
        (f"{server.url}/Patient/p1", "DELETE", None, 405, "not supported"),
        (f"{server.url}/Observation", "POST", b"{not json", 400, "not valid JSON"),
        (f"{server.url}/Observation", "POST", json.dumps({"resourceType": "Observation", "status": "final"}).encode(),
         422, "Observation.code"),
        (f"{server.url}/Patient", "POST", json.dumps({"resourceType": "Observation"}).encode(), 400, "does not match"),
    ]
    for url, method, body, status, fragment in cases:
        got_status, outcome = _raw(url, method, body, STRICT)
        assert got_status == status, (url, outcome)
        assert outcome["resourceType"] == "OperationOutcome" and fragment in outcome["issue"][0]["diagnostics"]


def test_count_cap_is_said_in_the_bundle(server: FhirHTTPServer) -> None:
    status, bundle = _raw(f"{server.url}/Observation?_count=1000000000")
    assert status == 200
    outcome = [e for e in bundle["entry"] if e["search"]["mode"] == "outcome"]
    assert outcome and "limit" in outcome[0]["resource"]["issue"][0]["diagnostics"]


def test_unknown_parameters_are_ignored_unless_the_client_asks_for_strict(server: FhirHTTPServer) -> None:
    # FHIR's search page: a server SHOULD ignore parameters it does not know or support, leave them out of the
    # self link, and refuse them only under Prefer: handling=strict. fhirpy's count() relies on it.
    query = "Observation?code=2823-3&_totalMethod=count&colour=red&code:below=x&subject.name=Smith&_count=2"
    status, bundle = _raw(f"{server.url}/{query}")
    assert status == 200 and bundle["total"] == 4
    self_url = next(link["url"] for link in bundle["link"] if link["relation"] == "self")
    assert "code=2823-3" in self_url and "_count=2" in self_url
    for dropped in ("_totalMethod", "colour", "below", "subject.name"):
        assert dropped not in self_url
    next_url = next(link["url"] for link in bundle["link"] if link["relation"] == "next")
    assert "colour" not in next_url and "code=2823-3" in next_url
    outcome = [e["resource"] for e in bundle["entry"] if e["search"]["mode"] == "outcome"]
    said = " ".join(issue["diagnostics"] for issue in outcome[0]["issue"])
    assert all(f"ignored {name}" in said for name in ("_totalMethod", "colour", "code:below", "subject.name"))
    for header in ("handling=strict", "return=minimal, handling=strict", 'respond-async; handling="strict"'):
        status, refused = _raw(f"{server.url}/{query}", headers={"Prefer": header})
        assert status == 400 and refused["resourceType"] == "OperationOutcome", header
        assert "unknown search parameter '_totalMethod'" in refused["issue"][0]["diagnostics"]
    status, lenient = _raw(f"{server.url}/{query}", headers={"Prefer": "handling=lenient"})
    assert status == 200 and lenient["total"] == 4
    # A bad value of a known parameter is an error in both modes; so is an unknown sort or include.
    for bad in ("date=yesterday", "_count=many", "_sort=colour", "_include=Observation:colour", "value-quantity=abc"):
        for headers in ({}, STRICT):
            status, outcome = _raw(f"{server.url}/Observation?{bad}", headers=headers)
            assert status == 400 and outcome["resourceType"] == "OperationOutcome", (bad, headers)


def test_strict_by_default_when_the_server_is_made_so(known: FhirStore) -> None:
    http = make_server(known, "127.0.0.1", 0, handling="strict")
    http.start_background()
    try:
        assert _raw(f"{http.url}/Patient?colour=red")[0] == 400
        assert _raw(f"{http.url}/Patient?colour=red", headers={"Prefer": "handling=lenient"})[0] == 200
    finally:
        http.shutdown()
        http.server_close()
    with pytest.raises(ValueError, match="handling"):
        make_server(known, "127.0.0.1", 0, handling="loose")


def test_store_search_stays_strict_unless_asked(known: FhirStore) -> None:
    with pytest.raises(FhirError, match="unknown search parameter 'colour'"):
        known.search("Observation", {"colour": "red"})
    result = known.search("Observation", {"colour": "red", "code": "2823-3"}, strict=False)
    assert result.total == 4 and result.ignored == ["colour"]
    with known.episode() as episode:
        with pytest.raises(FhirError):
            episode.search("Observation", {"code:below": "x"})
        assert episode.search("Observation", {"code:below": "x"}, strict=False).total == 6


def test_conditional_create_and_update(server: FhirHTTPServer, known: FhirStore) -> None:
    patient = {"resourceType": "Patient", "identifier": [{"system": "urn:mrn", "value": "MRN009"}],
               "name": [{"family": "Novak"}]}
    body = json.dumps(patient).encode()
    status, created = _raw(f"{server.url}/Patient", "POST", body, {"If-None-Exist": "identifier=urn:mrn|MRN009"})
    assert status == 201 and created["name"][0]["family"] == "Novak"
    status, again = _raw(f"{server.url}/Patient", "POST", body, {"If-None-Exist": "identifier=urn:mrn|MRN009"})
    assert status == 200 and again["id"] == created["id"] and known.count("Patient") == 4
    # MRN001 is held by p1 (urn:mrn) and p3 (urn:other): a condition matching both is refused.
    status, outcome = _raw(f"{server.url}/Patient?identifier=MRN001", "POST", body)
    assert status == 412 and "more than one" in outcome["issue"][0]["diagnostics"]
    renamed = json.dumps({**patient, "name": [{"family": "Novakova"}]}).encode()
    status, updated = _raw(f"{server.url}/Patient?identifier=urn:mrn|MRN009", "PUT", renamed)
    assert status == 200 and updated["id"] == created["id"] and updated["meta"]["versionId"] == "2"
    status, fresh = _raw(f"{server.url}/Patient?identifier=urn:mrn|MRN010", "PUT", renamed)
    assert status == 201 and fresh["id"] != created["id"]
    assert _raw(f"{server.url}/Patient?identifier=MRN001", "PUT", renamed)[0] == 412
    # criteria are read strictly: ignoring a typo would write to the wrong patient
    status, outcome = _raw(f"{server.url}/Patient?identifer=urn:mrn|MRN009", "PUT", renamed)
    assert status == 400 and "identifer" in outcome["issue"][0]["diagnostics"]
    status, outcome = _raw(f"{server.url}/Patient/{created['id']}", "PUT", renamed, {"If-Match": 'W/"1"'})
    assert status == 412 and "current version 2" in outcome["issue"][0]["diagnostics"]
    status, third = _raw(f"{server.url}/Patient/{created['id']}", "PUT", renamed, {"If-Match": 'W/"2"'})
    assert status == 200 and third["meta"]["versionId"] == "3"


def test_client_raises_fhir_errors(server: FhirHTTPServer) -> None:
    client = FhirClient(server.url, headers=STRICT)
    with pytest.raises(FhirError) as caught:
        client.search("Observation", {"colour": "red"})
    assert caught.value.status == 400 and "colour" in caught.value.message
    with pytest.raises(FhirError) as missing:
        client.read("Patient", "nobody")
    assert missing.value.status == 404
    with pytest.raises(FhirError, match="cannot reach"):
        FhirClient("http://127.0.0.1:1/fhir", timeout=2).read("Patient", "p1")


def test_ephemeral_server_keeps_the_file(known: FhirStore, tmp_path: Path) -> None:
    with known.episode() as episode:
        http = make_server(episode, "127.0.0.1", 0, base_path="/")
        http.start_background()
        try:
            client = FhirClient(http.url)
            created = client.create_resource({"resourceType": "Observation", "status": "final", "code": {"text": "n"}})
            assert client.read("Observation", created["id"])
        finally:
            http.shutdown()
            http.server_close()
    with pytest.raises(FhirError):
        known.read("Observation", created["id"])


def _raw_bytes(server: FhirHTTPServer, request: bytes) -> tuple[int, dict]:
    """Send `request` as typed on the wire (what urllib would refuse to send), read the status and JSON body."""
    import socket

    host, port = server.server_address[:2]
    with socket.create_connection((str(host), port), timeout=10) as connection:
        connection.sendall(request)
        data = b""
        while chunk := connection.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"application/fhir+json" in head, head
    return int(head.split()[1]), json.loads(body)


def test_an_unknown_resource_type_is_a_404_naming_it_for_every_interaction(server: FhirHTTPServer) -> None:
    patient = json.dumps({"resourceType": "Patinet"}).encode()
    for url, method, body in ((f"{server.url}/Patinet?name=x", "GET", None), (f"{server.url}/Patinet/p1", "GET", None),
                              (f"{server.url}/Patinet", "POST", patient), (f"{server.url}/Patinet/p1", "PUT", patient),
                              (f"{server.url}/Patinet/_search", "POST", b"name=x")):
        status, outcome = _raw(url, method, body)
        assert status == 404, (url, method, outcome)
        diagnostics = outcome["issue"][0]["diagnostics"]
        assert outcome["issue"][0]["code"] == "not-supported" and "'Patinet' is not a FHIR R4 resource type" in diagnostics
        assert "did you mean 'Patient'?" in diagnostics
    status, outcome = _raw(f"{server.url}/Coding?code=x")  # a data type, not a resource
    assert status == 404 and "'Coding' is not a FHIR R4 resource type" in outcome["issue"][0]["diagnostics"]
    status, bundle = _raw(f"{server.url}/Patient?name=Smith")  # the real type still searches
    assert status == 200 and bundle["resourceType"] == "Bundle"


def test_every_error_a_client_can_hit_is_an_operation_outcome(server: FhirHTTPServer) -> None:
    observation = json.dumps({"resourceType": "Observation", "status": "final"}).encode()
    cases = [
        (f"{server.url}/Observation", "POST", b'{"resourceType": "\xff"}', {}, 400, "not UTF-8 JSON"),
        (f"{server.url}/Observation", "POST", b"<Observation/>", {"Content-Type": "application/fhir+xml"}, 415,
         "FHIR JSON only"),
        (f"{server.url}/Patient/p1", "PUT", b"[1, 2]", {}, 400, "must be a FHIR resource"),
        (f"{server.url}/Observation?_count=many", "GET", None, {}, 400, "_count must be a whole number"),
        (f"{server.url}/Observation/k2020/_history/1", "GET", None, {}, 405, "not supported"),
        (f"{server.url}/Observation/k2020", "PATCH", observation, {}, 405, "not supported"),
        (f"{server.url}/Observation", "OPTIONS", None, {}, 405, "this server does read, search, create and update"),
    ]
    for url, method, body, headers, status, fragment in cases:
        got_status, outcome = _raw(url, method, body, headers)
        assert got_status == status, (url, method, outcome)
        assert outcome["resourceType"] == "OperationOutcome" and fragment in outcome["issue"][0]["diagnostics"], \
            (url, method, outcome)
    # What urllib would never send: a broken Content-Length and a malformed request line.
    status, outcome = _raw_bytes(server, b"POST /fhir/Observation HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n"
                                         b"Connection: close\r\n\r\n{}")
    assert status == 400 and "Content-Length 'ten' is not a byte count" in outcome["issue"][0]["diagnostics"]
    status, outcome = _raw_bytes(server, b"GET /fhir/Patient HTTP/1.1 extra\r\nConnection: close\r\n\r\n")
    assert status == 400 and outcome["resourceType"] == "OperationOutcome"


def test_sixty_four_clients_connecting_at_once_are_all_answered(server: FhirHTTPServer) -> None:
    """The listen backlog holds a burst of connections (a backlog of 5 reset some of 64); bench/fhir_server.py
    measures the keep-alive latency that TCP_NODELAY fixed."""
    import threading

    answered: list[int] = []

    def read() -> None:
        try:
            with urllib.request.urlopen(f"{server.url}/Patient/p1", timeout=60) as response:
                answered.append(response.status)
        except OSError:
            answered.append(-1)

    threads = [threading.Thread(target=read) for _ in range(64)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answered == [200] * 64
