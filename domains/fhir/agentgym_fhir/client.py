"""A small FHIR REST client with the same read / search / create / update interface as `FhirStore`, so
code written against the store runs unchanged against a URL (this package's server or any FHIR R4 server
such as HAPI FHIR)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlencode

from agentgym_fhir.errors import FhirError
from agentgym_fhir.store import SearchResult

FHIR_JSON = "application/fhir+json"


class FhirClient:
    """Talk to a FHIR server.

    Args:
        base_url: The server's base, e.g. ``http://localhost:8080/fhir``.
        timeout: Seconds to wait for each response.
        headers: Extra HTTP headers (for example ``Authorization``).
    """

    def __init__(self, base_url: str, *, timeout: float = 30.0, headers: dict[str, str] | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.headers = {"Accept": FHIR_JSON, **(headers or {})}

    def _request(self, method: str, url: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        data = None
        headers = dict(self.headers)
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = FHIR_JSON
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                payload = response.read()
        except urllib.error.HTTPError as error:
            raise _as_fhir_error(error) from None
        except urllib.error.URLError as error:
            raise FhirError(f"cannot reach the FHIR server at {self.base_url}: {error.reason}; is it running?",
                            503, "transient") from None
        try:
            result: dict[str, Any] = json.loads(payload or b"{}")
        except json.JSONDecodeError as error:
            raise FhirError(f"the server at {url} did not answer JSON ({error.msg})", 502, "exception") from None
        return result

    def capabilities(self) -> dict[str, Any]:
        """The server's CapabilityStatement (``GET /metadata``)."""
        return self._request("GET", f"{self.base_url}/metadata")

    def read(self, resource_type: str, resource_id: str) -> dict[str, Any]:
        """``GET /Type/id``. Raises `FhirError` (404) when absent."""
        return self._request("GET", f"{self.base_url}/{resource_type}/{quote(resource_id, safe='')}")

    def search(self, resource_type: str, params: dict[str, str | list[str]] | None = None) -> SearchResult:
        """``GET /Type?params``: one page, as a `SearchResult` (``next_params`` fetch the next page).

        Raises:
            FhirError: with the server's status and OperationOutcome message (400 for unknown parameters).
        """
        pairs = [(k, v) for k, values in (params or {}).items()
                 for v in (values if isinstance(values, list) else [values])]
        url = f"{self.base_url}/{resource_type}" + (f"?{urlencode(pairs)}" if pairs else "")
        return SearchResult.from_bundle(resource_type, self._request("GET", url))

    def search_all(self, resource_type: str, params: dict[str, str | list[str]] | None = None, *,
                   max_pages: int = 100) -> Iterator[dict[str, Any]]:
        """Every match, following ``next`` links (at most ``max_pages`` pages)."""
        current: dict[str, str | list[str]] | None = dict(params or {})
        for _ in range(max_pages):
            if current is None:
                return
            page = self.search(resource_type, current)
            yield from page.entries
            current = page.next_params

    def create_resource(self, resource: dict[str, Any]) -> dict[str, Any]:
        """``POST /Type``: the stored resource with its server-assigned id."""
        return self._request("POST", f"{self.base_url}/{resource['resourceType']}", resource)

    def update_resource(self, resource: dict[str, Any]) -> dict[str, Any]:
        """``PUT /Type/id``: the stored new version."""
        if not resource.get("id"):
            raise FhirError("update needs the resource's id", 400, "required")
        return self._request("PUT", f"{self.base_url}/{resource['resourceType']}/{quote(str(resource['id']), safe='')}",
                             resource)

    def close(self) -> None:
        """Nothing to release (one connection per request); here so the client can stand in for a store."""


def _as_fhir_error(error: urllib.error.HTTPError) -> FhirError:
    message = f"HTTP {error.code} {error.reason}"
    expression: list[str] = []
    try:
        body = json.loads(error.read() or b"{}")
        issues = body.get("issue") or []
        if issues:
            message = "; ".join(i.get("diagnostics") or i.get("details", {}).get("text", "") or i.get("code", "")
                                for i in issues)
            expression = [e for i in issues for e in i.get("expression", [])]
    except (json.JSONDecodeError, AttributeError):
        pass
    code = {404: "not-found", 422: "invalid", 405: "not-supported"}.get(error.code, "invalid")
    return FhirError(message, error.code, code, expression)


__all__ = ["FhirClient"]
