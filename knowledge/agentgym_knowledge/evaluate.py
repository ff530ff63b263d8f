"""Retrieval evaluation: recall@k and MRR of a knowledge base for each search mode.

A questions file is JSONL; each line has the query (`query` or `question`) and the passage id or ids that answer
it (`id`, `ids`, `passage_id`, `passage_ids`, `answer_ids`). A gold id matches a retrieved passage with that
id or cut from a record with that id (so `doc#0`, `doc#1` both answer gold `doc`).

- recall@k: for each question, the share of its gold ids found in the top k, averaged over questions.
- MRR: the mean over questions of 1 / rank of the first passage matching a gold id (0 if none in the top
  `max(ks)`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentgym_knowledge.kb import MODES, KnowledgeBase, Passage

QUERY_FIELDS = ("query", "question")
GOLD_FIELDS = ("ids", "passage_ids", "answer_ids", "id", "passage_id")


@dataclass(frozen=True)
class Question:
    """One evaluation question and the ids of the passages (or records) that answer it."""

    query: str
    gold: frozenset[str]


def load_questions(path: str | Path) -> list[Question]:
    """Read a questions JSONL file. Raises ValueError naming the line of a record without a query or ids."""
    questions: list[Question] = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}:{number}: not valid JSON ({error.msg})") from error
        query = next((record[name] for name in QUERY_FIELDS if isinstance(record.get(name), str)), None)
        gold_value = next((record[name] for name in GOLD_FIELDS if record.get(name) not in (None, "", [])), None)
        if query is None or gold_value is None:
            raise ValueError(f"{path}:{number}: each line needs a query ({' or '.join(QUERY_FIELDS)}) and the "
                             f"answering passage id(s) ({' or '.join(GOLD_FIELDS)})")
        gold = [gold_value] if isinstance(gold_value, (str, int)) else list(gold_value)
        questions.append(Question(query=query, gold=frozenset(str(item) for item in gold)))
    if not questions:
        raise ValueError(f"{path} holds no question")
    return questions


def score_ranking(passages: Sequence[Passage], gold: frozenset[str], ks: Sequence[int]) -> dict[str, float]:
    """recall@k for each k and reciprocal rank of one ranked list against its gold ids."""
    found_at: dict[str, int] = {}
    first_rank = 0
    for rank, passage in enumerate(passages, start=1):
        for key in (passage.id, passage.document_id):
            if key in gold and key not in found_at:
                found_at[key] = rank
                first_rank = first_rank or rank
    scores = {f"recall@{k}": sum(1 for rank in found_at.values() if rank <= k) / len(gold) for k in ks}
    scores["mrr"] = 1.0 / first_rank if first_rank else 0.0
    return scores


def evaluate(knowledge_base: KnowledgeBase, questions: Sequence[Question], *, ks: Sequence[int] = (1, 5, 10),
             modes: Sequence[str] = MODES) -> dict[str, Any]:
    """Mean recall@k and MRR per mode: `{"questions": N, "modes": {mode: {"recall@1": ..., "mrr": ...}}}`."""
    depth = max(ks)
    results: dict[str, Any] = {"questions": len(questions), "k": list(ks), "modes": {}}
    for mode in modes:
        totals: dict[str, float] = {}
        for question in questions:
            ranking = knowledge_base.search(question.query, k=depth, mode=mode)
            for key, value in score_ranking(ranking, question.gold, ks).items():
                totals[key] = totals.get(key, 0.0) + value
        results["modes"][mode] = {key: round(value / len(questions), 4) for key, value in totals.items()}
    return results
