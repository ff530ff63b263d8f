"""FHIR search on the store: every parameter type and prefix, modifiers, sorting, paging, includes,
counts and the errors a real server gives."""

from __future__ import annotations

import pytest
from agentgym_fhir.errors import FhirError
from agentgym_fhir.store import MAX_COUNT, FhirStore


def ids(store: FhirStore, resource_type: str, params: dict) -> list[str]:
    return sorted(e["id"] for e in store.search(resource_type, params).entries)


def test_token_forms(known: FhirStore) -> None:
    assert ids(known, "Observation", {"code": "2823-3"}) == ["k2020", "k2021", "k2022", "kp2"]
    assert ids(known, "Observation", {"code": "http://loinc.org|4548-4"}) == ["a1c"]
    assert ids(known, "Observation", {"code": "http://snomed.info/sct|4548-4"}) == []
    assert ids(known, "Observation", {"code": "|4548-4"}) == []          # |code means "no system"
    assert ids(known, "Condition", {"code": "http://hl7.org/fhir/sid/icd-10-cm|E11.9"}) == ["c1"]
    assert ids(known, "Observation", {"code": "4548-4,8867-4"}) == ["a1c", "hr"]   # comma is OR
    assert ids(known, "Observation", {"category": "vital-signs"}) == ["hr"]
    assert ids(known, "Patient", {"identifier": "urn:mrn|MRN001"}) == ["p1"]
    assert ids(known, "Patient", {"identifier": "MRN001"}) == ["p1", "p3"]
    assert ids(known, "Patient", {"gender": "female"}) == ["p2", "p3"]
    assert ids(known, "Observation", {"code:text": "a1c"}) == ["a1c"]
    assert ids(known, "Patient", {"gender:not": "female"}) == ["p1"]
    assert ids(known, "Observation", {"status": "final", "_id": "hr,a1c"}) == ["a1c", "hr"]


def test_string_matching(known: FhirStore) -> None:
    assert ids(known, "Patient", {"family": "smith"}) == ["p1", "p3"]       # starts-with, any case
    assert ids(known, "Patient", {"family:exact": "Smith"}) == ["p1"]
    assert ids(known, "Patient", {"family:exact": "smith"}) == []
    assert ids(known, "Patient", {"name:contains": "ithso"}) == ["p3"]
    assert ids(known, "Patient", {"name": "muller"}) == ["p2"]             # accents folded
    assert ids(known, "Patient", {"given": "zoe"}) == ["p2"]
    assert ids(known, "Patient", {"name": "john smith"}) == ["p1"]
    assert ids(known, "Patient", {"given": "paul"}) == ["p1"]


@pytest.mark.parametrize(("value", "expected"), [
    ("2021", ["k2021", "kp2"]),
    ("eq2021-03-01", ["k2021", "kp2"]),
    ("2021-03", ["k2021", "kp2"]),
    ("gt2021-03-01", ["k2022"]),
    ("ge2021-03-01", ["k2021", "k2022", "kp2"]),
    ("lt2021-03-01", ["k2020"]),
    ("le2021-03-01", ["k2020", "k2021", "kp2"]),
    ("ne2021", ["k2020", "k2022"]),
    ("sa2021-12-31", ["k2022"]),
    ("eb2021-01-01", ["k2020"]),
    ("ge2022-12-31T23:59:59Z", ["k2022"]),
    ("gt2022-12-31T23:59:59Z", []),
    ("2021-03-01T09:30:00+00:00", ["k2021", "kp2"]),
    ("2021-03-01T10:30:00+01:00", ["k2021", "kp2"]),                    # time zones are honoured
])
def test_date_prefixes(known: FhirStore, value: str, expected: list[str]) -> None:
    assert ids(known, "Observation", {"code": "2823-3", "date": value}) == expected


def test_date_ranges_and_and(known: FhirStore) -> None:
    assert ids(known, "Observation", {"code": "2823-3", "date": ["ge2020-06-01", "lt2022-01-01"]}) == \
        ["k2020", "k2021", "kp2"]
    assert ids(known, "Patient", {"birthdate": "1960"}) == ["p1", "p3"]
    assert ids(known, "Patient", {"birthdate": "1960-05-01"}) == ["p1"]    # p3's year-only date is wider
    assert ids(known, "Condition", {"onset-date": "ge2019-04-15"}) == ["c1"]  # 2019-04 overlaps the day after
    assert ids(known, "Encounter", {"date": "2021-03-01"}) == ["e1"]
    assert ids(known, "MedicationRequest", {"authoredon": "lt2020"}) == ["m1"]


def test_reference_forms(known: FhirStore) -> None:
    assert ids(known, "Observation", {"patient": "p2"}) == ["hr", "kp2"]
    assert ids(known, "Observation", {"patient": "Patient/p2"}) == ["hr", "kp2"]
    assert ids(known, "Observation", {"subject": "Patient/p2"}) == ["hr", "kp2"]
    assert ids(known, "Observation", {"subject:Patient": "p2"}) == ["hr", "kp2"]
    assert ids(known, "Observation", {"subject": "http://example.org/fhir/Patient/p2"}) == ["hr", "kp2"]
    assert ids(known, "Observation", {"encounter": "e1", "code": "4548-4"}) == ["a1c"]
    assert ids(known, "Observation", {"patient": "p1,p2", "code": "8867-4"}) == ["hr"]


def test_patient_code_date_combined(known: FhirStore) -> None:
    result = known.search("Observation", {"patient": "p1", "code": "http://loinc.org|2823-3",
                                          "date": ["ge2021", "le2022-12-31"]})
    assert sorted(e["id"] for e in result.entries) == ["k2021", "k2022"] and result.total == 2


@pytest.mark.parametrize(("value", "expected"), [
    ("3.6", ["kp2"]), ("eq4.2", ["k2021"]), ("gt4.2", ["k2022"]), ("ge4.2", ["k2021", "k2022"]),
    ("lt3.6", ["k2020"]), ("le3.6", ["k2020", "kp2"]), ("ne3.6", ["k2020", "k2021", "k2022"]),
    ("4", ["k2021", "kp2"]),  # precision: 4 means [3.5, 4.5)
    ("5.4|http://unitsofmeasure.org|mmol/L", ["k2022"]), ("5.4||mg/dL", []), ("ap5", ["k2022"]),
])
def test_quantity_prefixes(known: FhirStore, value: str, expected: list[str]) -> None:
    assert ids(known, "Observation", {"code": "2823-3", "value-quantity": value}) == expected


def test_missing_modifier(known: FhirStore) -> None:
    assert ids(known, "Observation", {"value-quantity:missing": "true"}) == []
    assert ids(known, "Patient", {"identifier:missing": "false"}) == ["p1", "p2", "p3"]


def test_sort_count_and_paging(known: FhirStore) -> None:
    first = known.search("Observation", {"code": "2823-3", "_sort": "-date", "_count": "3"})
    assert [e["id"] for e in first.entries] == ["k2022", "k2021", "kp2"] or \
        [e["id"] for e in first.entries] == ["k2022", "kp2", "k2021"]
    assert first.total == 4 and first.next_params is not None
    second = known.search("Observation", first.next_params)
    assert [e["id"] for e in second.entries] == ["k2020"] and second.next_params is None
    ascending = known.search("Observation", {"code": "2823-3", "_sort": "date,_id"})
    assert [e["id"] for e in ascending.entries] == ["k2020", "k2021", "kp2", "k2022"]
    by_value = known.search("Observation", {"code": "2823-3", "_sort": "-value-quantity"})
    assert [e["id"] for e in by_value.entries] == ["k2022", "k2021", "kp2", "k2020"]
    by_name = known.search("Patient", {"_sort": "family"})
    assert [e["id"] for e in by_name.entries] == ["p2", "p1", "p3"]


def test_count_is_capped_and_said(population: FhirStore) -> None:
    result = population.search("Observation", {"_count": str(10**9)})
    assert len(result.entries) == MAX_COUNT
    assert any("limit" in w for w in result.warnings)
    assert result.next_params is not None and result.next_params["_offset"] == str(MAX_COUNT)
    assert result.next_params["_count"] == str(MAX_COUNT)


def test_paging_walks_everything_once(population: FhirStore) -> None:
    patient = population.search("Patient", {"_count": "1"}).entries[0]["id"]
    params: dict | None = {"patient": patient, "_count": "7", "_sort": "date"}
    seen: list[str] = []
    while params is not None:
        page = population.search("Observation", params)
        seen += [e["id"] for e in page.entries]
        params = page.next_params
    assert len(seen) == len(set(seen)) == population.search("Observation", {"patient": patient,
                                                                            "_summary": "count"}).total


def test_search_all_follows_pages(known: FhirStore) -> None:
    found = [r["id"] for r in known.search_all("Observation", {"code": "2823-3", "_count": "1", "_sort": "date"})]
    assert found == ["k2020", "k2021", "kp2", "k2022"]
    with known.episode() as episode:
        assert len(list(episode.search_all("Observation", {"_count": "2"}))) == 6


def test_summary_count_and_elements(known: FhirStore) -> None:
    result = known.search("Observation", {"code": "2823-3", "_summary": "count"})
    assert result.total == 4 and result.entries == []
    trimmed = known.search("Patient", {"_id": "p1", "_elements": "gender"}).entries[0]
    assert set(trimmed) == {"resourceType", "id", "meta", "gender"}


def test_include_and_revinclude(known: FhirStore) -> None:
    result = known.search("Observation", {"_id": "a1c", "_include": ["Observation:patient", "Observation:encounter"]})
    assert [e["id"] for e in result.entries] == ["a1c"]
    assert sorted((r["resourceType"], r["id"]) for r in result.included) == [("Encounter", "e1"), ("Patient", "p1")]
    rev = known.search("Patient", {"_id": "p2", "_revinclude": "Observation:subject"})
    assert sorted(r["id"] for r in rev.included) == ["hr", "kp2"]
    bundle = rev.to_bundle("http://x/fhir")
    assert [e["search"]["mode"] for e in bundle["entry"]] == ["match", "include", "include"]


@pytest.mark.parametrize(("params", "fragment"), [
    ({"colour": "red"}, "unknown search parameter 'colour'"),
    ({"code:fuzzy": "x"}, "modifier :fuzzy"),
    ({"date": "yesterday"}, "not a FHIR date"),
    ({"value-quantity": "lots"}, "not a number"),
    ({"_count": "many"}, "_count"),
    ({"subject.name": "smith"}, "chained"),
    ({"_sort": "subject"}, "cannot sort"),
    ({"_include": "Observation:code"}, "no reference parameter"),
    ({"patient": "Group/g1"}, "refers to Patient"),
])
def test_bad_searches_raise_400(known: FhirStore, params: dict, fragment: str) -> None:
    with pytest.raises(FhirError) as caught:
        known.search("Observation", params)
    assert caught.value.status == 400 and fragment in caught.value.message
    assert caught.value.operation_outcome()["issue"][0]["severity"] == "error"


def test_unknown_parameter_lists_supported(known: FhirStore) -> None:
    with pytest.raises(FhirError, match="supported: .*patient"):
        known.search("Observation", {"paitent": "p1"})


def test_read_and_not_found(known: FhirStore) -> None:
    assert known.read("Patient", "p1")["name"][0]["family"] == "Smith"
    with pytest.raises(FhirError) as caught:
        known.read("Patient", "nobody")
    assert caught.value.status == 404


def test_other_resource_types_are_searchable_by_patient(known: FhirStore) -> None:
    with known.episode() as episode:
        episode.create_resource({"resourceType": "Coverage", "status": "active",
                                 "beneficiary": {"reference": "Patient/p1"}, "payor": [{"display": "x"}]})
        assert episode.search("Coverage", {"patient": "p1"}).total == 1
