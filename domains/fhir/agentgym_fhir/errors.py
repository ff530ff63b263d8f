"""Errors raised by the FHIR store, importers, server and client."""

from __future__ import annotations

from typing import Any


class FhirError(Exception):
    """A FHIR request that cannot be served, with the HTTP status a server would answer.

    Args:
        message: What went wrong and how to fix it (the agent reads this too).
        status: HTTP status code: 400 bad request, 404 not found, 409 conflict, 422 invalid resource.
        code: OperationOutcome issue code (``invalid``, ``not-found``, ``not-supported``, ...).
        expression: FHIRPath-like locations of the problem, for example ``["Observation.status"]``.
    """

    def __init__(self, message: str, status: int = 400, code: str = "invalid",
                 expression: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.expression = expression or []

    def operation_outcome(self) -> dict[str, Any]:
        """This error as a FHIR OperationOutcome resource."""
        issue: dict[str, Any] = {"severity": "error", "code": self.code, "diagnostics": self.message}
        if self.expression:
            issue["expression"] = self.expression
        return {"resourceType": "OperationOutcome", "issue": [issue]}
