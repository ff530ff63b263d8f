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

    # the same patient + code query through the env's tool and straight against the store
    lab_tasks = [t for t in tasks if t.family == "lab_value"]
    steps, direct = [], []
    for position in range(args.repeats):
        task = lab_tasks[position % len(lab_tasks)]
        params = {"patient": task.metadata["patient_id"], "code": task.metadata["loinc"], "_sort": "-date",
                  "_count": "20"}
        env.reset(options={"task_id": task.id})
        episode = env.unwrapped.state.backend
        action = {"name": "fhir_search", "arguments": {"resource_type": "Observation", "params": params}}
        for order in ((0, 1) if position % 2 else (1, 0)):  # alternate which runs first (warm caches)
            start = time.perf_counter()
            if order == 0:
                episode.search("Observation", params)
                direct.append(time.perf_counter() - start)
            else:
                env.step(action)
                steps.append(time.perf_counter() - start)

    # a small fast call: the task's Patient by id, through the env's tool and straight from the store
    reads, direct_reads = [], []
    for position in range(args.repeats):
        task = lab_tasks[position % len(lab_tasks)]
        env.reset(options={"task_id": task.id})
        episode = env.unwrapped.state.backend
        patient = task.metadata["patient_id"]
        action = {"name": "fhir_read", "arguments": {"resource_type": "Patient", "resource_id": patient}}
        for order in ((0, 1) if position % 2 else (1, 0)):
            start = time.perf_counter()
            if order == 0:
                episode.read("Patient", patient)
                direct_reads.append(time.perf_counter() - start)
            else:
                env.step(action)
                reads.append(time.perf_counter() - start)

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
