"""The default clinical knowledge base (built in a temporary cache) and the `search_knowledge` tool."""

from __future__ import annotations

from pathlib import Path

import pytest
import simple_icd_10_cm as icd
from agentgym_knowledge import KnowledgeBase
from agentgym_knowledge.clinical_facts import CONDITIONS, DRUGS, LABS
from agentgym_knowledge.default import default_kb_path, default_knowledge_base
from agentgym_knowledge.tool import make_search_tool


def test_facts_tables_cite_real_icd_codes_and_unique_names() -> None:
    for condition in CONDITIONS:
        assert icd.is_valid_item(condition.icd10), f"{condition.name}: {condition.icd10} is not an ICD-10-CM code"
    assert len({drug.name for drug in DRUGS}) == len(DRUGS)
    assert len({lab.loinc for lab in LABS}) == len(LABS)


@pytest.fixture(scope="module")
def default_kb(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeBase:
    cache = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENTGYM_CACHE", str(cache))
        patch.delenv("AGENTGYM_KB_EMBED_ICD", raising=False)
        built = default_knowledge_base()
        assert built.path == cache / "kb" / "default" == default_kb_path()
        again = default_knowledge_base()  # cached: loads, does not rebuild
        assert again.manifest["created"] == built.manifest["created"]
    return built


def test_default_kb_answers_clinical_lookups(default_kb: KnowledgeBase) -> None:
    info = default_kb.info()
    assert set(info["sources"]) == {"drugs", "labs", "conditions", "interactions", "icd10cm"}
    assert info["sources"]["icd10cm"] > 90_000 and info["bm25_only_sources"] == ["icd10cm"]
    assert default_kb.search("what does metformin treat", k=1)[0].id == "drug:metformin"
    assert default_kb.search("normal range of serum potassium", k=1, source="labs")[0].id == "lab:2823-3"
    icd_hits = default_kb.search("Type 2 diabetes mellitus without complications", k=3, source="icd10cm")
    assert "icd10cm:E11.9" in [p.id for p in icd_hits]


def test_search_tool_over_a_user_kb(small_kb: KnowledgeBase) -> None:
    search_tool = make_search_tool(small_kb.path)
    assert search_tool.name == "search_knowledge"
    assert set(search_tool.schema["function"]["parameters"]["properties"]) == {"query", "k", "source"}
    outcome = search_tool.invoke(None, {"query": "uric acid crystals in the big toe", "k": 2})
    assert outcome.ok and outcome.text.startswith("[1] p-gout (metabolism) Gout\n")
    assert "[2]" in outcome.text and "[3]" not in outcome.text


def test_search_tool_errors_are_observations(small_kb: KnowledgeBase) -> None:
    search_tool = make_search_tool(small_kb)
    wrong_source = search_tool.invoke(None, {"query": "asthma", "source": "kidney"})
    assert not wrong_source.ok and "unknown source 'kidney'; this knowledge base has" in wrong_source.text
    too_many = search_tool.invoke(None, {"query": "asthma", "k": 500})
    assert not too_many.ok and "'k'" in too_many.text
    long_query = search_tool.invoke(None, {"query": "asthma " * 20_000})
    assert long_query.ok and long_query.text.startswith("Note: query of 140,000 characters truncated")


def test_search_tool_defaults_to_the_default_kb(default_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    monkeypatch.setenv("AGENTGYM_CACHE", str(default_kb.path.parents[1]))
    search_tool = make_search_tool()
    assert "icd10cm" in search_tool.description or "icd10cm" in str(search_tool.schema)
    outcome = search_tool.invoke(None, {"query": "INR target on warfarin", "k": 3})
    assert outcome.ok and "drug:warfarin" in outcome.text
