"""`agentgym kb search` says it is loading the embedding model before the seconds-long load, and says
nothing of it when the search needs no model (BM25)."""

from __future__ import annotations

from agentgym_knowledge import KnowledgeBase
from click.testing import CliRunner

from agentgym.cli import main


def test_search_announces_the_model_load(small_kb: KnowledgeBase) -> None:
    result = CliRunner().invoke(main, ["kb", "search", str(small_kb.path), "wheezing and chest tightness",
                                       "-k", "1"])
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert lines[0].startswith("loading the embedding model ") and "--mode bm25 needs none" in lines[0]
    assert lines[1].startswith("loaded the embedding model in ")
    output = result.output  # stdout and stderr in the order written: the message comes before the results
    assert output.index("loading the embedding model") < output.index("[1] p-asthma")


def test_bm25_search_loads_no_model(small_kb: KnowledgeBase) -> None:
    result = CliRunner().invoke(main, ["kb", "search", str(small_kb.path), "zorblax", "-k", "1", "--mode", "bm25"])
    assert result.exit_code == 0, result.output
    assert "embedding model" not in result.stderr and "[1] p-zorblax" in result.stdout
