"""The synthetic population: deterministic to the byte, valid FHIR R4, large enough, and clinically
coherent (disease models drive the labs, vitals and medicines)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from agentgym_fhir.data import generate as generate_module
from agentgym_fhir.data.generate import ckd_epi_2021, creatinine_for_egfr, generate_resources, generate_store
from agentgym_fhir.store import FhirStore
from agentgym_fhir.vocab import CONDITIONS, DRUGS, MRN_SYSTEM
from fhir.resources.R4B import get_fhir_model_class


def _digest(resources: object) -> str:
    return hashlib.sha256("\n".join(json.dumps(r, separators=(",", ":")) for r in resources).encode()).hexdigest()


def test_same_seed_same_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = generate_store(tmp_path / "a.sqlite", 6, seed=7, workers=1)
    monkeypatch.setattr(generate_module, "_CHUNK", 1)  # small chunks, so that 6 patients use the pool
    second = generate_store(tmp_path / "b.sqlite", 6, seed=7, workers=2)  # parallelism does not matter
    other = generate_store(tmp_path / "c.sqlite", 6, seed=8, workers=1)
    for store in (first, second, other):
        store.close()
    assert (tmp_path / "a.sqlite").read_bytes() == (tmp_path / "b.sqlite").read_bytes()
    assert (tmp_path / "a.sqlite").read_bytes() != (tmp_path / "c.sqlite").read_bytes()
    assert _digest(generate_resources(3, seed=7)) == _digest(generate_resources(3, seed=7))


def test_every_resource_validates_against_fhir_r4(population: FhirStore) -> None:
    failures = []
    for resource in population.iter_resources():
        model = get_fhir_model_class(resource["resourceType"])
        try:
            model.model_validate(resource)
        except Exception as error:  # noqa: BLE001 (collected so one run reports every failure)
            failures.append(f"{resource['resourceType']}/{resource['id']}: {error}")
    assert failures == []


def test_population_size_and_shape(population: FhirStore) -> None:
    counts = population.type_counts()
    assert counts["Patient"] == 30
    assert sum(counts.values()) / 30 >= 100
    for required in ("Encounter", "Condition", "Observation", "MedicationRequest", "MedicationAdministration",
                     "Procedure", "AllergyIntolerance", "Immunization", "DiagnosticReport", "ServiceRequest"):
        assert counts.get(required, 0) > 0, required
    classes = {e["class"]["code"] for e in population.iter_resources("Encounter")}
    assert classes == {"AMB", "EMER", "IMP"}


def test_patients_have_mrn_name_birthdate(population: FhirStore) -> None:
    mrns = []
    for patient in population.iter_resources("Patient"):
        mrn = [i["value"] for i in patient["identifier"] if i["system"] == MRN_SYSTEM]
        assert len(mrn) == 1 and patient["identifier"][0]["type"]["coding"][0]["code"] == "MR"
        mrns.append(mrn[0])
        assert patient["name"][0]["family"] and patient["birthDate"] and patient["address"][0]["city"]
        found = population.search("Patient", {"identifier": f"{MRN_SYSTEM}|{mrn[0]}"})
        assert [p["id"] for p in found.entries] == [patient["id"]]
    assert len(set(mrns)) == 30


def _by_patient(store: FhirStore, resource_type: str) -> dict[str, list[dict]]:
    grouped: dict[str, list[dict]] = defaultdict(list)
    for resource in store.iter_resources(resource_type):
        reference = (resource.get("subject") or resource.get("patient"))["reference"]
        grouped[reference.split("/")[1]].append(resource)
    return grouped


def test_egfr_is_ckd_epi_2021_of_the_reported_creatinine(population: FhirStore) -> None:
    patients = {p["id"]: p for p in population.iter_resources("Patient")}
    checked = 0
    for report in population.search("DiagnosticReport", {"code": "51990-0,24323-8", "_count": "40"}).entries:
        results = {population.read("Observation", r["reference"].split("/")[1])["code"]["coding"][0]["code"]:
                   population.read("Observation", r["reference"].split("/")[1]) for r in report["result"]}
        patient = patients[report["subject"]["reference"].split("/")[1]]
        born = patient["birthDate"]
        when = report["effectiveDateTime"]
        age = (int(when[:4]) - int(born[:4])) - ((when[5:10]) < born[5:10])
        creatinine = results["2160-0"]["valueQuantity"]["value"]
        expected = ckd_epi_2021(creatinine, age, patient["gender"] == "female")
        assert abs(results["98979-8"]["valueQuantity"]["value"] - expected) <= 1.5
        checked += 1
    assert checked >= 10


def test_creatinine_inverse_round_trips() -> None:
    for egfr in (15, 29, 45, 60, 90, 110):
        for female in (True, False):
            creatinine = creatinine_for_egfr(egfr, 67, female)
            assert abs(ckd_epi_2021(creatinine, 67, female) - egfr) < 1.5


def test_disease_models_drive_the_record(population: FhirStore) -> None:
    conditions = _by_patient(population, "Condition")
    meds = _by_patient(population, "MedicationRequest")
    observations = _by_patient(population, "Observation")
    diabetes = CONDITIONS["diabetes"].snomed
    diabetics = [p for p, cs in conditions.items() if any(c["code"]["coding"][0]["code"] == diabetes for c in cs)]
    assert diabetics, "a 30-patient population should include diabetes"
    for patient in diabetics:
        drugs = {m["medicationCodeableConcept"]["coding"][0]["code"] for m in meds[patient]}
        assert DRUGS["metformin"].rxcui in drugs
    # results entered in error carry implausible values on purpose (the hard tier reads past them): not results
    a1c = {p: [o["valueQuantity"]["value"] for o in obs if o["code"]["coding"][0]["code"] == "4548-4"
               and o["status"] != "entered-in-error"]
           for p, obs in observations.items()}
    diabetic_values = [v for p in diabetics for v in a1c.get(p, [])]
    other_values = [v for p, vs in a1c.items() if p not in diabetics for v in vs]
    assert diabetic_values and min(diabetic_values) >= 5.6
    assert not other_values or max(other_values) < 6.5
    hypertension = CONDITIONS["hypertension"].snomed
    for patient, items in conditions.items():
        if any(c["code"]["coding"][0]["code"] == hypertension for c in items):
            drugs = {m["medicationCodeableConcept"]["coding"][0]["code"] for m in meds[patient]}
            assert drugs & {DRUGS[k].rxcui for k in ("lisinopril", "amlodipine")}


def test_observations_carry_units_ranges_and_interpretation(population: FhirStore) -> None:
    potassium = population.search("Observation", {"code": "http://loinc.org|2823-3", "_count": "50"}).entries
    assert potassium
    for observation in potassium:
        quantity = observation["valueQuantity"]
        assert quantity["unit"] == "mmol/L" and quantity["system"] == "http://unitsofmeasure.org"
        flag = observation["interpretation"][0]["coding"][0]["code"]
        value = quantity["value"]
        assert flag == ("L" if value < 3.5 else "H" if value > 5.1 else "N")
    pressure = population.search("Observation", {"code": "85354-9", "_count": "1"}).entries[0]
    assert {c["code"]["coding"][0]["code"] for c in pressure["component"]} == {"8480-6", "8462-4"}
    bmi = population.search("Observation", {"code": "39156-5", "_count": "1"}).entries[0]
    weight = population.search("Observation", {"code": "29463-7", "encounter": bmi["encounter"]["reference"],
                                                "date": bmi["effectiveDateTime"]}).entries[0]
    height = population.search("Observation", {"code": "8302-2", "encounter": bmi["encounter"]["reference"],
                                                "date": bmi["effectiveDateTime"]}).entries[0]
    expected = weight["valueQuantity"]["value"] / (height["valueQuantity"]["value"] / 100) ** 2
    assert bmi["valueQuantity"]["value"] == pytest.approx(expected, abs=0.051)


def test_references_point_to_existing_resources(population: FhirStore) -> None:
    keys = {(r["resourceType"], r["id"]) for r in population.iter_resources()}
    dangling = Counter()

    def walk(value: object) -> None:
        if isinstance(value, dict):
            reference = value.get("reference")
            if isinstance(reference, str) and tuple(reference.split("/")) not in keys:
                dangling[reference.split("/")[0]] += 1
            for child in value.values():
                walk(child)
        elif isinstance(value, list):
            for child in value:
                walk(child)

    for resource in population.iter_resources():
        walk(resource)
    assert not dangling
