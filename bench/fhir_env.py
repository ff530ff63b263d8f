"""FHIR-v0 overheads on the default population: `reset` (including the episode's copy-on-write view of the
store), a `fhir_search` step against the store's own search for the same query, a small fast call (a
`fhir_read` of the task's Patient) against the store's own read, and oracle episodes per second. Prints one JSON
object. The read's ratio has no target: the step renders the resource as the observation's JSON text, which the
store's read does not, so its absolute overhead (microseconds) is reported beside the ratio.

Run: python bench/fhir_env.py [--patients 400] [--episodes 300]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

# Running `python bench/fhir_env.py` puts bench/ first on the path, where bench/fhir.py would shadow the
# `fhir.resources` package that validates resources; take bench/ off the path.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

from agentgym_fhir.data import DEFAULT_PATIENTS, default_store
from agentgym_fhir.env import make_env
from agentgym_fhir.tasks import generate

from agentgym.agents.oracle import OracleAgent


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def time_pair(step: Callable[[], Any], bare: Callable[[], Any], step_times: list[float], bare_times: list[float],
              step_first: bool) -> None:
    """Time `step` and `bare` back to back (in the order given), appending each one's seconds to its list."""
    for which in ((step, step_times), (bare, bare_times)) if step_first else ((bare, bare_times), (step, step_times)):
        start = time.perf_counter()
        which[0]()
        which[1].append(time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--patients", type=int, default=DEFAULT_PATIENTS)
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=300)
    args = parser.parse_args()

    store = default_store(args.patients)
    tasks = generate(seed=0, store=store, verbose=False)
    env = make_env(store=store, tasks=tasks, knowledge=False, max_turns=60)
    rng = random.Random(0)
    sample = rng.sample(tasks, min(args.episodes, len(tasks)))

    # reset: picks the task and opens the episode's copy-on-write view of the store
    resets = []
    for task in sample:
        start = time.perf_counter()
        env.reset(options={"task_id": task.id})
        resets.append(time.perf_counter() - start)

    # the same patient + code query through the env's tool and straight against the store, then a small fast
    # call: the task's Patient by id
    lab_tasks = [t for t in tasks if t.family == "lab_value"]
    steps, direct, reads, direct_reads = [], [], [], []
    for position in range(args.repeats):
        task = lab_tasks[position % len(lab_tasks)]
        params = {"patient": task.metadata["patient_id"], "code": task.metadata["loinc"], "_sort": "-date",
                  "_count": "20"}
        patient = task.metadata["patient_id"]
        env.reset(options={"task_id": task.id})
        episode = env.unwrapped.state.backend
        search = {"name": "fhir_search", "arguments": {"resource_type": "Observation", "params": params}}
        read = {"name": "fhir_read", "arguments": {"resource_type": "Patient", "resource_id": patient}}
        first = position % 2 == 0  # alternate which runs first (warm caches)
        time_pair(partial(env.step, search), partial(episode.search, "Observation", params), steps, direct, first)
        time_pair(partial(env.step, read), partial(episode.read, "Patient", patient), reads, direct_reads, first)

    # oracle episodes per second over a random sample of every family
    oracle = OracleAgent()
    solved = 0
    failed: list[str] = []
    start = time.perf_counter()
    for task in sample:
        _, info = env.reset(options={"task_id": task.id})
        oracle.reset(task)
        done, reward = False, 0.0
        while not done:
            _, reward, terminated, truncated, info = env.step(oracle.act(info["messages"], info["tools"]))
            done = terminated or truncated
        solved += reward == 1.0
        if reward != 1.0:
            failed.append(task.family)
    elapsed = time.perf_counter() - start
    env.close()

    reset_ms = median_ms(resets)
    step_ms, store_ms = median_ms(steps), median_ms(direct)
    ratio = step_ms / store_ms
    result: dict[str, Any] = {
        "patients": args.patients, "tasks": len(tasks),
        "reset_median_ms": round(reset_ms, 3), "reset_target_ms": 20, "reset_ok": reset_ms <= 20,
        "fhir_search_step_median_ms": round(step_ms, 3), "store_search_median_ms": round(store_ms, 3),
        "search_ratio": round(ratio, 3), "search_ratio_target": 1.5, "search_ok": ratio <= 1.5,
        "fhir_read_step_median_ms": round(median_ms(reads), 4),
        "store_read_median_ms": round(median_ms(direct_reads), 4),
        "read_ratio": round(median_ms(reads) / median_ms(direct_reads), 2),
        "read_overhead_us": round((median_ms(reads) - median_ms(direct_reads)) * 1000, 1),
        "oracle_episodes_per_s": round(len(sample) / elapsed, 1), "oracle_solved": f"{solved}/{len(sample)}",
        "oracle_failed_families": sorted(set(failed)),
    }
    result["ok"] = bool(result["reset_ok"] and result["search_ok"] and solved == len(sample))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
