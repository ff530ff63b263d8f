"""Validation of resources against the FHIR R4 models of `fhir.resources`.

`fhir.resources` ships R4B models (R4 with a handful of fixes; the resources this project writes are
identical in both), so those are the ones used. Its models check structure and primitive formats but not
required value sets, so the status codes of the common clinical resources are checked here as well.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from agentgym_fhir.errors import FhirError

# Required bindings the models do not enforce, for the resources agents write most.
_STATUS_CODES: dict[str, set[str]] = {
    "Observation": {"registered", "preliminary", "final", "amended", "corrected", "cancelled",
                    "entered-in-error", "unknown"},
    "MedicationRequest": {"active", "on-hold", "cancelled", "completed", "entered-in-error", "stopped",
                          "draft", "unknown"},
    "ServiceRequest": {"draft", "active", "on-hold", "revoked", "completed", "entered-in-error", "unknown"},
    "MedicationAdministration": {"in-progress", "not-done", "on-hold", "completed", "entered-in-error",
                                 "stopped", "unknown"},
    "Encounter": {"planned", "arrived", "triaged", "in-progress", "onleave", "finished", "cancelled",
                  "entered-in-error", "unknown"},
    "Procedure": {"preparation", "in-progress", "not-done", "on-hold", "stopped", "completed",
                  "entered-in-error", "unknown"},
    "DiagnosticReport": {"registered", "partial", "preliminary", "final", "amended", "corrected",
                         "appended", "cancelled", "entered-in-error", "unknown"},
    "Immunization": {"completed", "entered-in-error", "not-done"},
}
_INTENT_CODES = {"proposal", "plan", "directive", "order", "original-order", "reflex-order", "filler-order",
                 "instance-order", "option"}


@cache
def _model(resource_type: str) -> Any:
    from fhir.resources.R4B import get_fhir_model_class

    try:
        return get_fhir_model_class(resource_type)
    except (KeyError, ValueError) as error:
        raise FhirError(f"unknown resource type {resource_type!r}; use a FHIR R4 resource type such as "
                        "Patient, Observation or MedicationRequest", 400, "not-supported") from error


def model_for(resource_type: str) -> Any:
    """The `fhir.resources` R4B model class of a resource type (built once, then cached).

    Raises:
        FhirError: the type is not a FHIR resource type.
    """
    return _model(resource_type)


def _location(resource_type: str, loc: tuple[Any, ...]) -> str:
    path = resource_type
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def validate_resource(resource: Any) -> None:
    """Check one resource against the FHIR R4 model of its type.

    Raises:
        FhirError: status 422 naming each failing element (``Observation.valueQuantity.value``) and why;
            status 400 when the input is not a resource at all or its type is unknown.
    """
    if not isinstance(resource, dict):
        raise FhirError(f"a resource must be a JSON object, got {type(resource).__name__}", 400, "structure")
    resource_type = resource.get("resourceType")
    if not isinstance(resource_type, str):
        raise FhirError("the resource has no resourceType; add e.g. \"resourceType\": \"Observation\"",
                        400, "required", ["resourceType"])
    model = _model(resource_type)
    problems: list[tuple[str, str]] = []
    try:
        model.model_validate(resource)
    except Exception as error:  # noqa: BLE001 (pydantic.ValidationError and fhir_core's own errors)
        errors = getattr(error, "errors", None)
        if callable(errors):
            for item in errors():
                problems.append((_location(resource_type, tuple(item.get("loc", ()))), str(item.get("msg"))))
        else:
            problems.append((resource_type, str(error)))
    status = resource.get("status")
    allowed = _STATUS_CODES.get(resource_type)
    if allowed is not None and isinstance(status, str) and status not in allowed:
        problems.append((f"{resource_type}.status",
                         f"{status!r} is not a {resource_type} status; use one of {', '.join(sorted(allowed))}"))
    intent = resource.get("intent")
    if resource_type in {"MedicationRequest", "ServiceRequest"} and isinstance(intent, str) \
            and intent not in _INTENT_CODES:
        allowed_intents = ", ".join(sorted(_INTENT_CODES))
        problems.append((f"{resource_type}.intent", f"{intent!r} is not a request intent; use one of {allowed_intents}"))
    if problems:
        detail = "; ".join(f"{path}: {message}" for path, message in problems[:10])
        more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
        raise FhirError(f"invalid {resource_type}: {detail}{more}", 422, "invalid",
                        [path for path, _ in problems[:10]])
