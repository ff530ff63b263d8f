"""Rollout benchmark: prints one JSON object.

- oracle episodes per second with 1, 2 and 4 workers (SQL-v0 when installed, else the toy env of the tests;
  `env` says which);
- harness overhead per turn with the OpenAI agent against the scripted local HTTP server: wall time per turn
  minus the server's own time, i.e. what agentgym adds around a model call (target <= 2 ms);
- Ray vs local time for the same episodes at the same worker count (target <= 1.5x).

Run: .venv/bin/python bench/rollout.py
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests" / "eval"
sys.path.insert(0, str(TESTS))  # the toy env and the scripted chat server live with the tests

import gymnasium as gym

from agentgym.evaluate import evaluate
from agentgym.parallel import EnvSpec, EpisodeSpec, RolloutConfig, run_rollouts
from agentgym.registry import env_record


def pick_env() -> tuple[str, dict[str, Any]]:
    try:
        gym.make("SQL-v0").close()
        return "SQL-v0", {}
    except (gym.error.Error, ImportError, OSError, ValueError, KeyError) as error:  # fall back, and say so
        import eval_toyenv  # noqa: F401

        print(f"SQL-v0 unavailable ({type(error).__name__}: {error}); using EvalToy-v0", file=sys.stderr)
        return "EvalToy-v0", {}


def episodes_per_second(env_id: str, workers: int, tasks: int, samples: int, directory: Path) -> dict[str, Any]:
    summary = evaluate([env_id], "oracle", directory / f"w{workers}", n=tasks, samples=samples, k=1,
                       workers=workers, progress=False, plots=False, bootstrap=0)
    seconds = summary["run"]["seconds"]
    return {"workers": workers, "backend": summary["run"]["backend"], "episodes": summary["episodes"],
            "seconds": round(seconds, 3), "episodes_per_s": round(summary["episodes"] / seconds, 1),
            "oracle_success": summary["success_rate"]}


def harness_overhead(episodes: int = 60) -> dict[str, Any]:
    import eval_toyenv  # noqa: F401
    from chat_server import ChatServer, zoo_policy

    from agentgym.agents.openai import OpenAIAgent
    from agentgym.rollout import run_episode

    env = gym.make("EvalToy-v0")
    with ChatServer(zoo_policy) as server:
        agent = OpenAIAgent("scripted", base_url=server.url, api_key="sk-bench")
        run_episode(env, agent, seed=0, task_id="toy-1")  # warm the connection
        server.handler_seconds = 0.0
        turns = 0
        started = time.perf_counter()
        for index in range(episodes):
            turns += run_episode(env, agent, seed=index, task_id=f"toy-{index % 11}").turns
        wall = time.perf_counter() - started
        server_seconds = server.handler_seconds
    env.close()
    overhead_ms = (wall - server_seconds) / turns * 1000
    return {"turns": turns, "wall_ms_per_turn": round(wall / turns * 1000, 3),
            "server_ms_per_turn": round(server_seconds / turns * 1000, 3),
            "overhead_ms_per_turn": round(overhead_ms, 3), "target_ms": 2.0, "ok": overhead_ms <= 2.0}


def ray_vs_local(workers: int = 2, samples: int = 20) -> dict[str, Any]:
    try:
        import ray
    except ImportError:
        return {"skipped": "ray is not installed", "ok": False}
    import eval_toyenv  # noqa: F401

    # the toy env with some work per step, as a real env has; importable by Ray workers without installing
    env_id, kwargs = "EvalToy-v0", {"step_delay": 0.005}
    record = env_record(env_id)
    config = RolloutConfig(envs=(EnvSpec(env_id, record.entry_point, record.kwargs, kwargs),), agent="oracle")
    specs = [EpisodeSpec(env_id, f"toy-{task}", sample, seed=sample * 100 + task)
             for sample in range(samples) for task in range(12)]
    results: dict[str, list[Any]] = {"local": [], "ray": []}
    timings = {}
    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
             job_config=ray.job_config.JobConfig(code_search_path=[str(TESTS)]))
    try:
        for name, options in (("local", {"backend": "process"}), ("ray", {"ray_address": "local"})):
            started = time.perf_counter()
            run_rollouts(config, specs, results[name].append, workers=workers, **options)
            timings[name] = time.perf_counter() - started
    finally:
        ray.shutdown()

    def comparable(items: list[Any]) -> list[Any]:
        rows = []
        for item in items:
            row = dict(item.trajectory)
            row.pop("timings")
            rows.append(row)
        return sorted(rows, key=lambda row: (row["task_id"], row["sample"]))

    ratio = timings["ray"] / timings["local"]
    return {"workers": workers, "episodes": len(specs), "local_s": round(timings["local"], 3),
            "ray_s": round(timings["ray"], 3), "ratio": round(ratio, 3), "target_ratio": 1.5,
            "same_results": comparable(results["local"]) == comparable(results["ray"]),
            "ok": ratio <= 1.5 and comparable(results["local"]) == comparable(results["ray"])}


def main() -> None:
    env_id, _ = pick_env()
    tasks, samples = (400, 1) if env_id == "SQL-v0" else (0, 40)
    with tempfile.TemporaryDirectory() as directory:
        throughput = [episodes_per_second(env_id, workers, tasks, samples, Path(directory))
                      for workers in (1, 2, 4)]
    overhead = harness_overhead()
    ray_result = ray_vs_local()
    output = {
        "env": env_id,
        "cpus": len(os.sched_getaffinity(0)),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "oracle_throughput": throughput,
        "harness_overhead": overhead,
        "ray_vs_local": ray_result,
        "ok": overhead["ok"] and ray_result.get("ok", False)
        and all(item["oracle_success"] == 1.0 for item in throughput),
    }
    print(json.dumps(output, indent=1))


if __name__ == "__main__":
    main()
