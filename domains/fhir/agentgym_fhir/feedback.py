"""FHIR-v0 hints (feedback="hints" | "adaptive"): the task's patient, search parameters, code systems, calculators.

Each hint comes from what the agent could already see or learn: the patient id only when the task prompt
states it (a lookup task, whose answer is a patient, never gets one), the search parameters this server
accepts (its error message lists them), the code systems lookup_code knows, a calculator's input names (its
description lists them). Never a resource id, a value or a code from the record. See docs/feedback.md.
"""

from __future__ import annotations

import re
from typing import Any

from agentgym.actions import ToolCall
from agentgym.feedback import AgentView, Hint, closest
from agentgym.tools import ToolOutcome
from agentgym_fhir import calculators, codes
from agentgym_fhir.search_params import COMMON_PARAMS, GENERIC_TYPE, REGISTRY, RESULT_PARAMS, params_for
from agentgym_fhir.tools import FhirState

_UNKNOWN_PARAMETER = re.compile(r"unknown search parameter '([^']+)' for ([A-Za-z]+)")
_NOT_A_TYPE = re.compile(r"'([^']+)' is not a FHIR resource type")
_UNKNOWN_SYSTEM = re.compile(r"unknown code system '([^']+)'")
_UNEXPECTED_INPUT = re.compile(r"unexpected argument '([^']+)'")
_UNKNOWN_CALCULATOR = re.compile(r"unknown calculator '([^']+)'")
_EMPTY = re.compile(r'"(?:total|count)": ?0\b|"found": ?false')
_CODED_PARAMETERS = ("code", "combo-code", "component-code", "value-concept", "category")
RESOURCE_TYPES = tuple(sorted(name for name in REGISTRY if name != GENERIC_TYPE))
SYSTEM_NAMES = tuple(codes.SYSTEM_URIS)
SYSTEM_URIS = tuple(codes.SYSTEM_URIS.values())


def hints(call: ToolCall, outcome: ToolOutcome, view: AgentView) -> list[Hint]:
    """Hints for a FHIR-v0 call that failed or found nothing (none for a call that found something)."""
    text = outcome.text
    failed = not outcome.ok
    empty = not failed and len(text) < 4000 and _EMPTY.search(text) is not None
    if not (failed or empty):
        return []
    arguments = call.arguments if isinstance(call.arguments, dict) else {}
    found: list[Hint] = []
    patient = _task_patient(view)
    if patient is not None:
        asked = _patient_asked(call.name, arguments)
        if asked is not None and asked != patient:
            found.append(Hint("task_patient", f"This task is about the patient with id {patient}, as its prompt "
                              "says.", f"Pass patient_id=\"{patient}\" (or {{\"patient\": \"{patient}\"}} in "
                              "fhir_search params); other patients' records do not answer this task."))
    found.extend(_parameter_hints(call, arguments, text, empty))
    found.extend(calculator_and_code_hints(call, outcome))
    return found


def calculator_and_code_hints(call: ToolCall, outcome: ToolOutcome) -> list[Hint]:
    """Closest code system, calculator and calculator input for a failed lookup_code or calculate (also
    ClinicalQA-v0's)."""
    if outcome.ok or call.name not in ("lookup_code", "calculate"):
        return []
    text = outcome.text
    found: list[Hint] = []
    system = _UNKNOWN_SYSTEM.search(text)
    if system:
        name = system.group(1)
        match = closest(name, SYSTEM_NAMES) or closest(name, SYSTEM_URIS)
        if match is not None:
            found.append(Hint("closest_code_system", f"The closest code system is '{match}'.",
                              "Systems: " + ", ".join(f"{key} ({uri})" for key, uri in codes.SYSTEM_URIS.items())
                              + "."))
    calculator = _UNKNOWN_CALCULATOR.search(text)
    asked = call.arguments.get("calculator") if isinstance(call.arguments, dict) else None
    if calculator or (isinstance(asked, str) and asked not in calculators.CALCULATORS):
        name = calculator.group(1) if calculator else str(asked)
        match = closest(name, calculators.CALCULATORS, cutoff=0.4)
        if match is not None:
            found.append(Hint("closest_calculator", f"The closest calculator is '{match}'.",
                              f"It takes {calculators.calculator_inputs(match)}."))
    elif "invalid inputs for calculator" in text:
        named = re.search(r"invalid inputs for calculator '([^']+)'", text)
        accepted = re.search(r"\(accepted: ([^)]*)\)", text)
        names = [part.strip() for part in accepted.group(1).split(",")] if accepted else []
        for unexpected in _UNEXPECTED_INPUT.findall(text):
            match = closest(unexpected, names, cutoff=0.4)
            if match is not None:
                found.append(Hint("closest_calculator_input", f"The calculator input closest to '{unexpected}' is "
                                  f"'{match}'.", f"{named.group(1) if named else 'It'} takes "
                                  f"{', '.join(names)}."))
    return found


def _task_patient(view: AgentView) -> str | None:
    """The task's patient id, only where the prompt itself gives it."""
    state = view.state
    patient = state.patient_id if isinstance(state, FhirState) else None
    return patient if patient and patient in view.prompt else None


def _search_params(arguments: dict[str, Any]) -> dict[str, Any]:
    params = arguments.get("params")
    return params if isinstance(params, dict) else {}


def _patient_asked(tool: str, arguments: dict[str, Any]) -> str | None:
    """The patient id a call asked about (a `patient_id` argument, a patient/subject search, a Patient read)."""
    value: Any = arguments.get("patient_id")
    if value is None and tool == "fhir_search":
        params = _search_params(arguments)
        value = next((params[key] for key in ("patient", "subject") if key in params), None)
        if value is None and arguments.get("resource_type") == "Patient":
            value = params.get("_id")
    if value is None and tool == "fhir_read" and arguments.get("resource_type") == "Patient":
        value = arguments.get("resource_id")
    if not isinstance(value, str) or not value.strip():
        return None
    return value.strip().split("/")[-1]


def _parameter_hints(call: ToolCall, arguments: dict[str, Any], text: str, empty: bool) -> list[Hint]:
    found: list[Hint] = []
    unknown = _UNKNOWN_PARAMETER.search(text)
    if unknown:
        name, resource_type = unknown.group(1), unknown.group(2)
        filters = sorted(params_for(resource_type))
        match = closest(name.split(":")[0], [*filters, *COMMON_PARAMS, *RESULT_PARAMS])
        found.append(Hint("search_parameters",
                          (f"Did you mean the search parameter '{match}'? " if match else "")
                          + f"{resource_type} searches filter on: {', '.join(filters)}.",
                          "Page and sort with " + ", ".join(sorted(RESULT_PARAMS)) + "."))
    not_type = _NOT_A_TYPE.search(text)
    resource_type = arguments.get("resource_type")
    if not_type or (call.name == "fhir_search" and empty and isinstance(resource_type, str)
                    and resource_type not in REGISTRY):
        given = not_type.group(1) if not_type else str(resource_type)
        match = closest(given, RESOURCE_TYPES)
        if match is not None and match != given:
            found.append(Hint("closest_resource_type", f"There is no resource type '{given}' here; the closest is "
                              f"'{match}'.", "Types with their own search parameters: "
                              + ", ".join(RESOURCE_TYPES) + "."))
    if call.name == "fhir_search" and empty:
        params = _search_params(arguments)
        for key in _CODED_PARAMETERS:
            value = params.get(key)
            if isinstance(value, str) and "|" in value:
                system = value.split("|", 1)[0]
                if system and system not in SYSTEM_URIS:
                    match = closest(system, SYSTEM_URIS)
                    found.append(Hint("closest_code_system",
                                      f"'{system}' is not a code system of this record"
                                      + (f"; the closest is '{match}'." if match else "."),
                                      "Systems: " + ", ".join(SYSTEM_URIS) + "; or give the code alone."))
    return found
