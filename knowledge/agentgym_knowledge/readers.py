"""Corpus readers: turn files and folders into passages, reporting what was wrong without stopping.

Formats recognised by file name and content:
- JSONL (`.jsonl`, `.json` with one object a line): `id` and `text`, optional `title` and `source`; MedRAG-style
  records (`contents` or `content`, `title`); MedQuAD-style records (`answer`, `focus`) are read too.
- MedQuAD-style XML (`.xml` files with `<Document>` / `<QAPair>`), one passage per answered question.
- Plain text (`.txt`, `.md`, anything else that decodes as text): split into passages at sentence boundaries.

Every passage longer than `chunk_size` words is split (the embedder would silently cut it otherwise), and the
report says so. Files that are not UTF-8 are decoded as cp1252 (or Latin-1) and the report says so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

DEFAULT_CHUNK_SIZE = 200  # words; all-MiniLM-L6-v2 reads at most 256 word pieces, about 200 English words
DEFAULT_OVERLAP = 40  # words shared by consecutive chunks of one document
TEXT_FIELDS = ("text", "content", "contents", "answer")
TITLE_FIELDS = ("title", "focus")
JSONL_SUFFIXES = {".jsonl", ".ndjson", ".json"}
TEXT_SUFFIXES = {".txt", ".md", ".text", ".rst"}
SKIPPED_SUFFIXES = {".gz", ".zip", ".tar", ".pdf", ".png", ".jpg", ".jpeg", ".bin", ".npy", ".faiss", ".sqlite"}

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\n\s*\n")


class EmptyCorpusError(ValueError):
    """Raised when a corpus yields no passage at all."""


@dataclass(frozen=True)
class Document:
    """One record read from a corpus, before chunking. `origin` is `file:line` (or the file) for messages."""

    id: str
    text: str
    title: str = ""
    source: str = ""
    origin: str = ""
    whole_file: bool = False  # a plain-text file, expected to be cut; a record being cut is worth reporting


@dataclass(frozen=True)
class PassageRecord:
    """One passage to index. `document_id` is the id of the record it was cut from (equal to `id` if uncut)."""

    id: str
    text: str
    title: str
    source: str
    document_id: str


@dataclass
class ReadReport:
    """What reading a corpus found wrong or changed. `problems` lines read `file:line: what happened`."""

    problems: list[str] = field(default_factory=list)
    files: int = 0
    documents: int = 0
    passages: int = 0
    split_documents: int = 0
    split_pieces: int = 0
    duplicates: int = 0
    malformed: int = 0

    def summary(self) -> list[str]:
        """Problems plus one line per kind of change that affects many passages (splits)."""
        lines = list(self.problems)
        if self.split_documents:
            lines.append(
                f"{self.split_documents} passage(s) longer than the chunk size were split into "
                f"{self.split_pieces} pieces (ids get a '#N' suffix; raise --chunk-size to split less)"
            )
        return lines


def decode_bytes(raw: bytes, name: str, report: ReadReport) -> str:
    """Decode file bytes as UTF-8, else cp1252, else Latin-1 (which never fails); report any fallback."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        position = error.start
    for encoding in ("cp1252", "latin-1"):
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError:
            continue
        report.problems.append(
            f"{name}: not valid UTF-8 (first bad byte at offset {position}); decoded as {encoding}. "
            "Re-save the file as UTF-8 if characters look wrong."
        )
        return text
    raise AssertionError("latin-1 decodes every byte string")  # pragma: no cover


def split_sentences(text: str) -> list[str]:
    """Split text into sentences at `.`, `!`, `?` followed by a capital or digit, and at blank lines."""
    pieces = [piece.strip() for piece in _SENTENCE_END.split(text)]
    return [piece for piece in pieces if piece]


def chunk_text(text: str, chunk_size: int = DEFAULT_CHUNK_SIZE, overlap: int = DEFAULT_OVERLAP) -> list[str]:
    """Cut text into chunks of at most `chunk_size` words, ending at sentence boundaries where possible.

    Consecutive chunks share whole sentences worth up to `overlap` words. A single sentence longer than
    `chunk_size` words is cut at word boundaries. Raises ValueError for a non-positive size or an overlap not
    smaller than the size.
    """
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be a positive number of words, got {chunk_size}")
    if not 0 <= overlap < chunk_size:
        raise ValueError(f"overlap must be at least 0 and smaller than chunk_size ({chunk_size}), got {overlap}")
    sentences: list[list[str]] = []
    for sentence in split_sentences(text):
        words = sentence.split()
        while len(words) > chunk_size:
            sentences.append(words[:chunk_size])
            words = words[chunk_size - overlap :]
        if words:
            sentences.append(words)
    chunks: list[str] = []
    current: list[list[str]] = []
    current_words = 0
    index = 0
    while index < len(sentences):
        sentence_words = sentences[index]
        if current and current_words + len(sentence_words) > chunk_size:
            chunks.append(" ".join(" ".join(s) for s in current))
            carried: list[list[str]] = []
            carried_words = 0
            for previous in reversed(current):
                if carried_words + len(previous) > overlap or len(carried) + 1 >= len(current):
                    break
                carried.insert(0, previous)
                carried_words += len(previous)
            current, current_words = carried, carried_words
            continue
        current.append(sentence_words)
        current_words += len(sentence_words)
        index += 1
    if current:
        chunks.append(" ".join(" ".join(s) for s in current))
    return chunks


def _first_string(record: dict[str, object], names: Iterable[str]) -> str:
    for name in names:
        value = record.get(name)
        if isinstance(value, str) and value.strip():
            return value
    return ""


def read_jsonl(path: Path, report: ReadReport, default_source: str) -> Iterator[Document]:
    """Yield one Document per JSON line; malformed lines are reported with file and line and skipped."""
    text = decode_bytes(path.read_bytes(), str(path), report)
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        origin = f"{path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            report.malformed += 1
            report.problems.append(f"{origin}: not valid JSON ({error.msg} at column {error.colno}); line skipped")
            continue
        if not isinstance(record, dict):
            report.malformed += 1
            report.problems.append(f"{origin}: expected a JSON object, got {type(record).__name__}; line skipped")
            continue
        # MedRAG puts the title inside `contents`; `content` is the body alone, so it wins when both exist.
        body = _first_string(record, TEXT_FIELDS)
        if not body:
            report.malformed += 1
            report.problems.append(
                f"{origin}: no text; give the passage in one of the fields {', '.join(TEXT_FIELDS)}; line skipped"
            )
            continue
        raw_id = record.get("id", record.get("_id", record.get("doc_id")))
        identifier = str(raw_id) if raw_id not in (None, "") else f"{path.stem}:{number}"
        source = record.get("source")
        yield Document(
            id=identifier,
            text=body,
            title=_first_string(record, TITLE_FIELDS),
            source=str(source) if source not in (None, "") else default_source,
            origin=origin,
        )


def _element_text(element: ElementTree.Element | None) -> str:
    if element is None:
        return ""
    return " ".join("".join(element.itertext()).split())


def read_medquad_xml(path: Path, report: ReadReport, default_source: str) -> Iterator[Document]:
    """Yield one Document per answered `<QAPair>` of a MedQuAD-style XML file.

    The id is `<folder number>_<Document id>_<pid>` when the folder name starts with a number (as MedQuAD's
    `8_NHLBI_QA_XML` does), else `<Document id>_<pid>`; the title is the document's `<Focus>`; the source is
    the document's `source` attribute.
    """
    raw = path.read_bytes()
    try:
        root = ElementTree.fromstring(raw)
    except ElementTree.ParseError as error:
        report.malformed += 1
        report.problems.append(f"{path}:{error.position[0]}: not well-formed XML ({error}); file skipped")
        return
    prefix_match = re.match(r"^(\d+)_", path.parent.name)
    prefix = f"{prefix_match.group(1)}_" if prefix_match else ""
    documents = [root] if root.tag == "Document" else list(root.iter("Document"))
    if not documents:
        report.problems.append(f"{path}: XML without a <Document> element; file skipped")
        return
    for document in documents:
        document_id = document.get("id") or path.stem
        focus = _element_text(document.find("Focus"))
        source = document.get("source") or default_source
        for pair_number, pair in enumerate(document.iter("QAPair"), start=1):
            answer = _element_text(pair.find("Answer"))
            if not answer:
                continue  # MedQuAD removed some answers for copyright; an empty answer is not an error
            pid = pair.get("pid") or str(pair_number)
            yield Document(
                id=f"{prefix}{document_id}_{pid}",
                text=answer,
                title=focus,
                source=source,
                origin=f"{path} (QAPair {pid})",
            )


def read_plain_text(path: Path, report: ReadReport, default_source: str) -> Iterator[Document]:
    """Yield the whole file as one Document; chunking into passages happens later, like for every record."""
    text = decode_bytes(path.read_bytes(), str(path), report)
    if text.strip():
        yield Document(id=path.stem, text=text, title=path.stem.replace("_", " "), source=default_source,
                       origin=str(path), whole_file=True)


def _is_medquad_xml(path: Path) -> bool:
    with path.open("rb") as handle:
        head = handle.read(2048)
    return b"<Document" in head or b"<QAPair" in head


def iter_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Yield the corpus files under the given files and folders, sorted, skipping hidden and binary files.

    Raises FileNotFoundError for a path that does not exist.
    """
    for given in paths:
        path = Path(given)
        if not path.exists():
            raise FileNotFoundError(f"corpus path {path} does not exist; pass a JSONL, XML or text file or a folder")
        if path.is_file():
            yield path
            continue
        for child in sorted(path.rglob("*")):
            hidden = any(part.startswith(".") for part in child.relative_to(path).parts)
            if child.is_file() and not hidden and child.suffix.lower() not in SKIPPED_SUFFIXES:
                yield child


def read_documents(paths: Iterable[str | Path], report: ReadReport) -> Iterator[Document]:
    """Read every corpus file, choosing the reader from the suffix (and, for `.xml`, the content)."""
    for path in iter_files(paths):
        report.files += 1
        suffix = path.suffix.lower()
        default_source = path.parent.name if path.parent.name else path.stem
        if suffix in JSONL_SUFFIXES:
            default_source = path.stem
            yield from read_jsonl(path, report, default_source)
        elif suffix == ".xml":
            if _is_medquad_xml(path):
                yield from read_medquad_xml(path, report, default_source)
            else:
                report.problems.append(f"{path}: XML but not MedQuAD-style (no <Document>/<QAPair>); file skipped")
        else:
            yield from read_plain_text(path, report, path.stem if suffix in TEXT_SUFFIXES else default_source)


def read_passages(
    paths: Iterable[str | Path],
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    overlap: int = DEFAULT_OVERLAP,
    report: ReadReport | None = None,
) -> Iterator[PassageRecord]:
    """Read documents and cut them into passages of at most `chunk_size` words, dropping duplicate ids.

    A repeated id keeps its first passage; later ones are reported (file and line) and skipped. Records longer
    than `chunk_size` words become passages `ID#0`, `ID#1`, ... (counted in the report).
    """
    report = report if report is not None else ReadReport()
    seen: set[str] = set()
    for document in read_documents(paths, report):
        report.documents += 1
        if document.id in seen:
            report.duplicates += 1
            report.problems.append(f"{document.origin}: duplicate id {document.id!r}; kept the first, skipped this one")
            continue
        seen.add(document.id)
        words = document.text.split()
        if len(words) <= chunk_size:
            report.passages += 1
            yield PassageRecord(document.id, " ".join(words), document.title, document.source, document.id)
            continue
        pieces = chunk_text(document.text, chunk_size, overlap)
        if len(pieces) > 1 and not document.whole_file:
            report.split_documents += 1
            report.split_pieces += len(pieces)
        for number, piece in enumerate(pieces):
            piece_id = f"{document.id}#{number}" if len(pieces) > 1 else document.id
            seen.add(piece_id)
            report.passages += 1
            yield PassageRecord(piece_id, piece, document.title, document.source, document.id)
