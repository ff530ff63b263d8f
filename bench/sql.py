"""SQL-v0 benchmark: execute_sql overhead against the raw engine, reset latency, memory of 1,000 episodes,
and oracle episodes per second (reset, the solution's calls, verification) over every third built-in task.

Run: python bench/sql.py   (prints one JSON object; figures are measured in the same run, ratios where the
issue asks for them). Targets: execute_sql step median <= 1.5x the raw engine's median for the same query on
the same database; reset median <= 2 ms; RSS of 1,000 concurrent episodes <= 1 GiB.
"""

from __future__ import annotations

import gc
import json
import sqlite3
import statistics
import time

import duckdb
import gymnasium as gym
from agentgym_sql.data import DATABASES, ensure_duckdb, ensure_sqlite
from agentgym_sql.data.engines import DUCKDB_CONFIG

import agentgym  # noqa: F401

QUERY = ("SELECT p.category, COUNT(*) AS lines, ROUND(AVG(p.unit_price), 2) AS mean_price "
         "FROM order_items AS i JOIN products AS p ON p.product_id = i.product_id "
         "JOIN orders AS o ON o.order_id = i.order_id WHERE o.status != 'cancelled' GROUP BY p.category")
REPEATS = 40


def rss_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def step_vs_raw(backend: str) -> dict[str, float]:
    spec = DATABASES["retail"]
    if backend == "sqlite":
        raw = sqlite3.connect(f"file:{ensure_sqlite(spec)}?mode=ro", uri=True)
        run_raw = lambda: raw.execute(QUERY).fetchall()
    else:
        raw = duckdb.connect(str(ensure_duckdb(spec)), read_only=True, config=dict(DUCKDB_CONFIG))
        run_raw = lambda: raw.execute(QUERY).fetchall()
    env = gym.make("SQL-v0", backend=backend, max_turns=10 * REPEATS)
    task = next(t for t in env.unwrapped.task_set if t.metadata["database"] == "retail")
    env.reset(options={"task_id": task.id})
    action = {"name": "execute_sql", "arguments": {"sql": QUERY}}
    env.step(action)
    run_raw()
    raw_times, step_times = [], []
    for _ in range(REPEATS):  # interleaved, so both see the same machine state
        start = time.perf_counter()
        run_raw()
        raw_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        env.step(action)
        step_times.append(time.perf_counter() - start)
    env.close()
    raw.close()
    raw_median, step_median = statistics.median(raw_times), statistics.median(step_times)
    return {"raw_ms": raw_median * 1000, "step_ms": step_median * 1000, "ratio": step_median / raw_median}


def reset_median_ms() -> float:
    env = gym.make("SQL-v0")
    for seed in range(20):
        env.reset(seed=seed)
    times = []
    for seed in range(500):
        start = time.perf_counter()
        env.reset(seed=seed)
        times.append(time.perf_counter() - start)
    env.close()
    return statistics.median(times) * 1000


def oracle_episodes_per_s() -> dict[str, float]:
    from agentgym.agents import OracleAgent
    from agentgym.rollout import run_episode

    env = gym.make("SQL-v0")
    tasks = list(env.unwrapped.task_set)[::3]
    for task in tasks[:30]:  # warm: engines opened, schemas read
        run_episode(env, OracleAgent(), task_id=task.id)
    start = time.perf_counter()
    failures = sum(run_episode(env, OracleAgent(), task_id=task.id).reward != 1.0 for task in tasks)
    elapsed = time.perf_counter() - start
    env.close()
    return {"episodes": len(tasks), "episodes_per_s": len(tasks) / elapsed, "failures": failures}


def thousand_episodes_rss() -> dict[str, float]:
    gc.collect()
    before = rss_bytes()
    envs = []
    for index in range(1000):
        env = gym.make("SQL-v0")
        env.reset(seed=index)
        env.step({"name": "execute_sql", "arguments": {"sql": "SELECT COUNT(*) FROM " + (
            "customers" if "retail" in env.unwrapped.task.id else "departments" if any(
                name in env.unwrapped.task.id for name in ("hospital", "hr", "school")) else "branches"
            if "finance" in env.unwrapped.task.id else "airlines")}})
        envs.append(env)
    gc.collect()
    after = rss_bytes()
    for env in envs:
        env.close()
    return {"rss_total_bytes": after, "rss_added_bytes": after - before}


def main() -> None:
    started = time.perf_counter()
    gym.make("SQL-v0").close()  # builds / loads the cached databases and tasks outside the timings
    sqlite_step = step_vs_raw("sqlite")
    duckdb_step = step_vs_raw("duckdb")
    reset_ms = reset_median_ms()
    oracle = oracle_episodes_per_s()
    memory = thousand_episodes_rss()
    gib = 1 << 30
    result = {
        "query": QUERY,
        "execute_sql_sqlite": {**sqlite_step, "target_ratio": 1.5, "ok": sqlite_step["ratio"] <= 1.5},
        "execute_sql_duckdb": {**duckdb_step, "target_ratio": 1.5, "ok": duckdb_step["ratio"] <= 1.5},
        "reset_median_ms": {"value": reset_ms, "target": 2.0, "ok": reset_ms <= 2.0},
        "oracle": {**oracle, "ok": oracle["failures"] == 0},
        "rss_1000_episodes": {**memory, "target_bytes": gib, "ok": memory["rss_total_bytes"] <= gib},
    }
    result["wall_s"] = time.perf_counter() - started
    result["ok"] = all(item["ok"] for item in result.values() if isinstance(item, dict) and "ok" in item)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
