"""Import FHIR data users bring: Bundles (transaction, batch or collection; JSON or gzipped; a file or a
folder of them) and bulk-export NDJSON (one resource per line, ``.ndjson`` or ``.ndjson.gz``).

References are resolved across everything imported at once: ``urn:uuid:`` full URLs and absolute URLs
become ``Type/id``, conditional references (``Patient?identifier=system|value``, URL-encoded or not) are
looked up among the imported resources, references inside contained resources too; a local reference
(``#id``) must name a contained resource. A Bundle entry with ``request.ifNoneExist`` (Synthea's practitioner
and hospital files) is skipped when a resource matching it was already imported or stored, and references to
it go to that resource. Files may be gzipped and carry a UTF-8 (or UTF-16) byte-order mark; NDJSON is read
line by line (blank lines and trailing whitespace are fine).

Bad input never stops an import: each problem is reported with its source, resource, element path, reason and
kind (`ImportReport.by_reason` counts them, with a few examples each), and the valid rest is imported. The
whole import is written in one transaction, so a failure part-way leaves the store as it was.
"""

from __future__ import annotations

import codecs
import gzip
import json
import os
import uuid
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO, Any, cast
from urllib.parse import unquote

from agentgym_fhir.errors import FhirError
from agentgym_fhir.search_params import reference_target
from agentgym_fhir.store import FhirStore, now_instant, prepare
from agentgym_fhir.validation import model_for, validate_resource

SUFFIXES = (".json", ".json.gz", ".ndjson", ".ndjson.gz", ".jsonl", ".jsonl.gz")
EXAMPLES_PER_REASON = 3

# Issue kinds: why a resource or file was not imported (errors) or what was kept as written (warnings).
UNREADABLE = "unreadable-file"
ENCODING = "not-utf8"
MALFORMED = "malformed-json"
NOT_A_RESOURCE = "not-a-resource"
UNKNOWN_TYPE = "unknown-resource-type"
INVALID = "invalid-resource"
DUPLICATE = "duplicate-id"
UNSUPPORTED_ENTRY = "unsupported-bundle-entry"
UNINDEXABLE = "unindexable"
ALREADY_PRESENT = "already-present"
DANGLING = "unresolved-reference"
LOCAL_REFERENCE = "missing-contained-resource"
BUNDLE_TYPE = "bundle-type"


@dataclass
class ImportIssue:
    """One problem found while importing.

    Attributes:
        source: Where: ``file``, ``file:line`` (NDJSON) or ``file#entry[i]`` (Bundle).
        resource: ``Type/id`` of the resource concerned, when known.
        path: The element at fault (``Observation.subject.reference``), when known.
        reason: What is wrong, in words.
        severity: ``error`` (the resource or file was skipped) or ``warning`` (imported anyway).
        kind: The reason's category (``malformed-json``, ``unknown-resource-type``, ``invalid-resource``,
            ``unresolved-reference``, ...), what `ImportReport.by_reason` counts.
    """

    source: str
    resource: str | None
    path: str | None
    reason: str
    severity: str = "error"
    kind: str = INVALID

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

    def by_reason(self) -> dict[str, dict[str, Any]]:
        """Issues grouped by kind, most frequent first: ``{kind: {"severity", "count", "examples"}}`` with up
        to `EXAMPLES_PER_REASON` examples (the issue as text) each."""
        groups: dict[str, dict[str, Any]] = {}
        for issue in self.issues:
            group = groups.setdefault(f"{issue.severity}:{issue.kind}", {
                "kind": issue.kind, "severity": issue.severity, "count": 0, "examples": []})
            group["count"] += 1
            if len(group["examples"]) < EXAMPLES_PER_REASON:
                group["examples"].append(str(issue))
        ordered = sorted(groups.values(), key=lambda g: (g["severity"] != "error", -g["count"], g["kind"]))
        return {g["kind"] if g["severity"] == "error" else f"{g['kind']} (warning)": {
            k: v for k, v in g.items() if k != "kind"} for g in ordered}

    def summary(self) -> str:
        types = ", ".join(f"{t} {n}" for t, n in sorted(self.by_type.items()))
        reasons = "; ".join(f"{kind} {group['count']}" for kind, group in self.by_reason().items())
        return (f"imported {self.imported} of {self.read} resources from {self.files} file(s); "
                f"{len(self.errors)} error(s), {len(self.warnings)} warning(s)" + (f" [{types}]" if types else "")
                + (f"; by reason: {reasons}" if reasons else ""))

    def to_dict(self) -> dict[str, Any]:
        return {"files": self.files, "read": self.read, "imported": self.imported, "by_type": dict(self.by_type),
                "by_reason": self.by_reason(), "issues": [vars(i) for i in self.issues]}


@dataclass
class _Candidate:
    resource: dict[str, Any]
    source: str
    full_url: str | None
    if_none_exist: str | None = None  # ``Type?criteria`` of a conditional create entry


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


_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def _encoding(head: bytes) -> str:
    """The text encoding a file's first bytes announce (FHIR JSON is UTF-8; a BOM may say otherwise)."""
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    return "utf-8"


def _open_binary(path: Path) -> IO[bytes]:
    with path.open("rb") as probe:
        gzipped = probe.read(2) == b"\x1f\x8b"
    return cast(IO[bytes], gzip.open(path, "rb")) if gzipped else path.open("rb")


_READ_ERRORS = (OSError, EOFError, zlib.error)  # gzip.BadGzipFile is an OSError


def _read_file(path: Path, report: ImportReport) -> Iterator[_Candidate]:
    lower = path.name.lower()
    if ".ndjson" in lower or ".jsonl" in lower:
        yield from _read_ndjson(path, report)
        return
    name = str(path)
    try:
        with _open_binary(path) as stream:
            raw = stream.read()
        text = raw.decode(_encoding(raw[:4]))
    except _READ_ERRORS as error:
        report.issues.append(ImportIssue(name, None, None, f"cannot read the file: {error}", kind=UNREADABLE))
        return
    except UnicodeDecodeError as error:
        report.issues.append(ImportIssue(name, None, None, f"not UTF-8 text (byte {error.start}: {error.reason}); "
                                         "FHIR JSON must be UTF-8", kind=ENCODING))
        return
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        report.issues.append(ImportIssue(name, None, None, f"malformed JSON: {error.msg} at line {error.lineno} "
                                         f"column {error.colno}", kind=MALFORMED))
        return
    if isinstance(document, dict) and document.get("resourceType") == "Bundle":
        yield from _bundle_entries(document, name, report)
    elif isinstance(document, list):  # some exports write a JSON array of resources
        for index, item in enumerate(document):
            yield _Candidate(item, f"{name}[{index}]", None)
    else:
        yield _Candidate(document, name, None)


def _read_ndjson(path: Path, report: ImportReport) -> Iterator[_Candidate]:
    """One resource per line, read as a stream (bulk-export files can be gigabytes). Lines split on ``\\n``
    only: U+2028 and other Unicode line breaks are valid inside JSON strings."""
    name = str(path)
    try:
        with _open_binary(path) as stream:
            head = stream.read(4)
            encoding = _encoding(head)
            if encoding.startswith(("utf-16", "utf-32")):  # rare; their line breaks are not single bytes
                lines: Iterator[bytes] | list[bytes] = (head + stream.read()).decode(encoding).encode().split(b"\n")
                encoding = "utf-8"
            else:
                lines = _lines(head, stream)
            for number, raw in enumerate(lines, start=1):
                if number == 1 and encoding == "utf-8-sig":
                    raw = raw.removeprefix(codecs.BOM_UTF8)
                if not raw.strip():
                    continue
                where = f"{name}:{number}"
                try:
                    resource = json.loads(raw.decode("utf-8"))
                except UnicodeDecodeError as error:
                    report.issues.append(ImportIssue(where, None, None, f"not UTF-8 text (byte {error.start}: "
                                                     f"{error.reason}); FHIR JSON must be UTF-8", kind=ENCODING))
                    continue
                except json.JSONDecodeError as error:
                    report.issues.append(ImportIssue(where, None, None, f"malformed JSON: {error.msg} at column "
                                                     f"{error.colno}", kind=MALFORMED))
                    continue
                yield _Candidate(resource, where, None)
    except _READ_ERRORS as error:
        report.issues.append(ImportIssue(name, None, None, f"cannot read the file: {error}", kind=UNREADABLE))
    except UnicodeDecodeError as error:
        report.issues.append(ImportIssue(name, None, None, f"not {error.encoding} text ({error.reason})",
                                         kind=ENCODING))


def _lines(head: bytes, stream: IO[bytes]) -> Iterator[bytes]:
    first = head + stream.readline()
    yield first
    yield from stream


_SKIPPED_METHODS = {"DELETE": "DELETE entries are not imported (nothing is deleted)",
                    "GET": "GET entries are reads, not resources to import",
                    "HEAD": "HEAD entries are reads, not resources to import",
                    "PATCH": "PATCH entries are not imported (a patch is not a resource)"}


def _bundle_entries(document: dict[str, Any], name: str, report: ImportReport) -> Iterator[_Candidate]:
    kind = document.get("type")
    if kind not in ("transaction", "batch", "collection", "searchset", "document", "message", None):
        report.issues.append(ImportIssue(name, None, "Bundle.type", f"Bundle type {kind!r} is not importable",
                                         "warning", kind=BUNDLE_TYPE))
    entries = document.get("entry") or []
    if not isinstance(entries, list):
        report.issues.append(ImportIssue(name, None, "Bundle.entry", "Bundle.entry is not a list",
                                         kind=NOT_A_RESOURCE))
        return
    for index, entry in enumerate(entries):
        where = f"{name}#entry[{index}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("resource"), dict):
            report.issues.append(ImportIssue(where, None, "Bundle.entry.resource", "the entry has no resource",
                                             kind=NOT_A_RESOURCE))
            continue
        request: dict[str, Any] = entry["request"] if isinstance(entry.get("request"), dict) else {}
        method = str(request.get("method") or "POST").upper()
        resource = entry["resource"]
        if method in _SKIPPED_METHODS:
            report.issues.append(ImportIssue(where, None, "Bundle.entry.request.method", _SKIPPED_METHODS[method],
                                             kind=UNSUPPORTED_ENTRY))
            continue
        url = str(request.get("url") or "")
        path_part = url.split("?", 1)[0].strip("/").split("/")
        if method == "PUT" and "?" not in url and len(path_part) >= 2 and not resource.get("id"):
            resource = {**resource, "id": path_part[-1]}  # PUT Type/id names the id; PUT Type?criteria does not
        condition = None
        if method == "POST" and isinstance(request.get("ifNoneExist"), str) and request["ifNoneExist"].strip():
            condition = f"{resource.get('resourceType')}?{request['ifNoneExist'].strip().lstrip('?')}"
        full_url = entry.get("fullUrl") if isinstance(entry.get("fullUrl"), str) else None
        yield _Candidate(resource, where, full_url, condition)


def _identifier_keys(resource: dict[str, Any]) -> Iterator[str]:
    """The conditional names a resource answers to: ``Type?identifier=system|value`` and ``Type?identifier=value``."""
    identifiers = resource.get("identifier")
    for identifier in identifiers if isinstance(identifiers, list) else []:
        if isinstance(identifier, dict) and identifier.get("value"):
            value = identifier["value"]
            yield f"{resource['resourceType']}?identifier={identifier.get('system', '')}|{value}"
            yield f"{resource['resourceType']}?identifier={value}"


def _conditional_key(reference: str) -> str:
    """A conditional reference or ifNoneExist in the form `_identifier_keys` writes (URL-decoded)."""
    return unquote(reference.strip())


def _stored_match(store: FhirStore, condition: str) -> str | None:
    """``Type/id`` of the one stored resource matching ``Type?criteria``, or None (none, several, or criteria
    this store cannot search)."""
    from urllib.parse import parse_qs

    resource_type, _, query = condition.partition("?")
    params: dict[str, str | list[str]] = {k: v[0] if len(v) == 1 else v
                                          for k, v in parse_qs(query, keep_blank_values=True).items()}
    if store.count() == 0 or not params:
        return None
    try:
        found = store.search(resource_type, {**params, "_count": "2", "_total": "none"}).entries
    except FhirError:
        return None
    return f"{resource_type}/{found[0]['id']}" if len(found) == 1 else None


def _rewrite(value: Any, path: str, resolve: Callable[[str, str], str | None]) -> Any:
    """A copy of ``value`` with every ``reference`` passed through ``resolve``."""
    if isinstance(value, dict):
        out = {}
        for key, child in value.items():
            if key == "reference" and isinstance(child, str):
                resolved = resolve(child, f"{path}.reference")
                out[key] = resolved if resolved is not None else child
            else:  # contained resources included: their references point outside as the container's do
                out[key] = _rewrite(child, f"{path}.{key}", resolve)
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
                                             "not a FHIR resource (no resourceType)", kind=NOT_A_RESOURCE))
            continue
        if candidate.if_none_exist:
            condition = _conditional_key(candidate.if_none_exist)
            existing = names.get(condition) or _stored_match(store, condition)
            if existing is not None:
                # a conditional create whose resource is already here: references to this entry go to it
                if candidate.full_url:
                    names[candidate.full_url] = existing
                report.issues.append(ImportIssue(candidate.source, existing, "Bundle.entry.request.ifNoneExist",
                                                 f"{existing} already matches {condition}; this entry was not "
                                                 "created again", "warning", kind=ALREADY_PRESENT))
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
                                             "this copy was skipped", kind=DUPLICATE))
            continue
        seen[key] = candidate.source
        target = f"{key[0]}/{key[1]}"
        if candidate.full_url:
            names[candidate.full_url] = target
        names[target] = target
        for name in _identifier_keys(resource):
            names.setdefault(name, target)
        if candidate.if_none_exist:
            names.setdefault(_conditional_key(candidate.if_none_exist), target)
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
            if reference.startswith("#"):
                report.issues.append(ImportIssue(item.source, item.label, element,
                                                 f"local reference {reference!r} names no contained resource; "
                                                 "kept as written", "warning", kind=LOCAL_REFERENCE))
                continue
            if resolved is not None and _exists(store, resolved):
                continue
            report.issues.append(ImportIssue(item.source, item.label, element,
                                             f"reference {reference!r} points to nothing in this import or the "
                                             "store; kept as written", "warning", kind=DANGLING))
        if item.error is not None:
            report.issues.append(ImportIssue(item.source, item.label, item.error[0], item.error[1],
                                             kind=item.error[2]))
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
    error: tuple[str | None, str, str] | None = None  # (element, reason, kind)
    unresolved: list[tuple[str, str, str | None]] = field(default_factory=list)


def _check_chunk(jobs: list[tuple[dict[str, Any], str]], *, validate: bool, now: str) -> list[_Checked]:
    """Resolve references, validate and prepare store rows for a batch of resources (runs in workers)."""
    names = _NAMES
    results = []
    for resource, source in jobs:
        label = f"{resource['resourceType']}/{resource['id']}"
        item = _Checked(source, label)
        contained = resource.get("contained")
        local_ids = {f"#{c.get('id')}" for c in contained if isinstance(c, dict)} if isinstance(contained, list) \
            else set()

        def resolve(reference: str, path: str, item: _Checked = item, local_ids: set[str] = local_ids) -> str | None:
            if reference.startswith("#"):
                if reference != "#" and reference not in local_ids:  # "#" alone is the container itself
                    item.unresolved.append((path, reference, None))
                return None
            if reference in names:
                return names[reference]
            if "?" in reference:
                key = _conditional_key(reference)
                if key in names:
                    return names[key]
            target = reference_target(reference) if not reference.startswith("urn:") else None
            if target is not None and target in names:
                return target
            item.unresolved.append((path, reference, target))  # the caller checks the store for it
            return target

        rewritten = _rewrite(resource, resource["resourceType"], resolve)
        if validate:
            try:
                model_for(rewritten["resourceType"])
            except FhirError as error:
                item.error = ("resourceType", f"{error.message}; the resource was skipped", UNKNOWN_TYPE)
                item.unresolved.clear()  # a skipped resource's references do not matter
                results.append(item)
                continue
            try:
                validate_resource(rewritten)
            except FhirError as error:
                item.error = (", ".join(error.expression) or None, error.message, INVALID)
                results.append(item)
                continue
        meta = dict(rewritten["meta"]) if isinstance(rewritten.get("meta"), dict) else {}
        meta.setdefault("versionId", "1")
        meta.setdefault("lastUpdated", now)
        rewritten = {"resourceType": rewritten["resourceType"], "id": str(rewritten["id"]), "meta": meta,
                     **{k: v for k, v in rewritten.items() if k not in ("resourceType", "id", "meta")}}
        try:
            item.prepared = prepare(rewritten)
        except (ValueError, TypeError, AttributeError, KeyError) as error:  # only reachable with validate=False
            item.error = (None, f"cannot index: {type(error).__name__}: {error}", UNINDEXABLE)
        results.append(item)
    return results


def _exists(store: FhirStore, target: str) -> bool:
    resource_type, resource_id = target.split("/", 1)
    try:
        store.read(resource_type, resource_id)
    except FhirError:
        return False
    return True


__all__ = ["EXAMPLES_PER_REASON", "ImportIssue", "ImportReport", "find_files", "import_files"]
