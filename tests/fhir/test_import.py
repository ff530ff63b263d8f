"""Importing FHIR data users bring: the Synthea samples, NDJSON, folders, gzip, and every kind of bad
input (named by source, resource, path and reason; the valid rest imported; nothing half-written)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from agentgym_fhir.data.importers import import_files
from agentgym_fhir.errors import FhirError
from agentgym_fhir.store import FhirStore

SAMPLES = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "samples" / "synthea"


def _patient(pid: str, family: str = "Doe") -> dict:
    return {"resourceType": "Patient", "id": pid, "name": [{"family": family, "given": ["Jo"]}], "gender": "other"}


def _observation(subject: str, value: object = 4.1, oid: str | None = None) -> dict:
    resource = {"resourceType": "Observation", "status": "final",
                "code": {"coding": [{"system": "http://loinc.org", "code": "2823-3"}]},
                "subject": {"reference": subject}, "effectiveDateTime": "2023-01-02T03:04:05Z",
                "valueQuantity": {"value": value, "unit": "mmol/L"}}
    if oid:
        resource["id"] = oid
    return resource


@pytest.mark.skipif(not SAMPLES.is_dir(), reason=f"Synthea samples not found at {SAMPLES}")
def test_import_synthea_samples(tmp_path: Path) -> None:
    store = FhirStore.create(tmp_path / "synthea.sqlite")
    report = import_files(store, [SAMPLES])
    assert report.files == 3 and report.errors == [] and report.imported == report.read > 600
    assert store.count("Patient") == 3
    for patient in store.iter_resources("Patient"):
        observations = store.search("Observation", {"patient": patient["id"], "_summary": "count"}).total
        assert observations and observations > 50
    # urn:uuid references became Type/id and resolve.
    encounter_ref = store.search("Observation", {"_count": "1"}).entries[0]["encounter"]["reference"]
    assert encounter_ref.startswith("Encounter/")
    store.read("Encounter", encounter_ref.split("/")[1])
    caridad = store.search("Patient", {"name": "caridad"}).entries
    assert len(caridad) == 1
    body_height = store.search("Observation", {"patient": caridad[0]["id"], "code": "http://loinc.org|8302-2",
                                               "_sort": "-date", "_count": "1"})
    assert body_height.entries[0]["valueQuantity"]["unit"] == "cm"


def test_collection_bundle_ndjson_gzip_and_folder(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    (folder / "nested").mkdir(parents=True)
    bundle = {"resourceType": "Bundle", "type": "collection", "entry": [
        {"fullUrl": "http://example.org/fhir/Patient/a", "resource": _patient("a")},
        {"fullUrl": "urn:uuid:11111111-1111-4111-8111-111111111111", "resource": _observation("http://example.org/fhir/Patient/a")},
    ]}
    (folder / "bundle.json.gz").write_bytes(gzip.compress(json.dumps(bundle).encode()))
    lines = [json.dumps(_patient("b", "Roe")), json.dumps(_observation("Patient/b", 3.2, "ob"))]
    (folder / "nested" / "export.ndjson").write_text("\n".join(lines) + "\n")
    (folder / "notes.txt").write_text("ignored")
    store = FhirStore.create(tmp_path / "s.sqlite")
    report = import_files(store, [folder])
    assert report.files == 2 and report.imported == 4 and report.issues == []
    assert store.read("Observation", "11111111-1111-4111-8111-111111111111")["subject"] == {"reference": "Patient/a"}
    assert store.search("Observation", {"patient": "b", "value-quantity": "lt3.5"}).total == 1


def test_transaction_bundle_with_conditional_reference(tmp_path: Path) -> None:
    bundle = {"resourceType": "Bundle", "type": "transaction", "entry": [
        {"fullUrl": "urn:uuid:22222222-2222-4222-8222-222222222222",
         "resource": {"resourceType": "Organization", "name": "Clinic",
                      "identifier": [{"system": "urn:org", "value": "42"}]},
         "request": {"method": "POST", "url": "Organization"}},
        {"fullUrl": "urn:uuid:33333333-3333-4333-8333-333333333333",
         "resource": {**_patient("ignored"), "managingOrganization": {"reference": "Organization?identifier=urn:org|42"}},
         "request": {"method": "PUT", "url": "Patient/ignored"}},
    ]}
    path = tmp_path / "tx.json"
    path.write_text(json.dumps(bundle))
    store = FhirStore.create(tmp_path / "s.sqlite")
    report = import_files(store, path)
    assert report.imported == 2 and report.issues == []
    patient = store.read("Patient", "ignored")
    assert patient["managingOrganization"]["reference"] == "Organization/22222222-2222-4222-8222-222222222222"


def test_bad_input_is_reported_and_the_rest_imported(tmp_path: Path) -> None:
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "broken.json").write_text('{"resourceType": "Bundle", "entry": [')
    lines = [
        json.dumps(_patient("ok")),
        '{"resourceType": "Patient", "id": "half"',                              # malformed JSON
        json.dumps(_observation("Patient/ok", "four point one", "bad-value")),   # fails validation
        json.dumps(_observation("Patient/ghost", 4.0, "dangling")),              # dangling reference
        json.dumps(_patient("ok", "Again")),                                     # duplicate id
        json.dumps({"hello": "world"}),                                          # not a resource
    ]
    (folder / "Mixed.ndjson").write_text("\n".join(lines))
    store = FhirStore.create(tmp_path / "s.sqlite")
    report = import_files(store, [folder])
    assert report.imported == 2 and store.count() == 2
    messages = [str(i) for i in report.issues]
    assert any("broken.json" in m and "malformed JSON" in m for m in messages)
    assert any("Mixed.ndjson:2" in m and "malformed JSON" in m for m in messages)
    invalid = next(i for i in report.errors if i.resource == "Observation/bad-value")
    assert invalid.source.endswith("Mixed.ndjson:3") and "valueQuantity.value" in (invalid.path or "")
    dangling = next(i for i in report.warnings if i.resource == "Observation/dangling")
    assert dangling.path == "Observation.subject.reference" and "Patient/ghost" in dangling.reason
    duplicate = next(i for i in report.errors if "duplicate" in i.reason)
    assert duplicate.resource == "Patient/ok" and duplicate.source.endswith(":5")
    assert any("no resourceType" in i.reason for i in report.errors)
    assert store.read("Patient", "ok")["name"][0]["family"] == "Doe"


def test_import_is_one_transaction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "x.ndjson"
    path.write_text("\n".join(json.dumps(_patient(f"p{i}")) for i in range(50)))
    store = FhirStore.create(tmp_path / "s.sqlite")
    from agentgym_fhir import store as store_module

    original = store_module._Writer.put_prepared
    calls = {"n": 0}

    def failing(self: object, prepared: object) -> None:
        calls["n"] += 1
        if calls["n"] == 40:
            raise OSError("disk full (simulated)")
        original(self, prepared)  # type: ignore[arg-type]

    # A real disk-full cannot be produced portably in a test, so the writer is made to fail mid-import.
    monkeypatch.setattr(store_module._Writer, "put_prepared", failing)
    with pytest.raises(OSError):
        import_files(store, path)
    monkeypatch.undo()
    assert store.count() == 0
    assert import_files(store, path).imported == 50 and store.count() == 50


def test_large_bundle(tmp_path: Path) -> None:
    entries = [{"fullUrl": "urn:uuid:00000000-0000-4000-8000-000000000000", "resource": _patient("big")}]
    entries += [{"resource": _observation("urn:uuid:00000000-0000-4000-8000-000000000000", 4.0 + i % 10 / 10)}
                for i in range(20_000)]
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"resourceType": "Bundle", "type": "collection", "entry": entries}))
    store = FhirStore.create(tmp_path / "s.sqlite")
    report = import_files(store, path, validate=False)
    assert report.imported == 20_001 and report.issues == []
    assert store.search("Observation", {"patient": "big", "_summary": "count"}).total == 20_000


def test_missing_source_is_a_clear_error(tmp_path: Path) -> None:
    store = FhirStore.create(tmp_path / "s.sqlite")
    with pytest.raises(FhirError, match="does not exist"):
        import_files(store, tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FhirError, match="no .json"):
        import_files(store, tmp_path / "empty")


def test_references_to_resources_already_in_the_store(tmp_path: Path) -> None:
    store = FhirStore.create(tmp_path / "s.sqlite")
    first = tmp_path / "Patient.ndjson"
    first.write_text(json.dumps(_patient("known")))
    assert import_files(store, first).imported == 1
    second = tmp_path / "Observation.ndjson"
    second.write_text(json.dumps(_observation("https://ehr.example.org/fhir/Patient/known", 4.4, "o1")))
    report = import_files(store, second)
    assert report.issues == [] and report.imported == 1
    assert store.read("Observation", "o1")["subject"] == {"reference": "Patient/known"}
    assert store.count("Patient") == 1


# ------------------------------------------------------------------ what real public files look like

NPI = "http://hl7.org/fhir/sid/us-npi"


def _practitioner_batch(run: str, npi: str = "9999941199") -> dict:
    """A Synthea v3 practitionerInformation file: a batch of conditional creates (ifNoneExist)."""
    return {"resourceType": "Bundle", "type": "batch", "entry": [{
        "fullUrl": f"urn:uuid:{uuid_for(run)}",
        "resource": {"resourceType": "Practitioner", "id": uuid_for(run), "active": True,
                     "identifier": [{"system": NPI, "value": npi}], "name": [{"family": "Grey", "prefix": ["Dr."]}]},
        "request": {"method": "POST", "url": "Practitioner", "ifNoneExist": f"identifier={NPI}|{npi}"}}]}


def uuid_for(text: str) -> str:
    import uuid

    return str(uuid.uuid5(uuid.NAMESPACE_URL, text))


def test_synthea_v3_conditional_references_and_if_none_exist(tmp_path: Path) -> None:
    folder = tmp_path / "fhir"
    folder.mkdir()
    # two simulation runs each wrote the same practitioner under a different uuid
    (folder / "practitionerInformation1.json").write_text(json.dumps(_practitioner_batch("run-1")))
    (folder / "practitionerInformation2.json").write_text(json.dumps(_practitioner_batch("run-2")))
    encounter = {"resourceType": "Encounter", "status": "finished",
                 "class": {"system": "http://terminology.hl7.org/CodeSystem/v3-ActCode", "code": "AMB"},
                 "subject": {"reference": "urn:uuid:44444444-4444-4444-8444-444444444444"},
                 "participant": [{"individual": {"reference": f"Practitioner?identifier={NPI}|9999941199"}}],
                 "serviceProvider": {"reference": "Organization?identifier=https%3A%2F%2Fgithub.com%2Fsynthetichealth"
                                                  "%2Fsynthea%7Corg-1"}}
    patient_bundle = {"resourceType": "Bundle", "type": "transaction", "entry": [
        {"fullUrl": "urn:uuid:44444444-4444-4444-8444-444444444444", "resource": _patient("44444444-4444-4444-8444-444444444444"),
         "request": {"method": "POST", "url": "Patient"}},
        {"fullUrl": "urn:uuid:55555555-5555-4555-8555-555555555555", "resource": encounter,
         "request": {"method": "POST", "url": "Encounter"}},
        {"resource": {"resourceType": "Organization", "name": "Clinic",
                      "identifier": [{"system": "https://github.com/synthetichealth/synthea", "value": "org-1"}]},
         "request": {"method": "PUT", "url": "Organization?identifier=https://github.com/synthetichealth/synthea|org-1"}},
    ]}
    (folder / "Ana_Diaz.json").write_text(json.dumps(patient_bundle))
    store = FhirStore.create(tmp_path / "s.sqlite")
    report = import_files(store, [folder])
    assert report.errors == [] and store.count("Practitioner") == 1
    assert list(report.by_reason()) == ["already-present (warning)"]
    assert report.by_reason()["already-present (warning)"]["count"] == 1
    stored = store.read("Encounter", "55555555-5555-4555-8555-555555555555")
    practitioner = store.search("Practitioner", {"identifier": f"{NPI}|9999941199"}).entries[0]
    assert stored["participant"][0]["individual"]["reference"] == f"Practitioner/{practitioner['id']}"
    organization = store.search("Organization", {"name": "Clinic"}).entries[0]
    assert organization["id"] != "Organization"  # a conditional PUT's url names no id
    assert stored["serviceProvider"]["reference"] == f"Organization/{organization['id']}"
    assert store.search("Encounter", {"practitioner": practitioner["id"]}).total == 1
    # a later import finds the practitioner in the store: skipped again, not duplicated
    third = tmp_path / "practitionerInformation3.json"
    third.write_text(json.dumps(_practitioner_batch("run-3")))
    again = import_files(store, third)
    assert again.imported == 0 and again.warnings[0].kind == "already-present" and store.count("Practitioner") == 1


def test_encodings_blank_lines_and_unicode_line_breaks(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "bom.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(_patient("bom", "Bom")).encode())
    (folder / "utf16.json").write_bytes(json.dumps(_patient("wide", "Wide")).encode("utf-16"))
    # U+2028 is legal inside a JSON string; a splitlines() reader would cut this line in two
    odd = json.dumps(_patient("sep", "Line\u2028Separator"), ensure_ascii=False)
    latin1 = json.dumps(_patient("latin", "Mu\u00f1oz"), ensure_ascii=False).encode("latin-1")
    ndjson = (b"\xef\xbb\xbf" + json.dumps(_patient("first")).encode() + b"  \r\n\r\n   \n"
              + odd.encode() + b"\n" + latin1 + b"\n" + json.dumps(_patient("last")).encode() + b"\t\n\n")
    (folder / "Patient.ndjson").write_bytes(ndjson)
    (folder / "Patient16.ndjson").write_bytes((json.dumps(_patient("w1")) + "\n" + json.dumps(_patient("w2"))
                                               ).encode("utf-16"))
    store = FhirStore.create(tmp_path / "s.sqlite")
    report = import_files(store, [folder])
    assert sorted(r["id"] for r in store.iter_resources("Patient")) == ["bom", "first", "last", "sep", "w1", "w2",
                                                                      "wide"]
    assert store.read("Patient", "sep")["name"][0]["family"] == "Line\u2028Separator"
    (issue,) = report.errors
    assert issue.kind == "not-utf8" and issue.source.endswith("Patient.ndjson:5")


def test_unknown_types_contained_resources_and_unsupported_entries(tmp_path: Path) -> None:
    contained_claim = {
        "resourceType": "MedicationRequest", "id": "mr1", "status": "active", "intent": "order",
        "contained": [{"resourceType": "Medication", "id": "med",
                       "manufacturer": {"reference": "urn:uuid:66666666-6666-4666-8666-666666666666"}}],
        "medicationReference": {"reference": "#med"}, "subject": {"reference": "Patient/p"},
        "reasonReference": [{"reference": "#missing"}]}
    bundle = {"resourceType": "Bundle", "type": "transaction", "entry": [
        {"resource": _patient("p"), "request": {"method": "PUT", "url": "Patient/p"}},
        {"fullUrl": "urn:uuid:66666666-6666-4666-8666-666666666666",
         "resource": {"resourceType": "Organization", "name": "Maker"}},
        {"resource": contained_claim},
        {"resource": {"resourceType": "Parameters", "parameter": []}, "request": {"method": "PATCH", "url": "Patient/p"}},
        {"resource": {"resourceType": "Patient"}, "request": {"method": "GET", "url": "Patient/p"}},
        {"resource": {"resourceType": "ActorDefinition", "status": "active"}},  # R5 only
        {"resource": {"resourceType": "Spaceship", "id": "x"}},
    ]}
    path = tmp_path / "bundle.json.gz"
    path.write_bytes(gzip.compress(json.dumps(bundle).encode()))
    truncated = tmp_path / "cut.ndjson.gz"
    truncated.write_bytes(gzip.compress(b"\n".join(json.dumps(_patient(f"c{i}")).encode() for i in range(200)))[:300])
    array = tmp_path / "array.json"
    array.write_text(json.dumps([_patient("a1"), _patient("a2"), 7]))
    store = FhirStore.create(tmp_path / "s.sqlite")
    report = import_files(store, [path, truncated, array])
    reasons = report.by_reason()
    assert reasons["unknown-resource-type"]["count"] == 2
    assert reasons["unsupported-bundle-entry"]["count"] == 2
    assert reasons["unreadable-file"]["count"] == 1 and reasons["not-a-resource"]["count"] == 1
    assert reasons["missing-contained-resource (warning)"]["count"] == 1
    assert "#missing" in reasons["missing-contained-resource (warning)"]["examples"][0]
    assert "unresolved-reference (warning)" not in reasons
    medication = store.read("MedicationRequest", "mr1")["contained"][0]
    assert medication["manufacturer"]["reference"] == "Organization/66666666-6666-4666-8666-666666666666"
    assert {r["id"] for r in store.iter_resources("Patient")} >= {"p", "a1", "a2"}
    assert "by reason: unknown-resource-type 2" in report.summary()
    assert report.to_dict()["by_reason"] == reasons


def test_reasons_are_counted_with_a_few_examples(tmp_path: Path) -> None:
    path = tmp_path / "Observation.ndjson"
    path.write_text("\n".join(["{broken"] * 50 + [json.dumps(_observation("Patient/nobody", 4.0, f"o{i}"))
                                                   for i in range(5)]))
    store = FhirStore.create(tmp_path / "s.sqlite")
    report = import_files(store, path)
    malformed = report.by_reason()["malformed-json"]
    assert malformed == {"severity": "error", "count": 50, "examples": malformed["examples"]}
    assert len(malformed["examples"]) == 3 and "Observation.ndjson:1" in malformed["examples"][0]
    assert report.by_reason()["unresolved-reference (warning)"]["count"] == 5 and report.imported == 5


def test_unvalidated_import_of_odd_shapes_does_not_crash(tmp_path: Path) -> None:
    path = tmp_path / "odd.ndjson"
    lines = [{"resourceType": "Patient", "id": "m", "meta": "not an object"},
             {"resourceType": "Observation", "id": "d", "effectivePeriod": {"start": 20200101}},
             {"resourceType": "Spaceship", "id": "s", "identifier": "not a list"}]
    path.write_text("\n".join(json.dumps(line) for line in lines))
    store = FhirStore.create(tmp_path / "s.sqlite")
    report = import_files(store, path, validate=False)
    assert report.imported + len(report.errors) == 3
    assert store.read("Patient", "m")["meta"]["versionId"] == "1"
    assert all(issue.kind == "unindexable" for issue in report.errors)


@pytest.mark.skipif(not SAMPLES.is_dir(), reason=f"Synthea samples not found at {SAMPLES}")
def test_synthea_samples_import_without_any_issue(tmp_path: Path) -> None:
    store = FhirStore.create(tmp_path / "synthea.sqlite")
    report = import_files(store, [SAMPLES])
    assert report.by_reason() == {} and report.imported == report.read
    # contained resources (ExplanationOfBenefit's #referral, #coverage) are local references that resolve
    import re

    claims = [c for c in store.iter_resources("ExplanationOfBenefit") if c.get("contained")]
    assert claims
    for claim in claims:
        local = {f"#{c['id']}" for c in claim["contained"]}
        assert set(re.findall(r'"reference": "(#[^"]*)"', json.dumps(claim))) <= local
