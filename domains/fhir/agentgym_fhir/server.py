"""A FHIR R4 REST server (JSON) over a `FhirStore`, on the standard library's threading HTTP server.

Interactions: ``GET /metadata`` (CapabilityStatement), ``GET /Type/id`` (read), ``GET /Type?params`` and
``POST /Type/_search`` (search, returning ``searchset`` Bundles with ``next`` links), ``POST /Type``
(create, 201 with Location; conditional with ``If-None-Exist`` or a query string), ``PUT /Type/id``
(update; ``If-Match`` honoured) and ``PUT /Type?params`` (conditional update). Every error is an
OperationOutcome (never an HTML page, even for a request line http.server itself refuses) with the HTTP status
a FHIR server gives: 400 bad search, header or body, 404 unknown resource type (named, with the closest known
one), unknown resource or route, 405 unsupported method or interaction, 412 a condition that matched several
resources or a stale ``If-Match``, 415 a body that is not JSON by its Content-Type, 422 invalid resource. Paths are served both under the base path (default ``/fhir``) and at the root.

Search handling follows the FHIR search page: by default (lenient) a parameter the server does not know or
support is ignored, left out of the Bundle's ``self`` link and named in an OperationOutcome entry (search mode
``outcome``); a client that sends ``Prefer: handling=strict`` gets a 400 instead. A malformed value of a known
parameter is a 400 in both modes. Conditional writes always read their criteria strictly: ignoring one would
write to the wrong resource.
"""

from __future__ import annotations

import difflib
import json
import threading
from functools import cache
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from agentgym_fhir.errors import FhirError
from agentgym_fhir.search_params import COMMON_PARAMS, REGISTRY, RESULT_PARAMS
from agentgym_fhir.store import MAX_COUNT, Episode, FhirStore
from agentgym_fhir.validation import model_for

FHIR_JSON = "application/fhir+json; charset=utf-8"
_IGNORED_PARAMS = {"_format", "_pretty"}
HANDLINGS = ("lenient", "strict")


def capability_statement(base_url: str) -> dict[str, Any]:
    """The CapabilityStatement this server answers at ``/metadata``."""
    resources = []
    for type_name, params in REGISTRY.items():
        if type_name == "*":
            continue
        resources.append({
            "type": type_name,
            "interaction": [{"code": c} for c in ("read", "search-type", "create", "update")],
            "versioning": "versioned-update", "updateCreate": True,
            "conditionalCreate": True, "conditionalUpdate": True,
            "searchParam": [{"name": name, "type": param.kind} for name, param in params.items()]
            + [{"name": name, "type": kind} for name, kind in COMMON_PARAMS.items()],
            "searchInclude": [f"{type_name}:{n}" for n, p in params.items() if p.kind == "reference"],
        })
    return {
        "resourceType": "CapabilityStatement", "status": "active", "date": "2025-01-01",
        "kind": "instance", "fhirVersion": "4.0.1", "format": ["json"],
        "software": {"name": "agentgym-fhir"},
        "implementation": {"description": "agentgym FHIR store", "url": base_url},
        "rest": [{"mode": "server", "documentation": (
            f"Search result parameters: {', '.join(sorted(RESULT_PARAMS))}. _count is capped at {MAX_COUNT}. "
            "Other resource types are stored and searchable by _id, _lastUpdated, patient, subject, status, "
            "identifier and encounter. Unknown or unsupported search parameters are ignored (and named in an "
            "OperationOutcome entry) unless the request says Prefer: handling=strict."), "resource": resources}],
    }


@cache
def is_resource_type(name: str) -> bool:
    """Whether `name` is a FHIR R4 resource type (``Patient``; not ``Patinet``, nor a data type like ``Coding``)."""
    if not name[:1].isupper() or not name.isalnum():
        return False
    from fhir.resources.R4B.resource import Resource

    try:
        return issubclass(model_for(name), Resource)
    except FhirError:
        return False


def unknown_type_error(name: str) -> FhirError:
    """The 404 a FHIR server answers for a resource type it does not know, naming the closest one it serves."""
    served = sorted(type_name for type_name in REGISTRY if type_name != "*")
    close = difflib.get_close_matches(name, served, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return FhirError(f"{name[:80]!r} is not a FHIR R4 resource type; {hint}this server serves e.g. "
                     f"{', '.join(served[:6])} (GET /metadata lists them)", 404, "not-supported")


def _params(query: str) -> dict[str, str | list[str]]:
    parsed = parse_qs(query, keep_blank_values=True)
    return {k: (v[0] if len(v) == 1 else v) for k, v in parsed.items() if k not in _IGNORED_PARAMS}


def preferred_handling(prefer_headers: list[str], default: str = "lenient") -> str:
    """The search handling a request asks for in its ``Prefer`` header(s): ``strict`` or ``lenient``.

    ``Prefer`` holds comma- or semicolon-separated preferences (``return=representation, handling=strict``);
    an absent or unrecognised ``handling`` gives ``default``.
    """
    handling = default
    for header in prefer_headers:
        for preference in header.replace(";", ",").split(","):
            key, _, value = preference.partition("=")
            if key.strip().lower() == "handling" and value.strip().strip('"').lower() in HANDLINGS:
                handling = value.strip().strip('"').lower()
    return handling


class FhirRequestHandler(BaseHTTPRequestHandler):
    """Routes one HTTP request to the store; set up by `make_server`."""

    server: FhirHTTPServer
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: with Nagle's algorithm on, the second waits for the client's
    # delayed ACK (about 40 ms) on every keep-alive response.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    # -- plumbing
    def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", FHIR_JSON)
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, error: FhirError) -> None:
        self._send(error.status, error.operation_outcome())

    def _base_url(self) -> str:
        address = self.server.server_address
        host = self.headers.get("Host") or f"{address[0]!s}:{address[1]}"
        return f"http://{host}{self.server.base_path}"

    def _route(self) -> tuple[list[str], str]:
        parts = urlsplit(self.path)
        path = parts.path
        base = self.server.base_path
        if base and (path == base or path.startswith(base + "/")):
            path = path[len(base):]
        segments = [s for s in path.split("/") if s]
        return segments, parts.query

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (a malformed request line or header, a method with no handler) as
        OperationOutcomes; an unsupported method is FHIR's 405, not http.server's 501."""
        status = HTTPStatus.METHOD_NOT_ALLOWED if code == HTTPStatus.NOT_IMPLEMENTED else HTTPStatus(code)
        detail = message or status.phrase
        if status == HTTPStatus.METHOD_NOT_ALLOWED:
            detail += "; this server does read, search, create and update (GET, POST, PUT)"
        issue_code = "not-supported" if status == HTTPStatus.METHOD_NOT_ALLOWED else "structure"
        # A request line it could not parse leaves http.server at HTTP/0.9, which sends no headers: answer as 1.1.
        if self.request_version == "HTTP/0.9":
            self.request_version = self.protocol_version
        self.close_connection = True  # the request may not have been read whole: never reuse this connection
        self._send(status, FhirError(detail, status, issue_code).operation_outcome(), {"Connection": "close"})

    def _body(self) -> Any:
        declared = self.headers.get("Content-Length") or "0"
        if not declared.strip().isdigit():
            self.close_connection = True  # the body's end is unknown
            raise FhirError(f"Content-Length {declared[:40]!r} is not a byte count", 400, "structure")
        length = int(declared)
        raw = self.rfile.read(length) if length else b""
        content_type = self.headers.get("Content-Type", "")
        if "application/x-www-form-urlencoded" in content_type:
            return raw.decode("utf-8", errors="replace")
        if "xml" in content_type.lower():
            raise FhirError(f"this server reads and writes FHIR JSON only, not {content_type[:60]!r}; send "
                            "Content-Type: application/fhir+json", 415, "not-supported")
        try:
            return json.loads(raw or b"null")
        except json.JSONDecodeError as error:
            raise FhirError(f"the request body is not valid JSON: {error.msg} at line {error.lineno} column "
                            f"{error.colno}", 400, "structure") from error
        except UnicodeDecodeError as error:
            raise FhirError("the request body is not UTF-8 JSON; send FHIR JSON encoded as UTF-8", 400,
                            "structure") from error

    def _strict(self) -> bool:
        return preferred_handling(self.headers.get_all("Prefer") or [], self.server.handling) == "strict"

    def _handle(self, method: str) -> None:
        try:
            segments, query = self._route()
            self._dispatch(method, segments, query)
        except FhirError as error:
            self._error(error)
        except (BrokenPipeError, ConnectionResetError):
            raise
        except Exception as error:  # noqa: BLE001 (the client must get an OperationOutcome, not a dropped connection
            self._error(FhirError(f"internal error: {type(error).__name__}: {error}", 500, "exception"))

    def _dispatch(self, method: str, segments: list[str], query: str) -> None:
        target = self.server.target
        if segments == ["metadata"] and method == "GET":
            self._send(200, capability_statement(self._base_url()))
            return
        if not segments or not segments[0][:1].isupper():
            raise FhirError(f"no such endpoint {self.path!r}; use /metadata, /Type, /Type/id or /Type/_search",
                            404, "not-found")
        resource_type = segments[0]
        if not is_resource_type(resource_type):
            raise unknown_type_error(resource_type)
        if method == "GET" and len(segments) == 1:
            params = _params(query)
            result = target.search(resource_type, params, strict=self._strict())
            self._send(200, result.to_bundle(self._base_url(), params))
        elif method == "POST" and len(segments) == 2 and segments[1] == "_search":
            body = self._body()
            params = _params(query)
            if isinstance(body, str):
                params.update(_params(body))
            result = target.search(resource_type, params, strict=self._strict())
            self._send(200, result.to_bundle(self._base_url(), params))
        elif method == "GET" and len(segments) == 2:
            self._send(200, target.read(resource_type, segments[1]))
        elif method == "POST" and len(segments) == 1:
            self._create(resource_type, query)
        elif method == "PUT" and len(segments) == 2:
            resource = self._body()
            self._check_type(resource, resource_type)
            if resource.get("id") not in (None, segments[1]):
                raise FhirError(f"the body's id {resource.get('id')!r} does not match the URL's {segments[1]!r}",
                                400, "invalid", [f"{resource_type}.id"])
            self._check_version(resource_type, segments[1])
            self._update({**resource, "id": segments[1]})
        elif method == "PUT" and len(segments) == 1 and _params(query):
            self._conditional_update(resource_type, query)
        else:
            raise FhirError(f"{method} {self.path} is not supported; this server does read, search, create and "
                            "update", 405, "not-supported")

    # -- writes
    def _stored_headers(self, stored: dict[str, Any]) -> dict[str, str]:
        version = stored["meta"]["versionId"]
        return {"Location": f"{self._base_url()}/{stored['resourceType']}/{stored['id']}/_history/{version}",
                "ETag": f'W/"{version}"'}

    def _matches(self, resource_type: str, criteria: str, what: str) -> list[dict[str, Any]]:
        """At most two resources matching a conditional write's criteria, read strictly."""
        params = _params(criteria)
        if not params:
            raise FhirError(f"{what} needs search criteria, e.g. identifier=system|value", 400, "invalid")
        for result_param in ("_count", "_offset", "_sort", "_include", "_revinclude", "_summary", "_elements"):
            params.pop(result_param, None)
        return self.server.target.search(resource_type, {**params, "_count": "2", "_total": "none"},
                                         strict=True).entries

    def _create(self, resource_type: str, query: str) -> None:
        resource = self._body()
        self._check_type(resource, resource_type)
        criteria = self.headers.get("If-None-Exist") or query  # the header is FHIR's; a query is fhirpy's way
        if criteria and _params(criteria.lstrip("?")):  # ?_format=json alone is no condition
            found = self._matches(resource_type, criteria.lstrip("?"), "a conditional create")
            if len(found) > 1:
                raise FhirError(f"the conditional create's criteria {criteria!r} match more than one "
                                f"{resource_type}; make them more specific", 412, "duplicate")
            if found:
                self._send(200, found[0], self._stored_headers(found[0]))
                return
        stored = self.server.target.create_resource({k: v for k, v in resource.items() if k != "id"})
        self._send(201, stored, self._stored_headers(stored))

    def _update(self, resource: dict[str, Any]) -> None:
        stored = self.server.target.update_resource(resource)
        self._send(201 if stored["meta"]["versionId"] == "1" else 200, stored, self._stored_headers(stored))

    def _check_version(self, resource_type: str, resource_id: str) -> None:
        expected = self.headers.get("If-Match")
        if not expected:
            return
        wanted = expected.strip().removeprefix("W/").strip('"')
        try:
            current = str(self.server.target.read(resource_type, resource_id)["meta"]["versionId"])
        except FhirError:
            current = None
        if current != wanted:
            raise FhirError(f"If-Match {expected} does not match {resource_type}/{resource_id}'s current version "
                            f"{current or '(none: it does not exist)'}; read it again and retry", 412, "conflict")

    def _conditional_update(self, resource_type: str, query: str) -> None:
        resource = self._body()
        self._check_type(resource, resource_type)
        found = self._matches(resource_type, query, "a conditional update")
        if len(found) > 1:
            raise FhirError(f"the conditional update's criteria {query!r} match more than one {resource_type}; "
                            "make them more specific", 412, "multiple-matches")
        if found:
            if resource.get("id") not in (None, found[0]["id"]):
                raise FhirError(f"the body's id {resource['id']!r} is not the id of the matching resource "
                                f"{found[0]['id']!r}", 400, "invalid", [f"{resource_type}.id"])
            self._update({**resource, "id": found[0]["id"]})
        elif resource.get("id"):
            self._update(resource)
        else:
            stored = self.server.target.create_resource(resource)
            self._send(201, stored, self._stored_headers(stored))

    @staticmethod
    def _check_type(resource: Any, resource_type: str) -> None:
        if not isinstance(resource, dict):
            raise FhirError("the request body must be a FHIR resource (a JSON object)", 400, "structure")
        if resource.get("resourceType") != resource_type:
            raise FhirError(f"the body's resourceType {resource.get('resourceType')!r} does not match the URL's "
                            f"{resource_type!r}", 400, "invalid", ["resourceType"])

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def do_PATCH(self) -> None:
        self._handle("PATCH")


class FhirHTTPServer(ThreadingHTTPServer):
    """The HTTP server; ``target`` is the store (or episode) requests go to; ``handling`` is the search handling
    used when a request's ``Prefer`` header does not choose one (``lenient``, as FHIR recommends, or ``strict``)."""

    daemon_threads = True
    request_queue_size = 256  # the listen backlog: 64 clients connecting at once are all answered (default 5)

    def __init__(self, address: tuple[str, int], target: FhirStore | Episode, base_path: str = "/fhir",
                 verbose: bool = False, handling: str = "lenient") -> None:
        if handling not in HANDLINGS:
            raise ValueError(f"handling must be one of {', '.join(HANDLINGS)}, got {handling!r}")
        super().__init__(address, FhirRequestHandler)
        self.target = target
        self.handling = handling
        self.base_path = "/" + base_path.strip("/") if base_path.strip("/") else ""
        self.verbose = verbose

    @property
    def url(self) -> str:
        """The server's base URL, e.g. ``http://127.0.0.1:8080/fhir``."""
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}{self.base_path}"

    def start_background(self) -> threading.Thread:
        """Serve in a daemon thread (for tests and notebooks); stop with ``shutdown()``."""
        thread = threading.Thread(target=self.serve_forever, name="fhir-server", daemon=True)
        thread.start()
        return thread


def make_server(target: FhirStore | Episode, host: str = "127.0.0.1", port: int = 8080, *,
                base_path: str = "/fhir", verbose: bool = False, handling: str = "lenient") -> FhirHTTPServer:
    """A server bound to ``host:port`` (port 0 picks a free one), not yet serving.

    Writes go to ``target``: pass ``store.episode()`` to keep them out of the store file. ``handling`` is the
    default search handling (``lenient`` or ``strict``); a request's ``Prefer: handling=...`` overrides it.
    """
    return FhirHTTPServer((host, port), target, base_path, verbose, handling)


__all__ = ["HANDLINGS", "FhirHTTPServer", "capability_statement", "make_server", "preferred_handling"]
