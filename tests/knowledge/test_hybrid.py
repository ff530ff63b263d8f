"""Hybrid search: the fusion keeps a strong dense hit on top and lets BM25 bring in keyword-only passages, and
BM25 leaves out words so common they cannot rank anything (ICD-10-CM's "icd" in every code) without changing
what it finds."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentgym_knowledge import KnowledgeBase, SentenceTransformerEmbedder
from agentgym_knowledge.kb import COMMON_WORD_POSTINGS, fuse
from knowledge_support import PASSAGES, write_jsonl


def test_fuse_keeps_the_clear_dense_winner_and_adds_keyword_only_rows() -> None:
    dense = [(1, 0.62), (2, 0.40), (3, 0.38), (4, 0.10)]
    keyword = [(3, 9.0), (9, 8.5), (2, 3.0), (1, 2.0)]  # BM25 prefers row 3 and knows row 9, unseen by dense
    ranked = [row for row, _ in fuse(dense, keyword, 5)]
    assert ranked[0] == 1  # dense's clear winner survives a BM25 disagreement (plain RRF put 3 first)
    assert 9 in ranked and ranked.index(3) < ranked.index(2)
    assert [row for row, _ in fuse([], keyword, 2)] == [3, 9]
    reciprocal = {row: 1 / (60 + dense_rank) for dense_rank, (row, _) in enumerate(dense, start=1)}
    for keyword_rank, (row, _) in enumerate(keyword, start=1):
        reciprocal[row] = reciprocal.get(row, 0.0) + 1 / (60 + keyword_rank)
    assert max(reciprocal, key=reciprocal.__getitem__) == 3  # what plain reciprocal-rank fusion would rank first
    assert [row for row, _ in fuse(dense, [], 2)] == [1, 2]
    assert fuse([], [], 3) == []


@pytest.fixture(scope="module")
def bulk_kb(tmp_path_factory: pytest.TempPathFactory, embedder: SentenceTransformerEmbedder) -> KnowledgeBase:
    """The small corpus plus more than COMMON_WORD_POSTINGS keyword-only passages that all say "registry"."""
    bulk = [{"id": f"bulk-{n}", "source": "bulk", "text": f"Registry entry {n} of the catalogue, item {n % 97}."}
            for n in range(COMMON_WORD_POSTINGS + 500)]
    folder = tmp_path_factory.mktemp("bulk")
    corpus = write_jsonl(folder / "corpus.jsonl", [*PASSAGES, *bulk])
    return KnowledgeBase.build(corpus, folder / "kb", embedder=embedder, bm25_only_sources=("bulk",))


def test_bm25_ignores_a_word_in_most_passages(bulk_kb: KnowledgeBase) -> None:
    alone = [p.id for p in bulk_kb.search("zorblax", k=5, mode="bm25")]
    with_common = [p.id for p in bulk_kb.search("registry zorblax", k=5, mode="bm25")]
    assert alone == with_common == ["p-zorblax"]
    # A query of common words only still searches its rarest word.
    assert [p.source for p in bulk_kb.search("registry", k=3, mode="bm25")] == ["bulk"] * 3
    assert bulk_kb.search("registry zorblax", k=1)[0].id == "p-zorblax"  # hybrid too


def test_hybrid_answers_from_another_thread_and_closes(tmp_path: Path, corpus_file: Path,
                                                       embedder: SentenceTransformerEmbedder) -> None:
    from concurrent.futures import ThreadPoolExecutor

    knowledge_base = KnowledgeBase.build(corpus_file, tmp_path / "kb", embedder=embedder)
    queries = ["uric acid crystals in the big toe", "irregular heartbeat and clots", "zorblax"] * 4
    with ThreadPoolExecutor(max_workers=4) as pool:
        tops = list(pool.map(lambda query: knowledge_base.search(query, k=1)[0].id, queries))
    assert tops[:3] == ["p-gout", "p-afib", "p-zorblax"] and tops == tops[:3] * 4
    knowledge_base.close()
