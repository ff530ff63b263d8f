"""SQL-v0 benchmark: execute_sql overhead against the raw engine and against SkyRL-gym's SQLEnv, reset latency,
memory of 1,000 episodes, and oracle episodes per second (reset, the solution's calls, verification) over every
third built-in task.

Run: python bench/sql.py [--spider DIR]   (prints one JSON object; every figure is measured in the same run,
ratios where the issue asks for them).

The step overhead is measured on real-sized queries, small ones included: the gold query of one built-in task
per (database, family), and every fourth gold query of a Spider directory (`--spider`, else
`$AGENTGYM_SPIDER_DIR`, else the sample in ../shared/data/samples/spider when present; read in place, never
copied). Each query runs as an agent would send it: a text not yet seen in the episode (a comment numbers each
run), so the statement is compiled and the process signals computed every time, in episodes of at most
`STEPS_PER_EPISODE` steps. The raw engine is `sqlite3` on the same file (`mode=ro`, `fetchall`), run
interleaved with the step; SkyRL-gym's `SQLEnv` (when `skyrl-gym` is installed) takes the same query in its
`<sql>...</sql>` action on the same file. A query's ratio is the median over its runs of step time / raw time
of the same run (paired, so a busy moment of the machine slows both), then summarised over the queries by
median and 90th percentile; the SkyRL-gym speed-up is its step's median time over ours, per query.

Targets: execute_sql step <= 1.5x the raw engine at the median over the real queries; >= 5x faster than
SkyRL-gym's SQLEnv at the median; reset median <= 2 ms; RSS of 1,000 concurrent episodes <= 1 GiB.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sqlite3
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import gymnasium as gym
from agentgym_sql.data import DATABASES, ensure_duckdb, ensure_sqlite
from agentgym_sql.data.engines import DUCKDB_CONFIG

import agentgym  # noqa: F401

QUERY = ("SELECT p.category, COUNT(*) AS lines, ROUND(AVG(p.unit_price), 2) AS mean_price "
         "FROM order_items AS i JOIN products AS p ON p.product_id = i.product_id "
         "JOIN orders AS o ON o.order_id = i.order_id WHERE o.status != 'cancelled' GROUP BY p.category")
REPEATS = 40
RUNS_PER_QUERY = 15  # timed runs of each real query (after one untimed warm-up); 3 for queries over 50 ms
FIXED_STEP_TARGET_US = 30.0  # what a step may add to the engine's own time on the Spider queries (median)
STEPS_PER_EPISODE = 8  # a fresh episode (untimed reset) every so many steps, as agents' episodes are short
DEFAULT_SPIDER = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "samples" / "spider"


def rss_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


@dataclass
class Case:
    """One real query: which set it comes from, a task on its database, the SQL and the SQLite file."""

    group: str
    label: str
    task_id: str
    sql: str
    path: Path
    db_id: str


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def project_cases(task_set: Any) -> list[Case]:
    """The sqlite gold query of the first task of each (database, family) of the built-in task set."""
    picked: dict[tuple[str, str], Any] = {}
    for task in task_set:
        picked.setdefault((task.metadata["database"], task.family), task)
    return [Case("project", f"{database}/{family}", task.id, task.metadata["gold_sql"]["sqlite"],
                 ensure_sqlite(DATABASES[database]), database) for (database, family), task in sorted(picked.items())]


def spider_cases(root: Path) -> tuple[list[Case], list[Any]]:
    """Every fourth gold query of a Spider directory, with the imported tasks (read in place)."""
    from agentgym_sql.importers import read_benchmark

    tasks = read_benchmark(root, "spider").tasks
    cases = [Case("spider", task.id, task.id, task.metadata["gold_sql"]["sqlite"],
                  Path(task.metadata["database_path"]), str(task.metadata["db_id"])) for task in tasks[::4]]
    return cases, tasks


class SkyrlPeer:
    """SkyRL-gym's SQLEnv on the same SQLite files (it wants <root>/spider/database/<db>/<db>.sqlite: links)."""

    def __init__(self) -> None:
        from skyrl_gym.envs.sql.env import SQLEnv, Text2SQLEnvConfig

        self._make, self._config_type = SQLEnv, Text2SQLEnvConfig
        self._root = tempfile.TemporaryDirectory(prefix="bench-skyrl-")
        self._env: Any = None
        self._steps = 0

    def start(self, case: Case) -> None:
        folder = Path(self._root.name) / "spider" / "database" / case.db_id
        folder.mkdir(parents=True, exist_ok=True)
        link = folder / f"{case.db_id}.sqlite"
        if not link.exists():
            link.symlink_to(case.path.resolve())
        extras = {"db_id": case.db_id, "reward_spec": {"ground_truth": case.sql}, "data": "spider",
                  "max_turns": STEPS_PER_EPISODE + 1}
        self._env = self._make(self._config_type(db_path=self._root.name), extras=extras)
        self._env.init([{"role": "user", "content": "question"}])
        self._steps = 0

    def step(self, sql: str) -> None:
        self._env.step(f"<think>try</think>\n<sql>{sql}</sql>")

    def close(self) -> None:
        self._root.cleanup()


def real_queries(cases: list[Case], tasks: list[Any], peer: SkyrlPeer | None) -> dict[str, Any]:
    """Per-query medians of the raw engine, the execute_sql step and (when present) SkyRL-gym's step."""
    env = gym.make("SQL-v0", tasks=tasks, max_turns=STEPS_PER_EPISODE + 1)
    measured = []
    for case in cases:
        sql = case.sql.strip().rstrip(";").rstrip()
        raw = sqlite3.connect(f"file:{case.path}?mode=ro", uri=True)
        start = time.perf_counter()
        raw.execute(sql).fetchall()
        runs = RUNS_PER_QUERY if time.perf_counter() - start < 0.05 else 3
        raw_times, step_times, peer_times, ratios, extras = [], [], [], [], []
        for run in range(runs + 1):
            if run % STEPS_PER_EPISODE == 0:
                env.reset(options={"task_id": case.task_id})
                if peer is not None:
                    peer.start(case)
            text = f"{sql} /* run {run} */"
            action = {"name": "execute_sql", "arguments": {"sql": text}}
            began = time.perf_counter()
            raw.execute(text).fetchall()
            raw_s = time.perf_counter() - began
            began = time.perf_counter()
            env.step(action)
            step_s = time.perf_counter() - began
            if peer is not None:
                began = time.perf_counter()
                peer.step(text)
                peer_times.append(time.perf_counter() - began)
            if run:  # the first run warms the page cache
                raw_times.append(raw_s)
                step_times.append(step_s)
                ratios.append(step_s / raw_s)  # paired: both ran back to back, under the same machine load
                extras.append(step_s - raw_s)  # the step's fixed cost on top of the engine's work
        raw.close()
        raw_ms, step_ms = statistics.median(raw_times) * 1000, statistics.median(step_times) * 1000
        row = {"group": case.group, "query": case.label, "raw_ms": raw_ms, "step_ms": step_ms,
               "ratio": statistics.median(ratios), "fixed_us": statistics.median(extras) * 1e6}
        if peer_times:
            row["skyrl_ms"] = statistics.median(peer_times[1:]) * 1000
            row["skyrl_over_step"] = row["skyrl_ms"] / step_ms
        measured.append(row)
    env.close()

    def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
        ratios = [row["ratio"] for row in rows]
        worst = sorted(rows, key=lambda row: -row["ratio"])[:3]
        return {"queries": len(rows), "median_ratio": statistics.median(ratios), "p90_ratio": percentile(ratios, 0.9),
                "median_raw_ms": statistics.median(row["raw_ms"] for row in rows),
                "median_step_ms": statistics.median(row["step_ms"] for row in rows),
                "median_fixed_us": statistics.median(row["fixed_us"] for row in rows),
                "worst": [f"{row['query']}: {row['ratio']:.2f}x ({row['raw_ms']:.3f} ms raw)" for row in worst]}

    groups = sorted({row["group"] for row in measured})
    result: dict[str, Any] = {group: summary([row for row in measured if row["group"] == group]) for group in groups}
    result["all"] = summary(measured)
    if peer is not None:
        speedups = [row["skyrl_over_step"] for row in measured]
        result["vs_skyrl_gym"] = {"queries": len(speedups), "median_speedup": statistics.median(speedups),
                                  "p10_speedup": percentile(speedups, 0.1),
                                  "median_skyrl_ms": statistics.median(row["skyrl_ms"] for row in measured)}
    return result


def skyrl_peer() -> tuple[SkyrlPeer | None, str]:
    try:
        return SkyrlPeer(), ""
    except ImportError as error:
        return None, (f"skipped: skyrl-gym is not installed ({error}); `pip install skyrl-gym` to compare "
                      "with its SQLEnv")


def step_vs_raw(backend: str) -> dict[str, float]:
    spec = DATABASES["retail"]
    if backend == "sqlite":
        raw = sqlite3.connect(f"file:{ensure_sqlite(spec)}?mode=ro", uri=True)
    else:
        raw = duckdb.connect(str(ensure_duckdb(spec)), read_only=True, config=dict(DUCKDB_CONFIG))

    def run_raw(text: str) -> None:
        raw.execute(text).fetchall()

    env = gym.make("SQL-v0", backend=backend, max_turns=STEPS_PER_EPISODE + 1)
    task = next(t for t in env.unwrapped.task_set if t.metadata["database"] == "retail")
    env.reset(options={"task_id": task.id})
    env.step({"name": "execute_sql", "arguments": {"sql": QUERY}})
    run_raw(QUERY)
    raw_times, step_times = [], []
    for run in range(REPEATS):  # interleaved, so both see the same machine state
        if run % STEPS_PER_EPISODE == 0:
            env.reset(options={"task_id": task.id})
        text = f"{QUERY} /* run {run} */"  # a query the episode has not seen: compiled, signals computed
        start = time.perf_counter()
        run_raw(text)
        raw_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        env.step({"name": "execute_sql", "arguments": {"sql": text}})
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


def steps_result(real: dict[str, Any], spider_note: str, wall_s: float) -> dict[str, Any]:
    """The step-only report: per group the median ratio to the raw engine and the fixed cost per step."""
    spider = real.get("spider", {})
    fixed_ok = bool(spider) and spider["median_fixed_us"] <= FIXED_STEP_TARGET_US
    return {"execute_sql_real_queries": {**real, "target_median_ratio": 1.5, "target_fixed_us": FIXED_STEP_TARGET_US,
                                         "ok": real["all"]["median_ratio"] <= 1.5 and fixed_ok,
                                         **({"note": spider_note} if spider_note else {})},
            "wall_s": wall_s, "load_average": os.getloadavg()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spider", type=Path, default=None, help="a Spider directory (questions + database/)")
    parser.add_argument("--steps-only", action="store_true",
                        help="only the execute_sql step against the raw engine (project and Spider queries)")
    arguments = parser.parse_args()
    started = time.perf_counter()
    builtin = gym.make("SQL-v0")  # builds / loads the cached databases and tasks outside the timings
    cases, tasks = project_cases(builtin.unwrapped.task_set), list(builtin.unwrapped.task_set)
    builtin.close()
    spider_root = arguments.spider or (Path(os.environ["AGENTGYM_SPIDER_DIR"]) if os.environ.get(
        "AGENTGYM_SPIDER_DIR") else DEFAULT_SPIDER.resolve())
    spider_note = ""
    if (spider_root / "database").is_dir():
        spider, spider_tasks = spider_cases(spider_root)
        cases, tasks = cases + spider, tasks + spider_tasks
    else:
        spider_note = f"no Spider directory at {spider_root} (give --spider DIR): project queries only"
    peer, peer_note = skyrl_peer()
    real = real_queries(cases, tasks, None if arguments.steps_only else peer)
    if peer is not None:
        peer.close()
    if arguments.steps_only:
        print(json.dumps(steps_result(real, spider_note, time.perf_counter() - started), indent=1))
        return
    sqlite_step = step_vs_raw("sqlite")
    duckdb_step = step_vs_raw("duckdb")
    reset_ms = reset_median_ms()
    oracle = oracle_episodes_per_s()
    memory = thousand_episodes_rss()
    gib = 1 << 30
    overall = real["all"]
    skyrl: dict[str, Any] = {"skipped": peer_note} if peer is None else {
        **real.pop("vs_skyrl_gym"), "target_speedup": 5.0}
    if peer is not None:
        skyrl["ok"] = skyrl["median_speedup"] >= 5.0
    result = {
        "execute_sql_real_queries": {**real, "target_median_ratio": 1.5, "ok": overall["median_ratio"] <= 1.5,
                                     **({"note": spider_note} if spider_note else {})},
        "vs_skyrl_gym": skyrl,
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
