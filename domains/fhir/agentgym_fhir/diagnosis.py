"""FHIR-v0's own diagnosis labels (docs/diagnosis.md, "FHIR-v0"), from the episode's calls, what it wrote and
what the verifier compared.

- `wrong_patient` reads the patient each call named (a `patient_id` argument, a search's `patient`/`subject`
  parameter, a read of `Patient/<id>`, a written resource's subject) against the task's patient;
- the write labels compare what the episode wrote with the task's expected resources, as `fhir_write` does;
- the answer labels read the verifier's components (`unit`, `precision`, `recall`) and the submitted code's form.

Labels are names only: no patient id, code or value ever enters them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from agentgym import Score, Task
from agentgym.diagnosis import TurnRecord, ending_call, episode_calls, in_order

from .verify import _codes, _dose, is_none_answer, normalize_code, quantity_unit_is, written_resources

WRONG_PATIENT = "wrong_patient"            # a call read, searched or wrote another patient than the task's
WRONG_CODE_SYSTEM = "wrong_code_system"    # a code from another code system than the one the task asks for
UNIT_MISMATCH = "unit_mismatch"            # a written quantity not in the unit asked for; an answer in a unit that does not convert to it
MISSING_WRITE = "missing_write"            # the task asks for a resource to be written; none was
UNREQUESTED_WRITE = "unrequested_write"    # the episode wrote more resources than the task asked for
ANSWER_MISSING_ITEMS = "answer_missing_items"  # a list answer: every item right, some missing
ANSWER_EXTRA_ITEMS = "answer_extra_items"      # a list answer: every expected item there, and more
SAID_NONE_FOUND = "said_none_found"        # answered "none found" where the record holds an answer

LABELS = (WRONG_PATIENT, WRONG_CODE_SYSTEM, UNIT_MISMATCH, MISSING_WRITE, UNREQUESTED_WRITE, ANSWER_MISSING_ITEMS,
          ANSWER_EXTRA_ITEMS, SAID_NONE_FOUND)

# The form of a code in each code system the tasks use (an ICD-10-CM code, a LOINC code, a SNOMED CT or RxNorm
# concept id: digits only, which the two share).
# `normalize_code` has dropped the dots of ICD-10 codes ("J44.81" -> "J4481").
_CODE_FORMS = (("icd10", re.compile(r"^[A-Z]\d[0-9A-Z]{1,5}$")),
               ("loinc", re.compile(r"^\d{1,7}-\d$")),
               ("concept_id", re.compile(r"^\d{4,18}$")))
_PATIENT_PARAMS = ("patient", "subject")


def code_form(code: Any) -> str | None:
    """Which code system's form `code` has ("icd10", "loinc", "concept_id"), or None for another text."""
    text = normalize_code(code).upper()
    return next((name for name, pattern in _CODE_FORMS if pattern.match(text)), None)


def _patient_id(reference: Any) -> str | None:
    """The id of "Patient/<id>", "<id>" or {"reference": ...}; None for anything else."""
    if isinstance(reference, dict):
        reference = reference.get("reference")
    if not isinstance(reference, str) or not reference.strip():
        return None
    parts = reference.strip().split("/_history")[0].rstrip("/").split("/")
    if len(parts) >= 2 and parts[-2] != "Patient":
        return None
    return parts[-1]


def patients_named(name: str, arguments: Any) -> Iterator[str]:
    """The patient ids one call's arguments name."""
    if not isinstance(arguments, dict):
        return
    found = _patient_id(arguments.get("patient_id"))
    if found:
        yield found
    if name == "fhir_read" and arguments.get("resource_type") == "Patient":
        found = _patient_id(arguments.get("resource_id"))
        if found:
            yield found
    params = arguments.get("params")
    if name == "fhir_search" and isinstance(params, dict):
        for key, value in params.items():
            base = str(key).split(":")[0]
            if base in _PATIENT_PARAMS or (base == "_id" and arguments.get("resource_type") == "Patient"):
                for item in value if isinstance(value, list) else [value]:
                    for part in str(item).split(","):
                        found = _patient_id(part)
                        if found:
                            yield found
    resource = arguments.get("resource")
    if isinstance(resource, dict):
        found = _patient_id(resource.get("subject"))
        if found:
            yield found


def _quantity_of(resource: dict[str, Any]) -> dict[str, Any]:
    """A written Observation's value or MedicationRequest's dose ({} when it has none, or not as an object)."""
    quantity = resource.get("valueQuantity")
    if not isinstance(quantity, dict):
        quantity = _dose(resource)
    return quantity if isinstance(quantity, dict) else {}




def _write_labels(task: Task, state: Any) -> list[str]:
    expected = task.verifier.params.get("expected") or []
    written = written_resources(state)
    labels = []
    if expected and not written:
        labels.append(MISSING_WRITE)
    # More writes than asked for (a wrong write in place of an expected one is labelled by what is wrong in it).
    if len(written) > len(expected) and not task.verifier.params.get("allow_other_writes"):
        labels.append(UNREQUESTED_WRITE)
    for spec in expected:
        same_type = [resource for resource in written if resource.get("resourceType") == spec.get("resourceType")]
        field = {"MedicationRequest": "medicationCodeableConcept"}.get(str(spec.get("resourceType")), "code")
        system = str((spec.get("code") or [""])[0])
        if system and any(_codes(resource.get(field)) and system not in {s for s, _ in _codes(resource.get(field))}
                          for resource in same_type):
            labels.append(WRONG_CODE_SYSTEM)
        quantity = spec.get("value") or spec.get("dose") or {}
        wanted = quantity.get("unit")
        for resource in same_type:
            quantity = _quantity_of(resource)
            if wanted and quantity and not quantity_unit_is(quantity, str(wanted)):
                labels.append(UNIT_MISMATCH)
    return labels


def _answer_labels(gold: Any, submission: Any, params: dict[str, Any], score: Score) -> list[str]:
    kind = params.get("kind")
    labels = []
    if score.components.get("unit") == 0.0:
        labels.append(UNIT_MISMATCH)
    if kind == "code":
        got, want = code_form(submission), code_form(gold)
        if got and want and got != want:
            labels.append(WRONG_CODE_SYSTEM)
    if kind == "set" and not is_none_answer(submission):
        precision, recall = score.components.get("precision"), score.components.get("recall")
        if precision == 1.0 and recall is not None and recall < 1.0:
            labels.append(ANSWER_MISSING_ITEMS)
        if recall == 1.0 and precision is not None and precision < 1.0:
            labels.append(ANSWER_EXTRA_ITEMS)
    if kind != "none" and gold not in (None, []) and is_none_answer(submission):
        labels.append(SAID_NONE_FOUND)
    return labels


def fhir_labels(task: Task, state: Any, turns: Sequence[TurnRecord], score: Score) -> list[str]:
    """FHIR-v0's domain labels for a finished episode, in the order of `LABELS`."""
    found: set[str] = set()
    patient = task.metadata.get("patient_id")
    if patient:
        for call in episode_calls(turns):
            if call.error_kind not in ("unknown_tool", "arguments") \
                    and any(named != patient for named in patients_named(call.name, call.arguments)):
                found.add(WRONG_PATIENT)
                break
    if score.value < 1.0:
        ending = ending_call(turns)
        arguments = ending.arguments if ending is not None else None
        submission = arguments.get("answer") if isinstance(arguments, dict) else None
        params = dict(task.verifier.params)
        if task.verifier.name == "fhir_write":
            found.update(_write_labels(task, state))
            answer = params.get("answer")
            if isinstance(answer, dict) and ending is not None:
                found.update(_answer_labels(answer.get("gold"), submission, answer, score))
        elif task.verifier.name == "fhir_answer" and ending is not None:
            found.update(_answer_labels(task.answer, submission, params, score))
    return in_order(found, LABELS)
