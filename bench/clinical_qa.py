"""ClinicalQA-v0 benchmark: prints one JSON object with "figures" (each with its target and whether it is met).

    python bench/clinical_qa.py                                   # generated tasks, and the shared samples if present
    python bench/clinical_qa.py --medqa US_test.jsonl --pubmedqa ori_pqal.json   # your own benchmark files

Figures (issue 20):
- step_vs_bare_search_ratio: median of one `reset` plus one `search_knowledge` step on the default clinical
  knowledge base, over the median of the bare `KnowledgeBase.search` of the same query (same mode, same k), the
  two interleaved; target at most 1.2.
- per family (generated) and per imported benchmark: the oracle's success (target 1.0), the best constant
  answer's success (each family's most common gold text, every letter, yes/no/maybe/none/empty) with the
  target "at most chance" for generated families (chance plus one task of rounding; never above 0.5), and a
  random letter's success, next to chance. Imported benchmarks report their constant baseline with no target:
  it is the benchmark's own prior (PubMedQA's "yes").
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import gymnasium as gym

import agentgym  # noqa: F401
from agentgym.agents import make_agent
from agentgym.rollout import run_episode

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import figure

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / ".." / "shared" / "data" / "samples"
CONSTANTS = ("A", "B", "C", "D", "E", "yes", "no", "maybe", "none", "")
QUERIES = ("what does metformin treat", "normal range of serum potassium", "ICD-10-CM code for atrial fibrillation",
           "risk of combining warfarin and aspirin", "class of medicine of lisinopril", "LOINC code of hemoglobin A1c",
           "management of community-acquired pneumonia", "digoxin toxicity with furosemide")


def bench_step(repeats: int) -> dict[str, Any]:
    from agentgym_knowledge.tool import shared_knowledge_base

    env = gym.make("ClinicalQA-v0")
    knowledge_base = shared_knowledge_base(None)
    task_id = env.unwrapped.task_set[0].id
    for query in QUERIES:  # warm up the model, the index and SQLite's page cache on both paths
        knowledge_base.search(query, k=5)
        env.reset(seed=0, options={"task_id": task_id})
        env.step({"name": "search_knowledge", "arguments": {"query": query}})
    step, bare = [], []
    for number in range(repeats):
        query = QUERIES[number % len(QUERIES)]
        started = time.perf_counter()
        knowledge_base.search(query, k=5)
        bare.append(time.perf_counter() - started)
        started = time.perf_counter()
        env.reset(seed=number, options={"task_id": task_id})
        env.step({"name": "search_knowledge", "arguments": {"query": query}})
        step.append(time.perf_counter() - started)
    env.close()
    step_ms, bare_ms = statistics.median(step) * 1000, statistics.median(bare) * 1000
    ratio = step_ms / bare_ms
    return {"reset_plus_search_step_ms_median": round(step_ms, 3), "bare_search_ms_median": round(bare_ms, 3),
            "passages": len(knowledge_base), "repeats": repeats,
            "step_vs_bare_search_ratio": figure(ratio, "<= 1.2", ratio <= 1.2)}


def _solved(env: Any, task_id: str, answer: str, seed: int) -> bool:
    env.reset(seed=seed, options={"task_id": task_id})
    _, _, terminated, _, info = env.step({"name": "submit", "arguments": {"answer": answer}})
    return bool(terminated and info["reward_breakdown"]["answer"] >= 1.0)


def baselines(env: Any, *, generated: bool, seed: int = 0) -> dict[str, Any]:
    """Per family: oracle, best constant and random-letter success, and chance."""
    by_family: dict[str, list[Any]] = {}
    for task in env.unwrapped.task_set:
        by_family.setdefault(task.family, []).append(task)
    oracle, rng, result = make_agent("oracle"), random.Random(seed), {}
    for family, tasks in sorted(by_family.items()):
        # Free-number families (no options): the constants are the most common gold and 0, and chance is that
        # gold's share; a list answer (medication_review) is counted as a tuple and submitted as a list.
        choice = all(task.metadata.get("options") for task in tasks)
        golds = Counter(tuple(task.answer) if isinstance(task.answer, list) else task.answer for task in tasks)
        common, common_count = golds.most_common(1)[0]
        common = list(common) if isinstance(common, tuple) else common
        wins: Counter[str] = Counter()
        random_wins = oracle_wins = 0
        for task in tasks:
            for constant in [common, *(item for item in (CONSTANTS if choice else ("0", "")) if item != str(common))]:
                wins[str(constant)] += _solved(env, task.id, constant, seed)
            if choice:
                random_wins += _solved(env, task.id, "ABCDE"[rng.randrange(len(task.metadata["options"]))], seed)
            oracle_wins += run_episode(env, oracle, task_id=task.id, seed=seed).reward >= 1.0
        count = len(tasks)
        chance = (sum(1 / len(task.metadata["options"]) for task in tasks) / count if choice
                  else common_count / count)
        best, best_wins = max(wins.items(), key=lambda item: (item[1], item[0]))
        ceiling = min(0.5, chance + 1 / count)
        row: dict[str, Any] = {
            "tasks": count, "chance": round(chance, 4), "best_constant": best,
            "oracle_success": figure(oracle_wins / count, "== 1.0", oracle_wins == count),
            "random_letter_success": round(random_wins / count, 4) if choice else None,
        }
        share = best_wins / count
        row["best_constant_success"] = (figure(share, f"<= {ceiling:.3f} (chance + 1 task, <= 0.5)", share <= ceiling)
                                        if generated else round(share, 4))
        result[family] = row
    return result


def imported(medqa: Path | None, pubmedqa: Path | None, work: Path) -> dict[str, Any]:
    from agentgym_clinical.data.benchmarks import read_medqa, read_pubmedqa

    from agentgym import save_tasks

    rows: dict[str, Any] = {}
    for name, path, reader, kwargs in (("medqa", medqa, read_medqa, {}), ("pubmedqa", pubmedqa, read_pubmedqa,
                                                                          {"kb": "task"})):
        if path is None or not path.exists():
            rows[name] = "skipped: no file (pass --" + name + " FILE)"
            continue
        report = reader(path)
        task_file = work / f"{name}.jsonl"
        save_tasks(report.tasks, task_file)
        env = gym.make("ClinicalQA-v0", tasks=str(task_file), **kwargs)
        try:
            rows[name] = {"file": path.name, "left_out": len(report.failures),
                          "constant_baseline": report.summary()["constant_baseline"],
                          **baselines(env, generated=False)}
        finally:
            env.close()
    return rows


def test_split(env: Any) -> dict[str, Any]:
    """The generated test split: tasks, distinct prompts and hard tasks (targets of issue 30: 400 and 100), the
    tasks per family and level, and the oracle's turns on the hard tasks."""
    test = [task for task in env.unwrapped.task_set if task.split == "test"]
    hard = [task for task in test if task.difficulty == "hard"]
    per_family: dict[str, Counter[str]] = {}
    for task in test:
        per_family.setdefault(task.family, Counter())[task.difficulty] += 1
    oracle = make_agent("oracle")
    turns = Counter(run_episode(env, oracle, task_id=task.id, seed=0).turns for task in hard)
    return {"tasks": len(test),
            "distinct_prompts": figure(len({task.prompt for task in test}), ">= 400",
                                       len({task.prompt for task in test}) >= 400),
            "hard_tasks": figure(len(hard), ">= 100", len(hard) >= 100),
            "per_family": {family: dict(levels) for family, levels in sorted(per_family.items())},
            "oracle_turns_on_hard": dict(sorted(turns.items()))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--medqa", type=Path, default=SAMPLES / "medqa_sample.jsonl")
    parser.add_argument("--pubmedqa", type=Path, default=SAMPLES / "pubmedqa_sample.json")
    arguments = parser.parse_args()
    env = gym.make("ClinicalQA-v0")
    try:
        families = baselines(env, generated=True)
        split = test_split(env)
    finally:
        env.close()
    step = bench_step(arguments.repeats)
    with tempfile.TemporaryDirectory() as work:
        benchmarks = imported(arguments.medqa, arguments.pubmedqa, Path(work))
    figures = {"step": step, "test_split": split, "families": families, "benchmarks": benchmarks}
    oks = [row["ok"] for row in _figures(figures)]
    print(json.dumps({"bench": "clinical_qa", "figures": figures, "ok": all(oks)}, indent=1))


def _figures(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict) and "ok" in node and "value" in node:
        return [node]
    if isinstance(node, dict):
        return [item for value in node.values() for item in _figures(value)]
    return []


if __name__ == "__main__":
    main()
