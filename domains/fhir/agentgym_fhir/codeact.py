"""CodeAct for FHIR-v0 (`code=True`): Python blocks run in a sandbox with a `fhir` client preloaded.

The bridge is a snapshot with write-back, not a live connection (the sandbox has no network and no way to
call the host): on the first block of an episode the task patient's resources are read from the episode's view
of the store and written into the sandbox as JSON (for tasks across patients: Patient, Condition and
MedicationRequest resources of every patient). The preloaded `fhir` object searches that snapshot with the
common parameters (patient/subject, code, status, clinical-status, category, class, date prefixes, _sort,
_count) and reads by id. `fhir.create(resource)` queues a write; after the block, the host applies each
queued write through the same validated, patient-guarded path as the write tools, so writes land in the
episode's copy of the store and are verified like any other.
"""

from __future__ import annotations

import json
from typing import Any

from agentgym.sandbox import SandboxError
from agentgym.tools import ToolError
from agentgym_fhir.tools import FhirState, _create

SNAPSHOT = "fhir_snapshot.json"
WRITES = "fhir_writes.json"
PATIENT_TYPES = ("Observation", "Condition", "MedicationRequest", "Encounter", "AllergyIntolerance", "Procedure",
                 "Immunization", "ServiceRequest", "DiagnosticReport", "MedicationAdministration")
WRITE_TOOLS = {"MedicationRequest", "ServiceRequest", "Observation"}

PRELUDE = r'''
import json as _json, os as _os

class _FhirSnapshot:
    """search(resource_type, params) and read(resource_type, id) over this task's records (a snapshot);
    create(resource) queues a MedicationRequest, ServiceRequest or Observation to be written to the record."""

    def __init__(self, path):
        with open(path) as handle:
            data = _json.load(handle)
        self.now = data["now"]
        self.patient_id = data["patient_id"]
        self._resources = data["resources"]

    def read(self, resource_type, resource_id):
        for resource in self._resources:
            if resource["resourceType"] == resource_type and resource.get("id") == resource_id:
                return resource
        raise KeyError(f"{resource_type}/{resource_id} not found")

    @staticmethod
    def _codes(concept):
        return {c.get("code") for c in (concept or {}).get("coding", [])} if isinstance(concept, dict) else set()

    @staticmethod
    def _date(resource):
        for key in ("effectiveDateTime", "authoredOn", "onsetDateTime", "recordedDate", "occurrenceDateTime"):
            if resource.get(key):
                return resource[key]
        return (resource.get("period") or {}).get("start") or ""

    def _match(self, resource, key, value):
        name = key.split(":")[0]
        if name in ("patient", "subject"):
            ref = (resource.get("subject") or resource.get("patient") or {}).get("reference", "")
            return ref.split("/")[-1] == str(value).split("/")[-1]
        if name in ("code", "combo-code"):
            wanted = {v.split("|")[-1] for v in str(value).split(",")}
            concept = resource.get("code") or resource.get("medicationCodeableConcept") or resource.get("vaccineCode")
            found = self._codes(concept) | {c for comp in resource.get("component", []) for c in self._codes(comp.get("code"))}
            return bool(wanted & found)
        if name in ("status",):
            return resource.get("status") in str(value).split(",")
        if name == "clinical-status":
            return bool(self._codes(resource.get("clinicalStatus")) & set(str(value).split(",")))
        if name == "category":
            return any(str(value).split("|")[-1] in self._codes(c) for c in resource.get("category", []))
        if name == "class":
            return (resource.get("class") or {}).get("code") in str(value).split(",")
        if name in ("date", "authoredon", "onset-date"):
            day, prefix = str(value), "eq"
            if day[:2] in ("ge", "le", "gt", "lt", "eq"):
                prefix, day = day[:2], day[2:]
            got = self._date(resource)[:len(day)]
            return {"ge": got >= day, "le": got <= day, "gt": got > day, "lt": got < day, "eq": got == day}[prefix]
        if name in ("gender", "birthdate", "family", "given", "name", "identifier"):
            text = _json.dumps(resource).lower()
            return str(value).lower() in text
        raise ValueError(f"the sandbox client does not support the search parameter {key!r}; use the tools")

    def search(self, resource_type, params=None):
        params = dict(params or {})
        sort, count = params.pop("_sort", None), int(params.pop("_count", 1000))
        params.pop("_offset", None)
        found = [r for r in self._resources if r["resourceType"] == resource_type
                 and all(self._match(r, k, v) for k, vs in params.items() for v in (vs if isinstance(vs, list) else [vs]))]
        if sort:
            found.sort(key=self._date, reverse=sort.startswith("-"))
        return found[:count]

    def create(self, resource):
        queued = _json.load(open("fhir_writes.json")) if _os.path.exists("fhir_writes.json") else []
        queued.append(resource)
        with open("fhir_writes.json", "w") as handle:
            _json.dump(queued, handle)
        return "queued: written to the record when this block finishes"
'''


def _snapshot(state: FhirState) -> dict[str, Any]:
    resources: list[dict[str, Any]] = []
    if state.patient_id is not None:
        resources.append(state.backend.read("Patient", state.patient_id))
        for resource_type in PATIENT_TYPES:
            key = "patient"
            resources.extend(state.backend.search(resource_type, {key: state.patient_id, "_count": "1000"}).entries)
    else:
        for resource_type in ("Patient", "Condition", "MedicationRequest"):
            params: dict[str, Any] | None = {"_count": "1000"}
            while params is not None:
                page = state.backend.search(resource_type, params)
                resources.extend(page.entries)
                params = page.next_params
    return {"now": state.now.isoformat(), "patient_id": state.patient_id, "resources": resources}


def run_code(sandbox: Any, state: FhirState, code: str, timeout: float = 30) -> str:
    """Run one block; load the snapshot first when this episode has not yet; apply queued writes after."""
    if state.extra.get("sandbox_ready") is not sandbox:
        sandbox.reset()
        sandbox.put_files({SNAPSHOT: json.dumps(_snapshot(state))})
        setup = sandbox.run_python(PRELUDE + f"\nfhir = _FhirSnapshot({SNAPSHOT!r})\n", timeout=timeout)
        if setup.exit_code != 0:
            raise ToolError(f"the sandbox could not load the FHIR snapshot: {setup.stderr[-500:]}")
        state.extra["sandbox_ready"] = sandbox
    result = sandbox.run_python(code, timeout=timeout)
    output = result.stdout + (("\n" + result.stderr) if result.stderr else "")
    if result.timed_out:
        output += f"\n[timed out after {timeout:g} s]"
    queued: Any = []
    try:
        raw = sandbox.get_file(WRITES, max_bytes=1 << 20)
    except FileNotFoundError:
        raw = None
    except SandboxError as error:
        raw = None
        output += f"\n[queued writes not read: {error}]"
    if raw is not None:
        sandbox.run_python(f"import os; os.remove({WRITES!r})", timeout=5)
        try:
            queued = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            queued = None
        if not isinstance(queued, list):
            output += f"\n[queued writes ignored: {WRITES} must hold a JSON list of resources; use fhir.create(resource)]"
            queued = []
    for resource in queued:
        kind = resource.get("resourceType") if isinstance(resource, dict) else None
        if kind not in WRITE_TOOLS:
            output += f"\n[write refused: only {', '.join(sorted(WRITE_TOOLS))} may be created]"
            continue
        try:
            created = _create(state, resource, kind)
            output += f"\n[created {created['created']}]"
        except ToolError as error:
            output += f"\n[write failed: {error}]"
    return output.strip() or "(no output)"
