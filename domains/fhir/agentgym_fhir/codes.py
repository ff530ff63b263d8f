"""Code lookup: from a code to its meaning and from words to codes, across the code systems records use.

ICD-10-CM comes from the `simple-icd-10-cm` package (every code and its description). LOINC, RxNorm,
SNOMED CT and CVX come from this project's vocabulary tables (`agentgym_fhir.vocab`): the codes the
generator writes, with our own short descriptions. Synthea and other imported data may carry codes outside
those tables; a lookup then says it does not know the code rather than guessing.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

SYSTEM_URIS: dict[str, str] = {
    "icd10cm": "http://hl7.org/fhir/sid/icd-10-cm",
    "loinc": "http://loinc.org",
    "rxnorm": "http://www.nlm.nih.gov/research/umls/rxnorm",
    "snomed": "http://snomed.info/sct",
    "cvx": "http://hl7.org/fhir/sid/cvx",
}
_SYSTEM_NAMES = {
    "icd-10-cm": "icd10cm", "icd10": "icd10cm", "icd-10": "icd10cm", "icd10cm": "icd10cm", "icd": "icd10cm",
    "loinc": "loinc", "rxnorm": "rxnorm", "rxcui": "rxnorm", "snomed": "snomed", "snomed ct": "snomed",
    "snomedct": "snomed", "sct": "snomed", "cvx": "cvx",
    **{uri: name for name, uri in SYSTEM_URIS.items()},
}


@dataclass(frozen=True)
class CodeEntry:
    """One code with its system, display and (where we have one) a description."""

    system: str
    code: str
    display: str
    description: str = ""
    kind: str = ""

    def as_dict(self) -> dict[str, str]:
        result = {"system": self.system, "system_uri": SYSTEM_URIS[self.system], "code": self.code,
                  "display": self.display}
        if self.description:
            result["description"] = self.description
        if self.kind:
            result["kind"] = self.kind
        return result


class CodeLookupError(ValueError):
    """A lookup that cannot be made; the message says what is accepted."""


def normalize_system(system: str) -> str:
    """`"ICD-10-CM"`, `"http://loinc.org"`, `"SNOMED CT"` -> our short name (icd10cm, loinc, rxnorm, snomed, cvx)."""
    key = system.strip().lower()
    if key in _SYSTEM_NAMES:
        return _SYSTEM_NAMES[key]
    raise CodeLookupError(f"unknown code system {system!r}; use one of icd10cm, loinc, rxnorm, snomed, cvx "
                          "(or their URIs, e.g. http://loinc.org)")


@lru_cache(maxsize=1)
def vocabulary_entries() -> dict[str, dict[str, CodeEntry]]:
    """Every code of the project's vocabulary tables, by system then code."""
    from agentgym_fhir.vocab import conditions, drugs, labs

    table: dict[str, dict[str, CodeEntry]] = {"loinc": {}, "rxnorm": {}, "snomed": {}, "cvx": {}}
    for measurement in labs.ALL_MEASUREMENTS.values():
        table["loinc"][measurement.loinc] = CodeEntry(
            "loinc", measurement.loinc, measurement.name,
            measurement.description + (f". Unit: {measurement.unit}." if measurement.unit else "."), measurement.category)
    for code, (name, members) in labs.PANELS.items():
        table["loinc"][code] = CodeEntry("loinc", code, name, "Panel of " + ", ".join(
            labs.ALL_MEASUREMENTS[m].name for m in members if m in labs.ALL_MEASUREMENTS), "panel")
    for drug in drugs.DRUGS.values():
        if drug.rxcui not in table["rxnorm"]:
            table["rxnorm"][drug.rxcui] = CodeEntry("rxnorm", drug.rxcui, drug.name,
                                                    f"{drug.drug_class}. {drug.cautions}".strip(), "drug")
    for condition in conditions.CONDITIONS.values():
        table["snomed"].setdefault(condition.snomed, CodeEntry(
            "snomed", condition.snomed, condition.name, f"{condition.description}. ICD-10-CM {condition.icd10}.",
            "condition"))
    groups = [("procedure", conditions.PROCEDURES), ("specialty", conditions.SPECIALTIES)]
    for kind, mapping in groups:
        for code, display in mapping.values():
            table["snomed"].setdefault(code, CodeEntry("snomed", code, display, "", kind))
    for code, display, category, _criticality in conditions.ALLERGIES.values():
        table["snomed"].setdefault(code, CodeEntry("snomed", code, display, f"{category} allergy", "allergy"))
    for code, display in drugs.ROUTES.values():
        table["snomed"].setdefault(code, CodeEntry("snomed", code, display, "", "route"))
    for code, display in labs.SMOKING_STATUS.values():
        table["snomed"].setdefault(code, CodeEntry("snomed", code, display, "", "finding"))
    for _class, code, display in conditions.ENCOUNTER_TYPES.values():
        table["snomed"].setdefault(code, CodeEntry("snomed", code, display, "", "encounter type"))
    for code, display in conditions.VACCINES.values():
        table["cvx"][code] = CodeEntry("cvx", code, display, "", "vaccine")
    return table


def _icd_entry(code: str) -> CodeEntry | None:
    import simple_icd_10_cm as icd

    if not icd.is_valid_item(code):
        return None
    dotted = icd.add_dot(code) if "." not in code and len(code) > 3 and not icd.is_chapter_or_block(code) else code
    kind = "billable code" if icd.is_leaf(code) else "category (not billable: pick a more specific child code)"
    return CodeEntry("icd10cm", dotted, icd.get_description(code), "", kind)


ICD_INDEX_VERSION = "1"


@lru_cache(maxsize=1)
def _icd_table() -> dict[str, Any]:
    """Every ICD-10-CM category and code as rows (code, description, lower-cased description, billable), and
    each word of the descriptions -> the rows that hold it.

    Built once from `simple-icd-10-cm` and kept in the cache as JSON (public reference data, no task's), so a
    later process loads it in a fraction of the seconds that parsing the package's XML takes.
    """
    from importlib.metadata import PackageNotFoundError, version

    from agentgym.cache import cache_dir

    try:
        package_version = version("simple-icd-10-cm")
    except PackageNotFoundError:
        package_version = "unknown"
    path = cache_dir("fhir") / f"icd10cm-index-v{ICD_INDEX_VERSION}-{package_version}.json"
    try:
        table: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(table.get("rows"), list) and isinstance(table.get("words"), dict):
            return table
    except (OSError, ValueError):
        pass  # absent or unreadable: build it again below
    from agentgym.cache import building

    with building("the ICD-10-CM code index", path, estimate="about 5-10 s"):
        import simple_icd_10_cm as icd

        rows = []
        for code in icd.get_all_codes(with_dots=True):
            if icd.is_chapter_or_block(code):
                continue
            description = icd.get_description(code)
            rows.append([code, description, description.lower(), icd.is_leaf(code)])
        words: dict[str, list[int]] = {}
        for row, (_code, _description, lowered, _billable) in enumerate(rows):
            for word in sorted(set(re.split(r"\W+", lowered))):
                if word:
                    words.setdefault(word, []).append(row)
        table = {"rows": rows, "words": words}
        partial = path.with_suffix(f".partial-{os.getpid()}")
        partial.write_text(json.dumps(table, separators=(",", ":")), encoding="utf-8")
        os.replace(partial, path)
    return table


def _icd_index() -> list[list[Any]]:
    """[code, description, lower-cased description, billable] for every ICD-10-CM category and code."""
    rows: list[list[Any]] = _icd_table()["rows"]
    return rows


def icd10_billable_siblings(code: str) -> list[tuple[str, str]]:
    """(code, description) of every billable ICD-10-CM code in `code`'s three-character category whose
    description no other ICD-10-CM code shares (so the description names exactly one code), `code` included
    when it qualifies. Empty for an unknown code."""
    import simple_icd_10_cm as icd

    category = code.strip().upper().split(".")[0][:3]
    if not icd.is_valid_item(category):
        return []
    counts = _icd_description_counts()
    found = []
    for child in icd.get_descendants(category):
        if icd.is_leaf(child):
            dotted = icd.add_dot(child) if "." not in child and len(child) > 3 else child
            description = icd.get_description(child)
            if counts.get(description.lower(), 0) == 1:
                found.append((dotted, description))
    return found


@lru_cache(maxsize=1)
def _icd_description_counts() -> dict[str, int]:
    counts: dict[str, int] = {}
    for _code, _description, lowered, _billable in _icd_index():
        counts[lowered] = counts.get(lowered, 0) + 1
    return counts


@lru_cache(maxsize=1024)
def _icd_rows_with(word: str) -> frozenset[int]:
    """The `_icd_index` rows whose lower-cased description contains `word` (letters and digits only) anywhere:
    such a word can only sit inside one of the description's words, so a scan of the ~20,000 distinct words
    finds them (a scan of ~95,000 descriptions per query took a fifth of a second)."""
    rows: set[int] = set()
    for token, posting in _icd_table()["words"].items():
        if word in token:
            rows.update(posting)
    return frozenset(rows)


def lookup(system: str, code: str) -> CodeEntry:
    """The meaning of one code.

    Raises:
        CodeLookupError: unknown system, or a code the system (or our tables, for LOINC/RxNorm/SNOMED/CVX)
            does not hold.
    """
    name = normalize_system(system)
    code = code.strip()
    if name == "icd10cm":
        entry = _icd_entry(code.upper())
        if entry is None:
            raise CodeLookupError(f"{code!r} is not an ICD-10-CM code; codes look like E11.9 or I48.91. Search by "
                                  "words with the text argument to find one.")
        return entry
    entry = vocabulary_entries()[name].get(code)
    if entry is None:
        raise CodeLookupError(f"{code!r} is not in this project's {name} table; search by words with the text "
                              "argument, or check the code in the record's coding.display")
    return entry


def search(text: str, system: str | None = None, limit: int = 10) -> list[CodeEntry]:
    """Codes whose display or description contains every word of `text` (case-insensitive).

    In ICD-10-CM, a code whose description is exactly `text` comes first, then billable codes before
    categories, shorter codes first.
    """
    words = [word for word in re.split(r"\W+", text.lower()) if word]
    if not words:
        raise CodeLookupError("give some words to search for, e.g. text='type 2 diabetes'")
    systems = [normalize_system(system)] if system else ["snomed", "loinc", "rxnorm", "cvx", "icd10cm"]
    found: list[CodeEntry] = []
    for name in systems:
        if name == "icd10cm":
            wanted = " ".join(text.lower().split())
            rows = _icd_index()
            matching = frozenset.intersection(*sorted((_icd_rows_with(word) for word in set(words)), key=len))
            hits = [rows[row] for row in sorted(matching)]
            hits.sort(key=lambda item: (item[2] != wanted, not item[3], len(item[0]), item[0]))
            found.extend(CodeEntry("icd10cm", code, description, "", "billable code" if billable else "category")
                         for code, description, _lowered, billable in hits[:limit])
        else:
            for entry in vocabulary_entries()[name].values():
                haystack = f"{entry.display} {entry.description}".lower()
                if all(word in haystack for word in words):
                    found.append(entry)
    return found[:limit] if system else found[: limit * 2]


def icd10_for_snomed(snomed: str) -> str | None:
    """The ICD-10-CM code our condition table pairs with a SNOMED CT condition code."""
    from agentgym_fhir.vocab.conditions import CONDITIONS

    for condition in CONDITIONS.values():
        if condition.snomed == snomed:
            return condition.icd10
    return None
