"""CLI-v0's test split in numbers: its size, its variety, its hard tier, and the oracle on it.

Prints one JSON object:
- `test_tasks`, `distinct_test_prompts` (distinct prompt text), `hard_test_tasks`, and per family the tasks,
  distinct prompts and hard tasks (issue 30: at least 400 distinct prompts and 100 hard tasks);
- `difficulty`: test tasks per level, from the measured proxy (docs/cli.md, "Difficulty"), and `traps`: how
  often each refuted shortcut occurs among the hard test tasks;
- with `--oracle N`: the oracle replayed on N hard test tasks (all with `--oracle 0`), its success and the turns
  it used.

Run: `python bench/cli_tiers.py [--oracle 40] [--backend docker]` (builds the 25 test workspaces on first use).
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import time
from collections import Counter, defaultdict
from typing import Any

logging.disable(logging.WARNING)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--oracle", type=int, default=None, help="replay the oracle on N hard test tasks (0: all)")
    parser.add_argument("--backend", default="auto", choices=["auto", "docker", "local"])
    args = parser.parse_args()

    import gymnasium as gym

    import agentgym  # noqa: F401  (registers CLI-v0)
    from agentgym.agents import OracleAgent
    from agentgym.rollout import run_episode

    env = gym.make("CLI-v0", split="test", backend=args.backend)
    tasks = list(env.unwrapped.task_set)
    families: dict[str, dict[str, Any]] = defaultdict(lambda: {"tasks": 0, "prompts": set(), "hard": 0})
    for task in tasks:
        row = families[task.family]
        row["tasks"] += 1
        row["prompts"].add(task.prompt)
        row["hard"] += task.difficulty == "hard"
    hard = [task for task in tasks if task.difficulty == "hard"]
    report: dict[str, Any] = {
        "test_tasks": len(tasks),
        "distinct_test_prompts": len({task.prompt for task in tasks}),
        "hard_test_tasks": len(hard),
        "per_family": {family: {"tasks": row["tasks"], "distinct_prompts": len(row["prompts"]), "hard": row["hard"]}
                       for family, row in sorted(families.items())},
        "difficulty": dict(Counter(task.difficulty for task in tasks)),
        "traps": dict(Counter(trap for task in hard for trap in task.metadata.get("traps", [])).most_common()),
    }
    if args.oracle is not None:
        chosen = hard if args.oracle == 0 else random.Random(0).sample(hard, min(args.oracle, len(hard)))
        started, solved, turns = time.monotonic(), 0, []
        for task in chosen:
            trajectory = run_episode(env, OracleAgent(), seed=0, task_id=task.id)
            solved += trajectory.reward == 1.0
            turns.append(trajectory.turns)
        report["oracle"] = {"episodes": len(chosen), "success": solved / max(1, len(chosen)),
                            "max_turns_used": max(turns, default=0), "seconds": round(time.monotonic() - started, 1)}
    env.close()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
