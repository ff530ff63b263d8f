"""`KnowledgeBase`: build a searchable knowledge base from a corpus, load it, search it (dense, BM25, hybrid).

A knowledge base is a folder:
- `manifest.json`: counts, sources, embedder identity, index type and parameters, build settings.
- `passages.sqlite`: the passages (id, title, source, text) and their SQLite FTS5 index (BM25).
- `vectors.npy`: one float32 unit vector per embedded passage, memory-mapped when loaded.
- `vector_rows.npy`: for each vector, the passage row it belongs to (sources can be BM25-only).
- `index.faiss`: the FAISS index over `vectors.npy` (flat, HNSW or IVF-PQ; see `index.py`).

Building runs in two passes: the corpus is read into SQLite (fast), then passages are embedded in shards saved
under `build/`. An interrupted build run again with the same arguments reuses every finished shard.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agentgym_knowledge.embedder import Embedder, EmbedderError, SentenceTransformerEmbedder, resolve_embedder
from agentgym_knowledge.index import VectorIndex, build_index, choose_index_type, load_index, save_index
from agentgym_knowledge.readers import (
    DEFAULT_CHUNK_SIZE,
    DEFAULT_OVERLAP,
    EmptyCorpusError,
    PassageRecord,
    ReadReport,
    read_passages,
)

FORMAT_VERSION = 1
MODES = ("hybrid", "dense", "bm25")
MAX_QUERY_CHARS = 2000
MAX_K = 1000
# Hybrid fusion: each mode's scores over its top candidates are scaled to [0, 1] (best 1, worst 0) and
# combined with these weights. Dense leads, BM25 breaks its near-ties and brings in keyword-only hits. On the
# MedQuAD sample and ClinicalQA-v0's questions this beats both single modes on recall@1 and MRR, where plain
# reciprocal-rank fusion lost to dense alone (docs/knowledge.md, "Hybrid").
DENSE_WEIGHT = 0.8
BM25_WEIGHT = 1.0 - DENSE_WEIGHT
DEFAULT_SHARD_SIZE = 4096
MAX_BM25_TERMS = 32
# BM25 cost grows with the postings of the query's words, and a word in a tenth of the passages (ICD-10-CM's
# "icd", "10", "cm" in every code) adds almost nothing to the ranking (its idf is near 0) while costing most of
# the time. So the words are taken rarest first, a word in more than COMMON_WORD_SHARE of the passages (and in
# more than COMMON_WORD_POSTINGS: in a small KB every word is cheap) is left out, and words stop being added once
# their postings pass BM25_POSTINGS_BUDGET. The rarest word always stays.
COMMON_WORD_SHARE = 0.1
COMMON_WORD_POSTINGS = 2_000
BM25_POSTINGS_BUDGET = 10_000
_TERM_CACHE_SIZE = 200_000
_STOPWORDS = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "has", "have", "how", "i", "in", "is", "it", "its", "of", "on", "or", "that", "the", "their", "there", "these", "this", "to", "was", "what", "when", "where", "which", "who", "why", "will", "with", "you", "your"]
)


class KnowledgeBaseError(RuntimeError):
    """Raised for a folder that is not a usable knowledge base (missing, unfinished, wrong version)."""


class EmbedderMismatchError(KnowledgeBaseError):
    """Raised when a knowledge base is loaded with an embedder other than the one that built it."""


class QueryTruncatedWarning(UserWarning):
    """Warned when a query longer than `MAX_QUERY_CHARS` is cut before searching."""


@dataclass(frozen=True)
class Passage:
    """One search result. `score` is the mode's score (cosine, BM25, or fused reciprocal rank): higher is better.

    `document_id` is the id of the corpus record the passage was cut from (equal to `id` unless it was split).
    """

    id: str
    text: str
    title: str
    source: str
    score: float
    document_id: str = ""


@dataclass
class BuildReport:
    """What a build did: passages read, embedded, reused from an earlier interrupted run, and problems found."""

    passages: int = 0
    embedded: int = 0
    reused: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    @property
    def passages_per_second(self) -> float:
        """Embedding throughput of this run (passages embedded now, excluding reused shards)."""
        return self.embedded / self.seconds if self.seconds > 0 else 0.0


def _embedding_text(title: str, text: str) -> str:
    """Title and text, as the embedder sees them (the title often names what the passage is about)."""
    if title and not text.lower().startswith(title.lower()):
        return f"{title}. {text}"
    return text


def _query_words(query: str) -> list[str]:
    """The query's distinct content words (stopwords dropped, unless nothing else is left), at most
    `MAX_BM25_TERMS`."""
    terms: list[str] = []
    for word in re.findall(r"\w+", query.lower()):
        if word not in _STOPWORDS and word not in terms:
            terms.append(word)
        if len(terms) == MAX_BM25_TERMS:
            break
    if not terms:
        terms = list(dict.fromkeys(re.findall(r"\w+", query.lower())))[:MAX_BM25_TERMS]
    return terms


def _fts_query(words: list[str]) -> str:
    """An FTS5 OR-query of `words`, each quoted so no word is read as syntax."""
    return " OR ".join(f'"{word}"' for word in words)


def fuse(dense: list[tuple[int, float]], keyword: list[tuple[int, float]], k: int) -> list[tuple[int, float]]:
    """The top `k` rows of a weighted sum of the two rankings' min-max scaled scores (a row missing from one
    ranking scores 0 there), best first, ties by row."""
    fused: dict[int, float] = {}
    for weight, ranking in ((DENSE_WEIGHT, dense), (BM25_WEIGHT, keyword)):
        if not ranking:
            continue
        best, worst = ranking[0][1], ranking[-1][1]
        spread = best - worst
        for row, score in ranking:
            fused[row] = fused.get(row, 0.0) + weight * ((score - worst) / spread if spread > 0 else 1.0)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:k]


def _directory_size(path: Path) -> int:
    return sum(file.stat().st_size for file in path.rglob("*") if file.is_file())


class _Progress:
    """A rich progress bar with passages per second, or nothing when progress is off."""

    def __init__(self, enabled: bool, total: int, description: str) -> None:
        self.enabled = enabled
        self._bar: Any = None
        if enabled:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                ProgressColumn,
                TextColumn,
                TimeRemainingColumn,
            )
            from rich.text import Text

            class RateColumn(ProgressColumn):
                def render(self, task: Any) -> Text:
                    elapsed = task.finished_time if task.finished else task.elapsed
                    if not elapsed or not task.completed:
                        return Text("… passages/s")
                    return Text(f"{task.completed / elapsed:,.0f} passages/s")

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 RateColumn(), TimeRemainingColumn(), transient=False)
            self._bar.start()
            self._task = self._bar.add_task(description, total=total)

    def advance(self, count: int) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, count)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


class KnowledgeBase:
    """A loaded knowledge base. Make one with `KnowledgeBase.build(...)` or `KnowledgeBase.load(path)`.

    Thread-safe for searching: the SQLite connection is guarded by a lock.
    """

    def __init__(self, path: Path, manifest: dict[str, Any], embedder: Embedder, *,
                 use_gpu: bool | None = None) -> None:
        self.path = path
        self.manifest = manifest
        self.embedder = embedder
        self.build_report: BuildReport | None = None
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None  # started by the first hybrid search
        self._term_tables = False  # the temp tables `_bm25_words` reads, made on first use
        self._term_counts: dict[str, int] = {}
        self._connection = sqlite3.connect(f"file:{path / 'passages.sqlite'}?mode=ro", uri=True,
                                           check_same_thread=False)
        self._vectors = np.load(path / "vectors.npy", mmap_mode="r")
        self._vector_rows = np.load(path / "vector_rows.npy", mmap_mode="r")
        self._index: VectorIndex | None = None
        self._use_gpu = use_gpu
        self._allowed: dict[str, np.ndarray] = {}

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(cls, path: str | Path, *, embedder: Embedder | str | Path | None = None,
             use_gpu: bool | None = None) -> KnowledgeBase:
        """Open the knowledge base in folder `path`.

        Args:
            path: A folder written by `KnowledgeBase.build`.
            embedder: None to use the embedder recorded at build time, or an embedder (path or object) that
                must be the same model.
            use_gpu: Put the FAISS index on a GPU: None when faiss sees one, or force True / False.

        Raises:
            KnowledgeBaseError: the folder is missing, unfinished (an interrupted build) or of another version.
            EmbedderMismatchError: `embedder` is not the model the knowledge base was built with.
        """
        folder = Path(path).expanduser()
        manifest_path = folder / "manifest.json"
        if not manifest_path.is_file():
            if (folder / "build").is_dir():
                raise KnowledgeBaseError(
                    f"{folder} holds an unfinished build; run the same `build` command again to resume it"
                )
            raise KnowledgeBaseError(
                f"{folder} is not a knowledge base (no manifest.json); build one with "
                "`agentgym kb build --corpus FILE --out DIR`"
            )
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("format_version") != FORMAT_VERSION:
            raise KnowledgeBaseError(
                f"{folder} was written in knowledge-base format {manifest.get('format_version')}; this version "
                f"reads format {FORMAT_VERSION}. Rebuild it with `agentgym kb build`."
            )
        recorded = manifest["embedder"]
        if embedder is None:
            try:
                chosen = resolve_embedder(recorded["name"])
            except EmbedderError as error:  # the recorded model may be gone; say which and why
                raise EmbedderMismatchError(
                    f"{folder} was built with the embedder {recorded['name']!r}, which cannot be loaded here "
                    f"({error}); pass embedder=PATH to the same model or rebuild the knowledge base"
                ) from error
        else:
            chosen = resolve_embedder(embedder)
        _check_embedder(folder, recorded, chosen)
        return cls(folder, manifest, chosen, use_gpu=use_gpu)

    # ------------------------------------------------------------------ building
    @classmethod
    def build(
        cls,
        corpus: str | Path | Iterable[str | Path],
        out_dir: str | Path,
        *,
        embedder: Embedder | str | Path | None = None,
        index: str = "auto",
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        overlap: int = DEFAULT_OVERLAP,
        batch_size: int | str = "auto",
        bm25_only_sources: Collection[str] = (),
        shard_size: int = DEFAULT_SHARD_SIZE,
        progress: bool = False,
        overwrite: bool = False,
        passages: Callable[[ReadReport], Iterator[PassageRecord]] | None = None,
    ) -> KnowledgeBase:
        """Read a corpus, embed and index it into `out_dir`, and return the loaded knowledge base.

        Args:
            corpus: Files or folders: JSONL, MedRAG JSONL, MedQuAD XML folders, plain text (see `readers.py`).
            out_dir: The folder to write. An unfinished build found there is resumed.
            embedder: None for the default offline model, a local model path, or an `Embedder`.
            index: "auto" (flat, then HNSW, then IVF-PQ as the corpus grows), "flat", "hnsw" or "ivfpq".
            chunk_size: Most words in a passage; longer records and text files are split at sentences.
            overlap: Words shared by consecutive pieces of one split document.
            batch_size: "auto" or the number of passages embedded at once.
            bm25_only_sources: Sources indexed for BM25 only (no vectors): for large, keyword-like text.
            shard_size: Passages per checkpointed shard of vectors.
            progress: Show a progress bar with passages per second.
            overwrite: Replace a finished knowledge base already in `out_dir`.
            passages: Instead of `corpus`, a function yielding passages (used by the default clinical KB).

        Raises:
            EmptyCorpusError: the corpus holds no passage.
            FileNotFoundError: a corpus path does not exist.
            FileExistsError: `out_dir` holds a finished knowledge base and `overwrite` is False.
        """
        started = time.perf_counter()
        out = Path(out_dir).expanduser()
        if (out / "manifest.json").exists():
            if not overwrite:
                raise FileExistsError(f"{out} already holds a knowledge base; pass overwrite=True (--overwrite) "
                                      "to replace it or choose another --out folder")
            for name in ("manifest.json", "passages.sqlite", "vectors.npy", "vector_rows.npy", "index.faiss"):
                (out / name).unlink(missing_ok=True)
        chosen = resolve_embedder(embedder)
        if isinstance(chosen, SentenceTransformerEmbedder) and batch_size != "auto":
            chosen._batch_size = int(batch_size)
        work = out / "build"
        work.mkdir(parents=True, exist_ok=True)
        settings = {"embedder": chosen.identity(), "chunk_size": chunk_size, "overlap": overlap,
                    "shard_size": shard_size, "bm25_only_sources": sorted(bm25_only_sources)}
        state_path = work / "state.json"
        if state_path.is_file() and json.loads(state_path.read_text()).get("settings") != settings:
            shutil.rmtree(work)  # shards made with other settings cannot be reused
            work.mkdir(parents=True)
        state_path.write_text(json.dumps({"settings": settings}, indent=2))

        read_report = ReadReport()
        if passages is not None:
            records = passages(read_report)
        else:
            paths = [corpus] if isinstance(corpus, (str, Path)) else list(corpus)
            records = read_passages(paths, chunk_size=chunk_size, overlap=overlap, report=read_report)
        database = work / "passages.sqlite"
        duplicates: list[str] = []
        sources = _write_passages(database, records, set(bm25_only_sources), duplicates)
        if not sources:
            shutil.rmtree(work)
            raise EmptyCorpusError(
                "the corpus holds no passage" + (f" ({'; '.join(read_report.problems[:5])})"
                                                 if read_report.problems else "")
                + ". Give JSONL lines with a 'text' field, MedQuAD XML, or plain-text files."
            )
        report = BuildReport(passages=sum(sources.values()), problems=read_report.summary() + duplicates)
        vector_count = _embed_shards(database, work, chosen, shard_size, progress, report)

        vectors_path = work / "vectors.npy"
        vectors = np.lib.format.open_memmap(vectors_path, mode="w+", dtype=np.float32,
                                            shape=(vector_count, chosen.dimension))
        position = 0
        for shard in sorted(work.glob("shard_*.npy")):
            block = np.load(shard)
            vectors[position : position + len(block)] = block
            position += len(block)
        vectors.flush()
        del vectors
        connection = sqlite3.connect(database)
        rows = np.array([row for (row,) in connection.execute(
            "SELECT row FROM passages WHERE vector IS NOT NULL ORDER BY vector")], dtype=np.int64)
        connection.close()
        np.save(work / "vector_rows.npy", rows)

        vectors_read = np.load(vectors_path, mmap_mode="r")
        index_type = choose_index_type(vector_count, index)
        if vector_count == 0:
            index_type = "flat"
        faiss_index, parameters = build_index(np.ascontiguousarray(vectors_read) if index_type != "ivfpq"
                                              else vectors_read, index_type)
        save_index(faiss_index, work / "index.faiss")
        del vectors_read, faiss_index

        for name in ("passages.sqlite", "vectors.npy", "vector_rows.npy", "index.faiss"):
            (work / name).replace(out / name)
        report.seconds = time.perf_counter() - started
        manifest = {
            "format_version": FORMAT_VERSION,
            "count": report.passages,
            "vectors": vector_count,
            "sources": sources,
            "embedder": chosen.identity(),
            "index": parameters,
            "chunk_size": chunk_size,
            "overlap": overlap,
            "bm25_only_sources": sorted(bm25_only_sources),
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "build": {"seconds": round(report.seconds, 2), "embedded": report.embedded, "reused": report.reused,
                      "problems": report.problems[:200], "problem_count": len(report.problems)},
        }
        (out / "manifest.tmp").write_text(json.dumps(manifest, indent=2))
        (out / "manifest.tmp").replace(out / "manifest.json")  # the manifest last: its presence means done
        shutil.rmtree(work)
        knowledge_base = cls(out, manifest, chosen)
        knowledge_base.build_report = report
        return knowledge_base

    # ------------------------------------------------------------------ searching
    @property
    def vector_index(self) -> VectorIndex:
        """The FAISS index (loaded on first dense search)."""
        if self._index is None:
            index = load_index(self.path / "index.faiss", self.manifest["index"])
            self._index = VectorIndex(index, self._vectors, self.manifest["index"], use_gpu=self._use_gpu)
        return self._index

    def search(self, query: str, k: int = 5, mode: str = "hybrid", source: str | None = None) -> list[Passage]:
        """The `k` passages best matching `query`, best first.

        Args:
            query: Free text. Longer than `MAX_QUERY_CHARS` characters, it is cut (a QueryTruncatedWarning says
                so).
            k: How many passages to return (1 to 1000).
            mode: "hybrid" (dense and BM25 run together, their scaled scores fused; see `fuse`), "dense" or
                "bm25".
            source: Only passages of this source (see `info()["sources"]`).

        Raises:
            ValueError: empty query, unknown mode or source, k out of range.
        """
        if mode not in MODES:
            raise ValueError(f"unknown search mode {mode!r}; choose one of {', '.join(MODES)}")
        if not 1 <= k <= MAX_K:
            raise ValueError(f"k must be between 1 and {MAX_K}, got {k}")
        if not query or not query.strip():
            raise ValueError("the query is empty; give some words to search for")
        if source is not None and source not in self.manifest["sources"]:
            known = ", ".join(sorted(self.manifest["sources"]))
            raise ValueError(f"unknown source {source!r}; this knowledge base has: {known}")
        if len(query) > MAX_QUERY_CHARS:
            warnings.warn(QueryTruncatedWarning(
                f"query of {len(query):,} characters truncated to its first {MAX_QUERY_CHARS:,} characters"),
                stacklevel=2)
            query = query[:MAX_QUERY_CHARS]
        if mode == "dense":
            ranked = self._dense(query, k, source)
        elif mode == "bm25":
            ranked = self._bm25(query, k, source)
        else:
            depth = max(4 * k, 40)
            # BM25 runs in SQLite on another thread while this one embeds the query and searches FAISS (both
            # release the GIL), so a hybrid query costs about the slower of the two, not their sum.
            keyword = self._keyword_pool().submit(self._bm25, query, depth, source)
            dense = self._dense(query, depth, source)
            ranked = fuse(dense, keyword.result(), k)
        return self._fetch(ranked)

    def _keyword_pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="kb-bm25")
            return self._pool

    def _allowed_positions(self, source: str) -> np.ndarray:
        if source not in self._allowed:
            with self._lock:
                positions = [vector for (vector,) in self._connection.execute(
                    "SELECT vector FROM passages WHERE source = ? AND vector IS NOT NULL ORDER BY vector",
                    (source,))]
            self._allowed[source] = np.array(positions, dtype=np.int64)
        return self._allowed[source]

    def _dense(self, query: str, k: int, source: str | None) -> list[tuple[int, float]]:
        if self.manifest["vectors"] == 0:
            return []
        vector = self.embedder.encode([query])
        allowed = self._allowed_positions(source) if source is not None else None
        scores, positions = self.vector_index.search(vector, k, allowed)
        return [(int(self._vector_rows[position]), float(score))
                for score, position in zip(scores[0], positions[0]) if position >= 0]

    def _bm25(self, query: str, k: int, source: str | None) -> list[tuple[int, float]]:
        with self._lock:
            expression = _fts_query(self._bm25_words(query))
            if not expression:
                return []
            if source is None:
                sql = "SELECT rowid, rank FROM passages_fts WHERE passages_fts MATCH ? ORDER BY rank LIMIT ?"
                arguments: tuple[Any, ...] = (expression, k)
            else:
                sql = ("SELECT f.rowid, f.rank FROM passages_fts f JOIN passages p ON p.row = f.rowid "
                       "WHERE passages_fts MATCH ? AND p.source = ? ORDER BY f.rank LIMIT ?")
                arguments = (expression, source, k)
            rows = self._connection.execute(sql, arguments).fetchall()
        return [(int(row), -float(rank)) for row, rank in rows]  # FTS5 ranks lower-is-better

    def _bm25_words(self, query: str) -> list[str]:
        """The query words BM25 searches: rarest first, common words and words past the postings budget left
        out (see `COMMON_WORD_SHARE`). Call with `self._lock` held."""
        words = _query_words(query)
        if len(words) <= 1:
            return words
        if not self._term_tables:
            # The query's words are stemmed by FTS5 itself (a scratch table with the index's tokenizer), so the
            # document counts looked up are those of the very terms the index holds.
            self._connection.executescript(
                "CREATE VIRTUAL TABLE temp.query_words USING fts5(word, tokenize='porter unicode61');"
                "CREATE VIRTUAL TABLE temp.query_terms USING fts5vocab(temp, query_words, instance);"
                "CREATE VIRTUAL TABLE temp.index_terms USING fts5vocab(main, passages_fts, row);")
            self._term_tables = True
        self._connection.executemany("INSERT INTO temp.query_words(rowid, word) VALUES (?, ?)", enumerate(words))
        stems: dict[int, list[str]] = {}
        for position, term in self._connection.execute("SELECT doc, term FROM temp.query_terms"):
            stems.setdefault(int(position), []).append(str(term))
        self._connection.execute("DELETE FROM temp.query_words")
        postings = {position: max((self._document_count(term) for term in stems.get(position, [])), default=0)
                    for position in range(len(words))}
        common = max(COMMON_WORD_SHARE * self.manifest["count"], COMMON_WORD_POSTINGS)
        chosen: list[str] = []
        total = 0
        for position in sorted((p for p in postings if postings[p] > 0), key=lambda p: (postings[p], p)):
            count = postings[position]
            if chosen and (count > common or total + count > BM25_POSTINGS_BUDGET):
                break
            chosen.append(words[position])
            total += count
        return chosen or words[:1]

    def _document_count(self, term: str) -> int:
        """How many passages hold the (stemmed) index term, cached: FTS5 counts it by reading its postings."""
        cached = self._term_counts.get(term)
        if cached is None:
            found = self._connection.execute("SELECT doc FROM temp.index_terms WHERE term = ?", (term,)).fetchone()
            cached = int(found[0]) if found else 0
            if len(self._term_counts) >= _TERM_CACHE_SIZE:
                self._term_counts.clear()
            self._term_counts[term] = cached
        return cached

    def _fetch(self, ranked: list[tuple[int, float]]) -> list[Passage]:
        if not ranked:
            return []
        rows = [row for row, _ in ranked]
        placeholders = ",".join("?" * len(rows))
        with self._lock:
            found = {row: rest for row, *rest in self._connection.execute(
                f"SELECT row, id, text, title, source, document_id FROM passages WHERE row IN ({placeholders})",
                rows)}
        return [Passage(id=found[row][0], text=found[row][1], title=found[row][2], source=found[row][3],
                        score=score, document_id=found[row][4]) for row, score in ranked if row in found]

    # ------------------------------------------------------------------ describing
    def info(self) -> dict[str, Any]:
        """Count, sources, index type and parameters, embedder, size on disk, build settings and problems."""
        return {
            "path": str(self.path),
            "count": self.manifest["count"],
            "vectors": self.manifest["vectors"],
            "sources": self.manifest["sources"],
            "bm25_only_sources": self.manifest.get("bm25_only_sources", []),
            "index": self.manifest["index"],
            "index_device": self.vector_index.device if self.manifest["vectors"] else "cpu",
            "embedder": self.manifest["embedder"],
            "size_bytes": _directory_size(self.path),
            "chunk_size": self.manifest["chunk_size"],
            "overlap": self.manifest["overlap"],
            "created": self.manifest["created"],
            "build_problems": self.manifest["build"]["problem_count"],
        }

    def __len__(self) -> int:
        return int(self.manifest["count"])

    def __repr__(self) -> str:
        return (f"KnowledgeBase({str(self.path)!r}, {self.manifest['count']} passages, "
                f"index={self.manifest['index']['type']})")

    def close(self) -> None:
        """Close the SQLite connection and the BM25 thread (searching afterwards raises)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        self._connection.close()


def _check_embedder(folder: Path, recorded: dict[str, Any], chosen: Embedder) -> None:
    actual = chosen.identity()
    differences = [f"{key} {recorded.get(key)!r} vs {actual.get(key)!r}" for key in ("fingerprint", "dimension")
                   if recorded.get(key) != actual.get(key)]
    if differences:
        raise EmbedderMismatchError(
            f"{folder} was built with the embedder {recorded.get('name')!r} but is being loaded with "
            f"{actual.get('name')!r} ({'; '.join(differences)}); vectors from different models cannot be "
            "compared. Load it without an embedder argument to use the original model, or rebuild the "
            "knowledge base with the new one."
        )


def _write_passages(database: Path, records: Iterable[PassageRecord], bm25_only: set[str],
                    problems: list[str]) -> dict[str, int]:
    """Write passages and their FTS5 index into a fresh SQLite file; return the passage count per source.

    A repeated id (possible from a `passages=` function; the corpus readers drop them earlier) keeps its first
    passage and is added to `problems`.
    """
    database.unlink(missing_ok=True)
    connection = sqlite3.connect(database)
    connection.executescript(
        """
        PRAGMA journal_mode = OFF;
        PRAGMA synchronous = OFF;
        CREATE TABLE passages (row INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, document_id TEXT NOT NULL,
                               title TEXT NOT NULL, source TEXT NOT NULL, text TEXT NOT NULL, vector INTEGER);
        CREATE VIRTUAL TABLE passages_fts USING fts5(title, text, content='passages', content_rowid='row',
                                                     tokenize='porter unicode61');
        """
    )
    sources: dict[str, int] = {}
    vector = 0
    batch: list[tuple[Any, ...]] = []
    seen: set[str] = set()
    row = 0
    for record in records:
        if record.id in seen:
            problems.append(f"duplicate id {record.id!r}; kept the first, skipped this one")
            continue
        seen.add(record.id)
        position: int | None = None
        if record.source not in bm25_only:
            position = vector
            vector += 1
        batch.append((row, record.id, record.document_id, record.title, record.source, record.text, position))
        sources[record.source] = sources.get(record.source, 0) + 1
        row += 1
        if len(batch) >= 10_000:
            connection.executemany("INSERT INTO passages VALUES (?, ?, ?, ?, ?, ?, ?)", batch)
            batch.clear()
    connection.executemany("INSERT INTO passages VALUES (?, ?, ?, ?, ?, ?, ?)", batch)
    connection.execute("CREATE INDEX passages_source ON passages (source, vector)")
    connection.execute("INSERT INTO passages_fts (passages_fts) VALUES ('rebuild')")
    connection.commit()
    connection.execute("VACUUM")
    connection.close()
    return sources


def _embed_shards(database: Path, work: Path, embedder: Embedder, shard_size: int, progress: bool,
                  report: BuildReport) -> int:
    """Embed every passage that gets a vector, one checkpointed shard at a time; return the vector count.

    A shard file is reused when the hash of its texts matches the one saved with it, so a resumed build
    embeds only what the interrupted one had not finished.
    """
    connection = sqlite3.connect(database)
    total = connection.execute("SELECT COUNT(*) FROM passages WHERE vector IS NOT NULL").fetchone()[0]
    bar = _Progress(progress, total, "embedding")
    embed_seconds = 0.0
    try:
        cursor = connection.execute(
            "SELECT title, text FROM passages WHERE vector IS NOT NULL ORDER BY vector")
        shard_number = 0
        while True:
            rows = cursor.fetchmany(shard_size)
            if not rows:
                break
            texts = [_embedding_text(title, text) for title, text in rows]
            digest = hashlib.sha256("\x1e".join(texts).encode()).hexdigest()
            shard = work / f"shard_{shard_number:06d}.npy"
            stamp = work / f"shard_{shard_number:06d}.sha256"
            if shard.is_file() and stamp.is_file() and stamp.read_text() == digest:
                report.reused += len(texts)
            else:
                started = time.perf_counter()
                vectors = embedder.encode(texts)
                embed_seconds += time.perf_counter() - started
                temporary = work / f"partial_{shard_number:06d}.npy"
                np.save(temporary, vectors.astype(np.float32, copy=False))
                temporary.replace(shard)
                stamp.write_text(digest)
                report.embedded += len(texts)
            bar.advance(len(texts))
            shard_number += 1
        for stale in work.glob("shard_*.npy"):
            if int(stale.stem.split("_")[1]) >= shard_number:
                stale.unlink()
    finally:
        bar.close()
        connection.close()
    return int(total)
