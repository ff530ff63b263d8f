"""What the grader's hardening costs: oracle episodes per second on each env, this tree against a reference.

The reference is an earlier commit (default: the last one before the reward-integrity work, override with
`--ref REV` or `AGENTGYM_BENCH_REF`), checked out into a temporary git worktree. Both trees are measured in the
same run, alternating, each in its own process, on the same tasks with the same backend; the figure is the
ratio of the best of `--rounds` runs of each. Target: the current tree keeps at least 80% of the reference's
episodes per second (a drop of at most 20%). The reference uses its own cache directory, since the task
generators may have changed since.

    python bench/integrity_cost.py [--episodes 200] [--rounds 3] [--ref 55e4a84]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_REF = "55e4a84"  # main before the reward-integrity work (issue: reward integrity)
# name -> (env id, gym.make arguments). CLI-v0 runs on the two-workspace task set (46 tasks, every family; the full
# set takes ~10 minutes to build per tree), on each backend: its hidden tests run in a grading sandbox.
ENVS: dict[str, tuple[str, dict[str, Any]]] = {
    "SQL-v0": ("SQL-v0", {}), "FHIR-v0": ("FHIR-v0", {}),
    "CLI-v0": ("CLI-v0", {"backend": "docker", "fixtures": 2}),
    "CLI-v0[local]": ("CLI-v0", {"backend": "local", "fixtures": 2}),
}
PACKAGES = (".", "domains/sql", "domains/fhir", "domains/cli", "knowledge", "baselines")

CHILD = r"""
import json, random, sys, time
import gymnasium as gym
import agentgym
from agentgym.agents import OracleAgent
from agentgym.rollout import run_episode

env_id, kwargs, episodes = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
env = gym.make(env_id, **kwargs)
ids = sorted(task.id for task in env.unwrapped.task_set)
chosen = random.Random(0).sample(ids, min(episodes + 5, len(ids)))
agent = OracleAgent()
for task_id in chosen[:5]:  # warm-up: pools, caches, lazily built indexes
    run_episode(env, agent, seed=0, task_id=task_id)
started = time.perf_counter()
solved = 0
for task_id in chosen[5:]:
    solved += run_episode(env, agent, seed=0, task_id=task_id).reward >= 1.0
seconds = time.perf_counter() - started
env.close()
print(json.dumps({"episodes": len(chosen) - 5, "seconds": seconds, "solved": solved}))
"""


def measure(tree: Path, env_id: str, kwargs: dict[str, Any], episodes: int, cache: str | None) -> dict[str, Any]:
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(str(tree / package) for package in PACKAGES)
    environment["AGENTGYM_ALLOW_WEAK_ISOLATION"] = "1"  # the oracle is trusted; the backend is named anyway
    if cache:
        environment["AGENTGYM_CACHE"] = cache
    completed = subprocess.run([sys.executable, "-c", CHILD, env_id, json.dumps(kwargs), str(episodes)],
                               check=False, capture_output=True, text=True, env=environment, cwd=tree, timeout=3600)
    if completed.returncode != 0:
        raise RuntimeError(f"{env_id} in {tree}: {completed.stderr[-1500:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default=os.environ.get("AGENTGYM_BENCH_REF", DEFAULT_REF))
    parser.add_argument("--episodes", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--envs", nargs="*", default=list(ENVS))
    arguments = parser.parse_args()
    from agentgym.cache import cache_dir

    reference_cache = str(cache_dir("bench-reference", arguments.ref))
    figures: dict[str, Any] = {}
    episodes: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="agentgym-ref-") as scratch:
        worktree = Path(scratch) / "ref"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(worktree), arguments.ref],
                       check=True, capture_output=True)
        try:
            for name in arguments.envs:
                env_id, kwargs = ENVS[name]
                best = {"reference": 0.0, "current": 0.0}
                solved = {"reference": 0, "current": 0}
                for _ in range(arguments.rounds):
                    for label, tree, cache in (("reference", worktree, reference_cache), ("current", ROOT, None)):
                        result = measure(tree, env_id, kwargs, arguments.episodes, cache)
                        best[label] = max(best[label], result["episodes"] / result["seconds"])
                        episodes[name] = result["episodes"]
                        solved[label] = result["solved"]
                ratio = best["current"] / best["reference"] if best["reference"] else 0.0
                figures[name] = {
                    "reference_episodes_per_s": round(best["reference"], 1),
                    "current_episodes_per_s": round(best["current"], 1),
                    "oracle_solved": {"value": f"{solved['current']}/{episodes[name]}",
                                      "ok": solved["current"] == episodes[name]},
                    "current_over_reference": {"value": round(ratio, 3), "target": ">= 0.8", "ok": ratio >= 0.8},
                }
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)],
                           check=False, capture_output=True)
    ok = all(row["current_over_reference"]["ok"] and row["oracle_solved"]["ok"] for row in figures.values())
    print(json.dumps({"figures": figures, "reference": arguments.ref, "episodes": arguments.episodes, "ok": ok},
                     indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
