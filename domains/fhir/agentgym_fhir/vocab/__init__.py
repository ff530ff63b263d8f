"""The project's own vocabulary tables: LOINC measurements, SNOMED CT / ICD-10-CM conditions, RxNorm
drugs, procedures, vaccines and allergies. Codes are facts of the code systems; names and descriptions
are ours. `lookup` finds an entry by system and code; `search` by words in its name."""

from __future__ import annotations

from typing import Any

from agentgym_fhir.vocab.conditions import (
    ALLERGIES,
    CONDITIONS,
    ENCOUNTER_TYPES,
    PROCEDURES,
    SPECIALTIES,
    VACCINES,
    ConditionCode,
)
from agentgym_fhir.vocab.drugs import CONTRAINDICATIONS, DRUGS, INTERACTIONS, ROUTES, Drug
from agentgym_fhir.vocab.labs import ALL_MEASUREMENTS, LABS, PANELS, SCORES, VITALS, Measurement

LOINC = "http://loinc.org"
SNOMED = "http://snomed.info/sct"
ICD10CM = "http://hl7.org/fhir/sid/icd-10-cm"
RXNORM = "http://www.nlm.nih.gov/research/umls/rxnorm"
CVX = "http://hl7.org/fhir/sid/cvx"
UCUM = "http://unitsofmeasure.org"
MRN_SYSTEM = "urn:agentgym:fhir:mrn"

SYSTEM_NAMES = {"loinc": LOINC, "snomed": SNOMED, "icd10cm": ICD10CM, "icd-10-cm": ICD10CM, "rxnorm": RXNORM,
                "cvx": CVX}


def lookup(system: str, code: str) -> dict[str, Any] | None:
    """The entry for one code, as a dict with ``system``, ``code``, ``display`` and the table's fields;
    None when the code is not in our tables. ``system`` is a URI or a short name (loinc, snomed, icd10cm,
    rxnorm, cvx)."""
    system = SYSTEM_NAMES.get(system.lower(), system)
    if system == LOINC:
        if code in ALL_MEASUREMENTS:
            m = ALL_MEASUREMENTS[code]
            return {"system": LOINC, "code": code, "display": m.name, "description": m.description,
                    "unit": m.unit, "low": m.low, "high": m.high, "category": m.category}
        if code in PANELS:
            name, members = PANELS[code]
            return {"system": LOINC, "code": code, "display": name, "members": list(members)}
    if system in (SNOMED, ICD10CM):
        for c in CONDITIONS.values():
            if (system == SNOMED and c.snomed == code) or (system == ICD10CM and c.icd10 == code):
                return {"system": system, "code": code, "display": c.name, "description": c.description,
                        "snomed": c.snomed, "icd10": c.icd10, "chronic": c.chronic}
        if system == SNOMED:
            for table in (PROCEDURES, SPECIALTIES):
                for snomed, display in table.values():
                    if snomed == code:
                        return {"system": SNOMED, "code": code, "display": display}
            for snomed, display, category, _ in ALLERGIES.values():
                if snomed == code:
                    return {"system": SNOMED, "code": code, "display": display, "category": category}
    if system == RXNORM:
        for d in DRUGS.values():
            if d.rxcui == code:
                return {"system": RXNORM, "code": code, "display": d.name, "drug_class": d.drug_class,
                        "dose": d.dose, "unit": d.unit, "route": d.route, "per_day": d.per_day,
                        "cautions": d.cautions}
    if system == CVX:
        for cvx, display in VACCINES.values():
            if cvx == code:
                return {"system": CVX, "code": code, "display": display}
    return None


def search(text: str, limit: int = 10) -> list[dict[str, Any]]:
    """Entries whose name contains every word of ``text`` (case-insensitive), across all tables."""
    words = text.lower().split()
    found: list[dict[str, Any]] = []
    candidates: list[tuple[str, str, str]] = []
    candidates += [(LOINC, m.loinc, m.name) for m in ALL_MEASUREMENTS.values()]
    candidates += [(LOINC, code, name) for code, (name, _) in PANELS.items()]
    candidates += [(SNOMED, c.snomed, c.name) for c in CONDITIONS.values()]
    candidates += [(ICD10CM, c.icd10, c.name) for c in CONDITIONS.values()]
    candidates += [(RXNORM, d.rxcui, f"{d.name} {d.drug_class}") for d in DRUGS.values()]
    candidates += [(SNOMED, code, name) for code, name in PROCEDURES.values()]
    candidates += [(CVX, code, name) for code, name in VACCINES.values()]
    seen: set[tuple[str, str]] = set()
    for system, code, name in candidates:
        if all(w in name.lower() for w in words) and (system, code) not in seen:
            seen.add((system, code))
            entry = lookup(system, code)
            if entry is not None:
                found.append(entry)
        if len(found) >= limit:
            break
    return found


__all__ = [
    "ALLERGIES",
    "ALL_MEASUREMENTS",
    "CONDITIONS",
    "CONTRAINDICATIONS",
    "CVX",
    "DRUGS",
    "ENCOUNTER_TYPES",
    "ICD10CM",
    "INTERACTIONS",
    "LABS",
    "LOINC",
    "MRN_SYSTEM",
    "PANELS",
    "PROCEDURES",
    "ROUTES",
    "RXNORM",
    "SCORES",
    "SNOMED",
    "SPECIALTIES",
    "UCUM",
    "VACCINES",
    "VITALS",
    "ConditionCode",
    "Drug",
    "Measurement",
    "lookup",
    "search",
]
