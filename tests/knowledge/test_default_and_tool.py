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
    assert set(info["sources"]) == {"drugs", "labs", "conditions", "interactions", "dosing", "units", "icd10cm"}
    assert info["sources"]["icd10cm"] > 90_000 and info["bm25_only_sources"] == ["icd10cm"]
    assert default_kb.search("what does metformin treat", k=1)[0].id == "drug:metformin"
    assert default_kb.search("normal range of serum potassium", k=1, source="labs")[0].id == "lab:2823-3"
    # What ClinicalQA-v0's dosing questions need: the drug's rule and the unit factors, found by plain words.
    assert "dosing:dabigatran" in [p.id for p in default_kb.search("dabigatran dose kidney function", k=3)]
    assert default_kb.search("convert creatinine umol/L to mg/dL", k=1)[0].id == "units:serum-creatinine"
    icd_hits = default_kb.search("Type 2 diabetes mellitus without complications", k=3, source="icd10cm")
    assert "icd10cm:E11.9" in [p.id for p in icd_hits]


def test_search_tool_over_a_user_kb(small_kb: KnowledgeBase) -> None:
    search_tool = make_search_tool(small_kb.path)
    assert search_tool.name == "search_knowledge"
    assert set(search_tool.schema["function"]["parameters"]["properties"]) == {"query", "k", "source", "offset"}
    outcome = search_tool.invoke(None, {"query": "uric acid crystals in the big toe", "k": 2})
    assert outcome.ok and outcome.text.startswith("[1] p-gout (metabolism) Gout\n")
    assert "[2]" in outcome.text and "[3]" not in outcome.text


class _Episode:
    """An episode state as FHIR-v0 and ClinicalQA-v0 hand it to tools: the env's output limit in `extra`."""

    def __init__(self, output_limit: int) -> None:
        self.extra = {"output_limit": output_limit}


def test_search_results_are_cut_by_whole_passages_and_say_how_to_page(small_kb: KnowledgeBase) -> None:
    search_tool = make_search_tool(small_kb)
    everything = search_tool.invoke(None, {"query": "lung disease breathing", "k": 12})
    assert everything.ok and "left out" not in everything.text
    whole = {block.split("\n", 1)[0]: block for block in everything.text.split("\n\n")}
    assert len(whole) == 12
    cut = search_tool.invoke(_Episode(700), {"query": "lung disease breathing", "k": 12})
    assert cut.ok and len(cut.text) <= 700
    *shown, note = cut.text.split("\n\n")
    assert 1 <= len(shown) < 12
    # Every passage shown is whole, numbered from 1, and the note's count and offset are the true ones.
    for number, block in enumerate(shown, start=1):
        assert block.startswith(f"[{number}] ") and block == whole[block.split("\n", 1)[0]]
    assert note.startswith(f"Note: {12 - len(shown)} more matching passage")
    assert "left out to keep this result under 700 characters" in note
    assert f"offset={len(shown)}" in note
    rest = search_tool.invoke(None, {"query": "lung disease breathing", "k": 12 - len(shown), "offset": len(shown)})
    pages = [block for block in rest.text.split("\n\n")]
    assert [block.split("\n", 1)[0] for block in pages] == list(whole)[len(shown):]
    assert pages[0].startswith(f"[{len(shown) + 1}] ")


def test_a_passage_longer_than_the_whole_limit_is_cut_at_a_word_and_says_so(small_kb: KnowledgeBase) -> None:
    outcome = make_search_tool(small_kb).invoke(_Episode(260), {"query": "asthma airways", "k": 2})
    first = outcome.text.split("\n\n")[0]
    assert first.startswith("[1] p-asthma (lungs) Asthma\n") and "[passage cut: " in first
    shown, total = (int(part.replace(",", "")) for part in first.rsplit("[passage cut: ", 1)[1].split(" ")[0:4:3])
    assert shown < total and "Note: 1 more matching passage was left out" in outcome.text


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
