"""FHIR-v0's task tiers: tasks, distinct prompts and difficulty per family on a split, and the oracle's success and
turns per tier. Prints one JSON object.

    python bench/fhir_tiers.py [--split test] [--oracle-sample 0]   (0: the oracle plays every task of the split)
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter, defaultdict

from agentgym_fhir.env import make_env

from agentgym.agents.oracle import OracleAgent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test")
    parser.add_argument("--oracle-sample", type=int, default=0, help="tasks the oracle plays (0: every task)")
    args = parser.parse_args()
    started = time.perf_counter()
    env = make_env(split=args.split, knowledge=False, max_turns=60)
    make_seconds = time.perf_counter() - started
    tasks = list(env.unwrapped.task_set)
    per_family: dict[str, Counter[str]] = defaultdict(Counter)
    for task in tasks:
        per_family[task.family][task.difficulty] += 1
    played = tasks if not args.oracle_sample else random.Random(0).sample(tasks, min(args.oracle_sample, len(tasks)))
    oracle = OracleAgent()
    solved: Counter[str] = Counter()
    turns: dict[str, list[int]] = defaultdict(list)
    for task in played:
        _, info = env.reset(options={"task_id": task.id})
        oracle.reset(task)
        done, reward, count = False, 0.0, 0
        while not done:
            _, reward, terminated, truncated, info = env.step(oracle.act(info["messages"], info["tools"]))
            done, count = terminated or truncated, count + 1
        solved[task.difficulty] += reward == 1.0
        turns[task.difficulty].append(count)
    env.close()
    tiers = Counter(task.difficulty for task in tasks)
    print(json.dumps({
        "split": args.split, "tasks": len(tasks), "distinct_prompts": len({task.prompt for task in tasks}),
        "per_tier": dict(tiers), "per_family": {family: dict(counts) for family, counts in sorted(per_family.items())},
        "oracle": {tier: {"played": len(turns[tier]), "success": solved[tier] / len(turns[tier]),
                          "max_turns": max(turns[tier]), "mean_turns": round(sum(turns[tier]) / len(turns[tier]), 2)}
                   for tier in sorted(turns)},
        "make_env_seconds": round(make_seconds, 1),
    }, indent=1))


if __name__ == "__main__":
    main()
