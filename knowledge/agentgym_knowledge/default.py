"""The default clinical knowledge base: our facts tables plus ICD-10-CM descriptions, built on first use, cached.

Where it lives: `$AGENTGYM_CACHE/kb/default` (default `~/.cache/agentgym/kb/default`). It is rebuilt when its
inputs change (facts tables, the `simple-icd-10-cm` release, the embedder, the format).

Sources: `drugs`, `labs`, `conditions`, `interactions`, `dosing`, `units` (from `clinical_facts.py`, embedded and
BM25-indexed) and `icd10cm`
(every code in the ICD-10-CM tabular list, about 98K, BM25-indexed only). Embedding the ICD descriptions with
MiniLM takes about 5 minutes on 2 CPU cores (~300 passages/s), too slow for a first use; code descriptions are
short and keyword-like, where BM25 does well. `embed_icd=True` (or `AGENTGYM_KB_EMBED_ICD=1`) builds a
`default-full` knowledge base with the ICD codes embedded too.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

from agentgym_knowledge import clinical_facts
from agentgym_knowledge.embedder import SentenceTransformerEmbedder
from agentgym_knowledge.kb import FORMAT_VERSION, KnowledgeBase
from agentgym_knowledge.readers import PassageRecord, ReadReport

ICD_SOURCE = "icd10cm"
_MARKER = "default_version.json"


def cache_root() -> Path:
    """`$AGENTGYM_CACHE` or `~/.cache/agentgym`."""
    return Path(os.environ.get("AGENTGYM_CACHE") or Path.home() / ".cache" / "agentgym").expanduser()


def default_kb_path(embed_icd: bool = False) -> Path:
    """Where the default knowledge base is cached."""
    return cache_root() / "kb" / ("default-full" if embed_icd else "default")


def icd10_passages() -> Iterator[tuple[str, str, str]]:
    """Every ICD-10-CM chapter, block, category and code as (id, title, text)."""
    import simple_icd_10_cm as icd

    # Dotted codes throughout: the library's add_dot() searches a list, which made this loop quadratic.
    blocks_seen: set[str] = set()
    for code in icd.get_all_codes(True):
        description = icd.get_description(code)
        if icd.is_chapter(code):
            yield f"icd10cm:chapter-{code}", description, f"ICD-10-CM chapter {code}: {description}."
            continue
        if icd.is_block(code) and code not in blocks_seen:
            # A block can share its name with its only category (B20): the block comes first, then the category.
            blocks_seen.add(code)
            yield f"icd10cm:block-{code}", description, f"ICD-10-CM block {code}: {description}."
            continue
        parts = [f"ICD-10-CM {code}: {description}."]
        parent = icd.get_parent(code)
        if parent and parent != code and not icd.is_chapter(parent):
            parts.append(f"Part of {parent}: {icd.get_description(parent)}.")
        inclusions = icd.get_inclusion_term(code)
        if inclusions:
            parts.append("Includes: " + "; ".join(inclusions) + ".")
        yield f"icd10cm:{code}", description, " ".join(parts)


def default_passages(report: ReadReport) -> Iterator[PassageRecord]:
    """The default knowledge base's passages: facts first, then ICD-10-CM."""
    for identifier, title, source, text in clinical_facts.fact_passages():
        report.passages += 1
        yield PassageRecord(identifier, text, title, source, identifier)
    for identifier, title, text in icd10_passages():
        report.passages += 1
        yield PassageRecord(identifier, text, title, ICD_SOURCE, identifier)


def default_version(embed_icd: bool) -> str:
    """A hash of everything the default knowledge base is made from; a change triggers a rebuild."""
    digest = hashlib.sha256()
    for identifier, title, source, text in clinical_facts.fact_passages():
        digest.update(f"{identifier}\x1f{title}\x1f{source}\x1f{text}\x1e".encode())
    digest.update(metadata.version("simple-icd-10-cm").encode())
    digest.update(SentenceTransformerEmbedder().identity()["fingerprint"].encode())
    digest.update(f"format={FORMAT_VERSION};embed_icd={embed_icd}".encode())
    return digest.hexdigest()[:16]


def default_knowledge_base(*, embed_icd: bool | None = None, rebuild: bool = False,
                           progress: bool = False) -> KnowledgeBase:
    """Load the default clinical knowledge base, building it first if it is missing or out of date.

    Safe when several processes ask at once: one builds (under a file lock), the others wait and load it.

    Args:
        embed_icd: Embed the ICD-10-CM descriptions too (minutes on a CPU); None reads AGENTGYM_KB_EMBED_ICD.
        rebuild: Build again even if a current copy is cached.
        progress: Show a progress bar while building (always shown when stderr is a terminal).
    """
    if embed_icd is None:
        embed_icd = os.environ.get("AGENTGYM_KB_EMBED_ICD", "") not in ("", "0", "false", "no")
    target = default_kb_path(embed_icd)
    target.parent.mkdir(parents=True, exist_ok=True)
    version = default_version(embed_icd)
    with open(target.parent / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder at a time; the others wait, then find it built
        marker = target / _MARKER
        if not rebuild and marker.is_file() and json.loads(marker.read_text()).get("version") == version:
            return KnowledgeBase.load(target)
        from agentgym.cache import building

        staging = target.parent / f"{target.name}.building"
        what = "the default clinical knowledge base" + (" (ICD-10-CM embedded too)" if embed_icd else "")
        with building(what, target, estimate="about 5 minutes" if embed_icd else "about 30-60 s"):
            knowledge_base = KnowledgeBase.build(
                [], staging, passages=default_passages, bm25_only_sources=() if embed_icd else (ICD_SOURCE,),
                progress=progress or sys.stderr.isatty(), overwrite=True,  # a bar at a terminal
            )
            knowledge_base.close()
            (staging / _MARKER).write_text(json.dumps({"version": version}))
            if target.exists():
                shutil.rmtree(target)
            staging.replace(target)
        return KnowledgeBase.load(target)
