"""Core framework overhead: one `step` (parse, validate, dispatch a no-op tool, render), `reset` of a tool-only
env, and the memory of 1,000 live env instances sharing one task set. Prints one JSON object.

For reference, in the same run: the step with every call validated by pydantic (the fast path for plainly
typed arguments switched off, as before it existed), and a step with the shape of SQL-v0's execute_sql (two
arguments, a text result, three process signals) beside the bare tool call.
"""

from __future__ import annotations

import gc
import json
import resource
import statistics
import tempfile
import time
from pathlib import Path

from agentgym import Task, ToolEnv, save_tasks, tool
from agentgym.actions import ToolCall
from agentgym.tools import ToolOutcome


@tool
def noop(value: int = 0) -> str:
    """Do nothing.

    Args:
        value: Ignored.
    """
    return "ok"


@tool
def query(sql: str, limit: int = 20) -> str:
    """Pretend to run a query.

    Args:
        sql: The query.
        limit: Most rows to show.
    """
    return "| n |\n|---|\n| 3 |\n(1 row)"


class SignalEnv(ToolEnv):
    def process_signals(self, call: ToolCall, outcome: ToolOutcome, state: object) -> dict[str, float]:
        return {"parses": 1.0, "names_exist": 1.0, "executes": float(outcome.ok)}


def rss_mib() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * resource.getpagesize() / 2**20


def median_us(function, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        function()
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples) / 1000


def step_median_us(env: ToolEnv, action: object, episodes: int, turns: int = 10) -> float:
    """Median time of a step within realistic episodes of `turns` turns (the reset is not timed)."""
    samples = []
    for episode in range(episodes):
        env.reset(seed=episode)
        for _ in range(turns):
            start = time.perf_counter_ns()
            env.step(action)
            samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples) / 1000


def main() -> None:
    tasks = [Task(id=f"t{i}", domain="bench", family=f"f{i % 12}", prompt=f"Task number {i}: " + "context " * 40,
                  answer=i, solution=[{"name": "submit", "arguments": {"answer": i}}]) for i in range(5000)]
    env = ToolEnv(tasks=tasks, tools=[noop], max_turns=10**9)
    structured = {"name": "noop", "arguments": {"value": 1}}
    text = '<tool_call>{"name": "noop", "arguments": {"value": 1}}</tool_call>'
    step_median_us(env, structured, 200)  # warm-up
    step_structured = step_median_us(env, structured, 2000)
    step_text = step_median_us(env, text, 2000)
    reset = median_us(lambda: env.reset(seed=1), 5000)
    plain, noop._plain = noop._plain, None  # every call through pydantic, as before the fast path
    step_pydantic = step_median_us(env, structured, 2000)
    noop._plain = plain
    sql_env = SignalEnv(tasks=tasks, tools=[query], max_turns=10**9)
    sql_action = {"name": "query", "arguments": {"sql": "SELECT COUNT(*) FROM t"}}
    step_median_us(sql_env, sql_action, 100)
    step_sql = step_median_us(sql_env, sql_action, 2000, turns=8)
    bare_sql = median_us(lambda: query.function("SELECT COUNT(*) FROM t"), 20000)

    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "tasks.jsonl"
        save_tasks(tasks, path)
        gc.collect()
        before = rss_mib()
        envs = [ToolEnv(tasks=path, tools=[noop]) for _ in range(1000)]
        for index, instance in enumerate(envs):
            instance.reset(seed=index)
        gc.collect()
        thousand_envs = rss_mib() - before
        shared = len({id(instance.task_set) for instance in envs}) == 1

    figures = {
        "step_median_us_structured": {"value": round(step_structured, 2), "target": "<= 50", "ok": step_structured <= 50},
        "step_median_us_text": {"value": round(step_text, 2), "target": "<= 50", "ok": step_text <= 50},
        "reset_median_ms": {"value": round(reset / 1000, 4), "target": "<= 1", "ok": reset <= 1000},
        "rss_mib_1000_envs": {"value": round(thousand_envs, 1), "target": "<= 1024", "ok": thousand_envs <= 1024},
        "task_set_shared_by_1000_envs": {"value": shared, "target": "true", "ok": shared},
    }
    reference = {
        "step_median_us_structured_all_pydantic": round(step_pydantic, 2),
        "step_median_us_sql_shaped": round(step_sql, 2),
        "sql_shaped_step_overhead_us": round(step_sql - bare_sql, 2),
    }
    print(json.dumps({"bench": "core", "tasks": len(tasks), "figures": figures, "reference": reference,
                      "ok": all(f["ok"] for f in figures.values())}, indent=1))


if __name__ == "__main__":
    main()
