"""What a ClinicalQA-v0 agent may call: search_knowledge, calculate, lookup_code and submit.

`calculate` and `lookup_code` are agentgym_fhir's own tools (the 21 calculators, ICD-10-CM / LOINC / RxNorm /
SNOMED CT lookup). `search_knowledge` searches the default clinical knowledge base, a user's (`kb=PATH`), or,
with `kb="task"`, only the question's own context passages (`task_search_tool`). No tool reads the task's
answer: the episode state holds the context passages and nothing else.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import pydantic
from agentgym_fhir import calculators
from agentgym_fhir.tools import calculate as record_calculate
from agentgym_fhir.tools import lookup_code
from agentgym_knowledge.tool import fit_blocks, output_budget

from agentgym import Tool, ToolError, tool

# FHIR-v0's `calculate` tells the agent to gather the inputs from the patient record; a ClinicalQA question has no
# record, so here the same calculators say to take them from the question.
calculate = Tool(record_calculate.function, name="calculate", description=(
    "Run a clinical calculator and get its value, unit and the formula with your numbers filled in. Take the "
    "inputs from the question (convert units first where they differ). Calculators and their inputs (? marks "
    "optional ones):\n" + calculators.describe_calculators()))

TASK_KB = "task"
MAX_RESULTS = 20
_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(["a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "in", "is", "it", "of", "on", "or", "that", "the", "to", "was", "were", "with"])


@dataclass(frozen=True)
class ClinicalEpisode:
    """The state tools see in one episode: the question's context passages (empty for most tasks), and in
    `extra["output_limit"]` the characters one tool output may take (search results fit in it by whole
    passages)."""

    contexts: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


def _terms(text: str) -> list[str]:
    return [word for word in _WORD.findall(text.lower()) if word not in _STOPWORDS]


def rank_passages(query: str, passages: tuple[str, ...], k: int) -> list[tuple[int, float]]:
    """BM25 (k1 1.2, b 0.75) of `query` over a handful of passages: (passage index, score), best first; passages
    sharing no word with the query are left out."""
    documents = [Counter(_terms(passage)) for passage in passages]
    if not documents:
        return []
    average = sum(sum(d.values()) for d in documents) / len(documents) or 1.0
    scores = []
    for index, counts in enumerate(documents):
        length, score = sum(counts.values()), 0.0
        for term in set(_terms(query)):
            frequency = counts.get(term, 0)
            if not frequency:
                continue
            holding = sum(1 for other in documents if term in other)
            idf = math.log(1 + (len(documents) - holding + 0.5) / (holding + 0.5))
            score += idf * frequency * 2.2 / (frequency + 1.2 * (0.25 + 0.75 * length / average))
        if score > 0:
            scores.append((index, score))
    return sorted(scores, key=lambda item: (-item[1], item[0]))[:k]


def _search_task_passages(
    state: ClinicalEpisode,
    query: str,
    k: Annotated[int, pydantic.Field(ge=1, le=MAX_RESULTS)] = 5,
    offset: Annotated[int, pydantic.Field(ge=0, le=MAX_RESULTS)] = 0,
) -> str:
    """Search this question's own context passages and return the ones that match, best first, each whole.

    Args:
        query: What to look for, in plain words, for example "mortality in the treated group".
        k: How many passages to return (1 to 20).
        offset: Skip this many of the best matches, to page to the ones after those already shown.
    """
    if not isinstance(state, ClinicalEpisode) or not state.contexts:
        raise ToolError("this question has no context passages; answer from what you know or the question itself")
    ranked = rank_passages(query, state.contexts, offset + k)[offset:]
    if not ranked:
        return (f"No passage matched. This question has {len(state.contexts)} passages; try other words from the "
                "question." if not offset else f"No passage matched beyond the first {offset}; try a smaller offset.")
    blocks = [f"[{number}] passage {index + 1} of {len(state.contexts)}\n{state.contexts[index]}"
              for number, (index, _score) in enumerate(ranked, start=offset + 1)]
    return fit_blocks([], blocks, output_budget(state), lambda shown: (
        f"To see them, call search_knowledge again with the same query and offset={offset + shown}."))


def task_search_tool() -> Tool:
    """`search_knowledge` over the episode's context passages (PubMedQA's reasoning-required setting)."""
    return Tool(_search_task_passages, name="search_knowledge", output_limit=0)


def knowledge_search_tool(kb: Any = None) -> Tool:
    """`search_knowledge` over a knowledge base: None for the default clinical one, a path, or a loaded one."""
    from agentgym_knowledge.tool import make_search_tool

    if isinstance(kb, (str, Path)) and not Path(kb).exists():
        raise ValueError(f"kb={str(kb)!r}: no such knowledge base folder (build one with `agentgym kb build`), "
                         f"or pass kb='task' to search the question's own passages, or leave kb unset for the "
                         "default clinical knowledge base")
    return make_search_tool(kb)


def _number_as_text(value: Any) -> Any:
    """A JSON number sent for a number question, as its text ("300"); a list of numbers, or of texts that hold
    a digit ("150 mg"), for a question asking for several numbers, as its JSON text; other values (a list of
    option letters) are validated as text, and refused."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, list) and value and all(
            (isinstance(item, (int, float)) and not isinstance(item, bool))
            or (isinstance(item, str) and any(character.isdigit() for character in item)) for item in value):
        return json.dumps(value)
    return value


@tool(terminal=True)
def submit(answer: Annotated[str, pydantic.BeforeValidator(_number_as_text)]) -> str:
    """Submit your final answer and end the episode, in the form the question asks. For a multiple-choice
    question: one option, by its letter ("B"), its full text, or a part of its text only that option holds. For a
    number question: one number, alone or followed by the unit asked. Call it once. Naming more than one option,
    or more than one number, scores 0.

    Args:
        answer: One option (its letter as listed, its text, or a distinctive part of its text), or one number.
    """
    return answer


def clinical_tools(kb: Any = None) -> list[Tool]:
    """The tools of ClinicalQA-v0, in the order the model sees them."""
    search = task_search_tool() if isinstance(kb, str) and kb == TASK_KB else knowledge_search_tool(kb)
    return [search, calculate, lookup_code, submit]
