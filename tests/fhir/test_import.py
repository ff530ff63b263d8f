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
