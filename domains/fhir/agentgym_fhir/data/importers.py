"""Import FHIR data users bring: Bundles (transaction, batch or collection; JSON or gzipped; a file or a
folder of them) and bulk-export NDJSON (one resource per line, ``.ndjson`` or ``.ndjson.gz``).

References are resolved across everything imported at once: ``urn:uuid:`` full URLs and absolute URLs
become ``Type/id``, conditional references (``Patient?identifier=system|value``) are looked up among the
imported resources. Bad input never stops an import: each problem is reported with its source, resource,
element path and reason, and the valid rest is imported. The whole import is written in one transaction,
so a failure part-way leaves the store as it was.
"""

from __future__ import annotations

import gzip
import json
import os
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from agentgym_fhir.errors import FhirError
from agentgym_fhir.search_params import reference_target
from agentgym_fhir.store import FhirStore, now_instant, prepare
from agentgym_fhir.validation import model_for, validate_resource

SUFFIXES = (".json", ".json.gz", ".ndjson", ".ndjson.gz", ".jsonl", ".jsonl.gz")


@dataclass
class ImportIssue:
    """One problem found while importing.

    Attributes:
        source: Where: ``file``, ``file:line`` (NDJSON) or ``file#entry[i]`` (Bundle).
        resource: ``Type/id`` of the resource concerned, when known.
        path: The element at fault (``Observation.subject.reference``), when known.
        reason: What is wrong, in words.
        severity: ``error`` (the resource or file was skipped) or ``warning`` (imported anyway).
    """

    source: str
    resource: str | None
    path: str | None
    reason: str
    severity: str = "error"

    def __str__(self) -> str:
        where = " ".join(part for part in (self.source, self.resource, self.path) if part)
        return f"{self.severity}: {where}: {self.reason}"


@dataclass
class ImportReport:
    """What an import did: counts per type and every issue."""

    files: int = 0
    read: int = 0
    imported: int = 0
    by_type: Counter[str] = field(default_factory=Counter)
    issues: list[ImportIssue] = field(default_factory=list)

    @property
    def errors(self) -> list[ImportIssue]:
        return [i for i in self.issues if i.severity == "error"]

    @property
    def warnings(self) -> list[ImportIssue]:
        return [i for i in self.issues if i.severity == "warning"]

    def summary(self) -> str:
        types = ", ".join(f"{t} {n}" for t, n in sorted(self.by_type.items()))
        return (f"imported {self.imported} of {self.read} resources from {self.files} file(s); "
                f"{len(self.errors)} error(s), {len(self.warnings)} warning(s)" + (f" [{types}]" if types else ""))

    def to_dict(self) -> dict[str, Any]:
        return {"files": self.files, "read": self.read, "imported": self.imported, "by_type": dict(self.by_type),
                "issues": [vars(i) for i in self.issues]}


@dataclass
class _Candidate:
    resource: dict[str, Any]
    source: str
    full_url: str | None


def find_files(source: Path) -> list[Path]:
    """The importable files at ``source``: the file itself, or every matching file under a folder (sorted).

    Raises:
        FhirError: the path does not exist, or a folder holds no importable files.
    """
    if source.is_file():
        return [source]
    if not source.is_dir():
        raise FhirError(f"{source} does not exist; give a Bundle file, an NDJSON file or a folder of them",
                        404, "not-found")
    files = sorted(p for p in source.rglob("*") if p.is_file() and p.name.lower().endswith(SUFFIXES))
    if not files:
        raise FhirError(f"no {', '.join(SUFFIXES)} files under {source}", 400, "not-found")
    return files


def _open_text(path: Path) -> str:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8-sig")


def _read_file(path: Path, report: ImportReport) -> Iterator[_Candidate]:
    name = str(path)
    try:
        text = _open_text(path)
    except (OSError, UnicodeDecodeError, EOFError, gzip.BadGzipFile) as error:
        report.issues.append(ImportIssue(name, None, None, f"cannot read the file: {error}"))
        return
    lower = path.name.lower()
    if ".ndjson" in lower or ".jsonl" in lower:
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                resource = json.loads(line)
            except json.JSONDecodeError as error:
                report.issues.append(ImportIssue(f"{name}:{number}", None, None, f"malformed JSON: {error.msg} "
                                                 f"at column {error.colno}"))
                continue
            yield _Candidate(resource, f"{name}:{number}", None)
        return
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        report.issues.append(ImportIssue(name, None, None, f"malformed JSON: {error.msg} at line {error.lineno} "
                                         f"column {error.colno}"))
        return
    if isinstance(document, dict) and document.get("resourceType") == "Bundle":
        kind = document.get("type")
        if kind not in ("transaction", "batch", "collection", "searchset", "document", "message", None):
            report.issues.append(ImportIssue(name, None, "Bundle.type", f"Bundle type {kind!r} is not importable",
                                             "warning"))
        for index, entry in enumerate(document.get("entry") or []):
            where = f"{name}#entry[{index}]"
            if not isinstance(entry, dict) or not isinstance(entry.get("resource"), dict):
                report.issues.append(ImportIssue(where, None, "Bundle.entry.resource", "the entry has no resource"))
                continue
            request = entry.get("request") or {}
            method = request.get("method", "POST")
            resource = entry["resource"]
            if method == "DELETE":
                report.issues.append(ImportIssue(where, None, "Bundle.entry.request.method",
                                                 "DELETE entries are not imported"))
                continue
            if method == "PUT" and not resource.get("id") and "/" in request.get("url", ""):
                resource = {**resource, "id": request["url"].split("?")[0].rstrip("/").split("/")[-1]}
            yield _Candidate(resource, where, entry.get("fullUrl"))
    else:
        yield _Candidate(document, name, None)


def _identifier_keys(resource: dict[str, Any]) -> Iterator[str]:
    for identifier in resource.get("identifier") or []:
        if isinstance(identifier, dict) and identifier.get("value"):
            value = identifier["value"]
            yield f"{resource['resourceType']}?identifier={identifier.get('system', '')}|{value}"
            yield f"{resource['resourceType']}?identifier={value}"


def _rewrite(value: Any, path: str, resolve: Callable[[str, str], str | None]) -> Any:
    """A copy of ``value`` with every ``reference`` passed through ``resolve``."""
    if isinstance(value, dict):
        out = {}
        for key, child in value.items():
            if key == "reference" and isinstance(child, str):
                resolved = resolve(child, f"{path}.reference")
                out[key] = resolved if resolved is not None else child
            elif key != "contained":
                out[key] = _rewrite(child, f"{path}.{key}", resolve)
            else:
                out[key] = child
        return out
    if isinstance(value, list):
        return [_rewrite(item, path, resolve) for item in value]
    return value


def import_files(store: FhirStore, sources: list[Path] | Path, *, validate: bool = True,
                 progress: Callable[[str, int, int], None] | None = None) -> ImportReport:
    """Import Bundles and NDJSON into ``store`` in one transaction.

    Args:
        store: A writable store (``FhirStore.create`` or ``FhirStore.open(..., readonly=False)``).
        sources: Files or folders.
        validate: Check each resource against the FHIR R4 models (slower; off only for trusted data).
        progress: Called as ``progress(stage, done, total)`` for progress bars.

    Returns:
        The report: resources read and imported, per type, and every issue (errors skip a resource or a
        file; warnings, such as a reference to a resource that is not in the import or the store, do not).
    """
    paths = [sources] if isinstance(sources, Path) else list(sources)
    report = ImportReport()
    files = [f for source in paths for f in find_files(Path(source))]
    report.files = len(files)
    candidates: list[_Candidate] = []
    for number, path in enumerate(files, start=1):
        candidates.extend(_read_file(path, report))
        if progress:
            progress("reading", number, len(files))
    report.read = len(candidates)

    # Ids and the map from every name a resource goes by (fullUrl, Type/id, identifiers) to Type/id.
    accepted: list[_Candidate] = []
    names: dict[str, str] = {}
    seen: dict[tuple[str, str], str] = {}
    for candidate in candidates:
        resource = candidate.resource
        resource_type = resource.get("resourceType") if isinstance(resource, dict) else None
        if not isinstance(resource_type, str) or not resource_type[:1].isupper():
            report.issues.append(ImportIssue(candidate.source, None, "resourceType",
                                             "not a FHIR resource (no resourceType)"))
            continue
        if not resource.get("id"):
            if candidate.full_url and candidate.full_url.startswith("urn:uuid:"):
                new_id = candidate.full_url[len("urn:uuid:"):]
            else:
                new_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"agentgym-import:{candidate.source}"))
            resource = candidate.resource = {**resource, "id": new_id}
        key = (resource_type, str(resource["id"]))
        if key in seen:
            report.issues.append(ImportIssue(candidate.source, f"{key[0]}/{key[1]}", f"{resource_type}.id",
                                             f"duplicate id: {key[0]}/{key[1]} was already read from {seen[key]}; "
                                             "this copy was skipped"))
            continue
        seen[key] = candidate.source
        target = f"{key[0]}/{key[1]}"
        if candidate.full_url:
            names[candidate.full_url] = target
        names[target] = target
        for name in _identifier_keys(resource):
            names.setdefault(name, target)
        accepted.append(candidate)

    now = now_instant()
    jobs = [(c.resource, c.source) for c in accepted]
    checked: list[_Checked] = []
    global _NAMES
    _NAMES = names
    try:
        workers = min(4, os.cpu_count() or 1)
        if workers > 1 and len(jobs) >= 4000:
            import multiprocessing

            if validate:  # build each type's model once here, so the forked workers inherit it
                for resource_type in {resource["resourceType"] for resource, _ in jobs}:
                    try:
                        model_for(resource_type)
                    except FhirError:
                        continue  # reported per resource by the workers

            # Validation dominates import time; worker processes (forked, so they share the name map)
            # check chunks in parallel and hand back rows ready to insert, in order.
            chunks = [jobs[i:i + 500] for i in range(0, len(jobs), 500)]
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                for number, part in enumerate(pool.imap(partial(_check_chunk, validate=validate, now=now), chunks), 1):
                    checked.extend(part)
                    if progress:
                        progress("checking", min(len(jobs), number * 500), len(jobs))
        else:
            checked = _check_chunk(jobs, validate=validate, now=now)
    finally:
        _NAMES = {}
    prepared = []
    for item in checked:
        for element, reference, resolved in item.unresolved:
            if resolved is not None and _exists(store, resolved):
                continue
            report.issues.append(ImportIssue(item.source, item.label, element,
                                             f"reference {reference!r} points to nothing in this import or the "
                                             "store; kept as written", "warning"))
        if item.error is not None:
            report.issues.append(ImportIssue(item.source, item.label, item.error[0], item.error[1]))
            continue
        assert item.prepared is not None
        prepared.append(item.prepared)
        report.by_type[item.prepared[0]] += 1
    empty = store.count() == 0
    with store.bulk_writer(defer_indexes=empty and len(prepared) > 5000) as writer:
        writer.check_existing = not empty
        for number, row in enumerate(prepared, start=1):
            writer.put_prepared(row)
            if progress and number % 5000 == 0:
                progress("writing", number, len(prepared))
    report.imported = len(prepared)
    return report


_NAMES: dict[str, str] = {}


@dataclass
class _Checked:
    source: str
    label: str
    prepared: Any = None
    error: tuple[str | None, str] | None = None
    unresolved: list[tuple[str, str, str | None]] = field(default_factory=list)


def _check_chunk(jobs: list[tuple[dict[str, Any], str]], *, validate: bool, now: str) -> list[_Checked]:
    """Resolve references, validate and prepare store rows for a batch of resources (runs in workers)."""
    names = _NAMES
    results = []
    for resource, source in jobs:
        label = f"{resource['resourceType']}/{resource['id']}"
        item = _Checked(source, label)

        def resolve(reference: str, path: str, item: _Checked = item) -> str | None:
            if reference.startswith("#"):
                return None
            if reference in names:
                return names[reference]
            target = reference_target(reference) if not reference.startswith("urn:") and "?" not in reference else None
            if target is not None and target in names:
                return target
            item.unresolved.append((path, reference, target))  # the caller checks the store for it
            return target

        rewritten = _rewrite(resource, resource["resourceType"], resolve)
        if validate:
            try:
                validate_resource(rewritten)
            except FhirError as error:
                item.error = (", ".join(error.expression) or None, error.message)
                results.append(item)
                continue
        meta = dict(rewritten.get("meta") or {})
        meta.setdefault("versionId", "1")
        meta.setdefault("lastUpdated", now)
        rewritten = {"resourceType": rewritten["resourceType"], "id": str(rewritten["id"]), "meta": meta,
                     **{k: v for k, v in rewritten.items() if k not in ("resourceType", "id", "meta")}}
        try:
            item.prepared = prepare(rewritten)
        except (ValueError, TypeError) as error:
            item.error = (None, f"cannot index: {error}")
        results.append(item)
    return results


def _exists(store: FhirStore, target: str) -> bool:
    resource_type, resource_id = target.split("/", 1)
    try:
        store.read(resource_type, resource_id)
    except FhirError:
        return False
    return True


__all__ = ["ImportIssue", "ImportReport", "find_files", "import_files"]
