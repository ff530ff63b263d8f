"""Run fixtures for the viewer tests: real small SQL-v0 evals (oracle and random), a run whose strings are
hostile markup, a training run's metrics.jsonl, and a synthetic 10,000-episode run for the speed check."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from agentgym.evaluate import evaluate

# Strings that would run script if any reached the page as markup; each sets window.__pwned when it runs.
PAYLOADS = (
    "<script>window.__pwned = 'script'</script>",
    "<img src=x onerror=\"window.__pwned = 'img'\">",
    "\"><svg onload=\"window.__pwned = 'svg'\">",
    "</script><script>window.__pwned = 'close'</script>",
    "javascript:window.__pwned = 'link'",
)


def _eval(out: Path, agent: str, **options: Any) -> Path:
    evaluate(["SQL-v0"], agent, out, n=8, progress=False, plots=False, bootstrap=50, **options)
    return out


@pytest.fixture(scope="session")
def runs_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("viewer-runs")


@pytest.fixture(scope="session")
def oracle_run(runs_root: Path) -> Path:
    return _eval(runs_root / "oracle", "oracle")


@pytest.fixture(scope="session")
def random_run(runs_root: Path) -> Path:
    return _eval(runs_root / "random", "random", max_turns=4)


@pytest.fixture(scope="session")
def hostile_run(runs_root: Path, random_run: Path) -> Path:
    """The random run with every string field a payload: message contents, tool names and arguments, task id,
    family, diagnosis, breakdown keys, a gold answer, and the directory name itself."""
    out = runs_root / "hostile<img src=x onerror=window.__pwned='dir'>"
    out.mkdir()
    shutil.copy(random_run / "run.json", out / "run.json")
    lines = []
    for number, line in enumerate((random_run / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()):
        record = json.loads(line)
        payload = PAYLOADS[number % len(PAYLOADS)]
        record["task_id"] = f"{record['task_id']}{payload}"
        record["family"] = payload
        record["diagnosis"] = payload if number % 2 else {"episode": payload, "domain": [payload],
                                                          "turns": [payload] * record["turns"]}
        record["answer"] = payload
        record["solution"] = [{"name": payload, "arguments": {"sql": payload}}]
        record["reward_breakdown"][payload] = 0.5
        for message in record["messages"]:
            message["content"] = f"{message.get('content') or ''}\n{payload}\n| {payload} |\n|---|\n| {payload} |"
            for call in message.get("tool_calls") or []:
                call["function"]["name"] = payload
                call["function"]["arguments"] = json.dumps({"sql": payload})
        record["messages"].append({"role": "tool", "name": payload, "content": json.dumps([{payload: payload}])})
        lines.append(json.dumps(record))
    (out / "trajectories.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


@pytest.fixture(scope="session")
def training_run(runs_root: Path) -> Path:
    out = runs_root / "training"
    out.mkdir()
    with (out / "metrics.jsonl").open("w", encoding="utf-8") as handle:
        for step in range(1, 21):
            handle.write(json.dumps({"step": step, "loss": 1.0 / step, "reward": step / 20, "kl": 0.01 * step,
                                     "learning_rate": 1e-5}) + "\n")
    return out


@pytest.fixture(scope="session")
def big_run(runs_root: Path, oracle_run: Path) -> Path:
    """10,000 episodes (2,500 tasks x 4 samples) shaped like the oracle run's records, with varied outcomes."""
    out = runs_root / "big"
    out.mkdir()
    template = json.loads((oracle_run / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()[0])
    shutil.copy(oracle_run / "run.json", out / "run.json")
    rng = random.Random(0)
    families = ["select", "join", "group_having", "windows", "nested", "nulls"]
    with (out / "trajectories.jsonl").open("w", encoding="utf-8") as handle:
        for sample in range(4):
            for task in range(2500):
                solved = rng.random() < 0.6
                turns = rng.randint(1, 12)
                record = {**template, "task_id": f"sql-big-{task:05d}", "family": families[task % len(families)],
                          "sample": sample, "turns": turns, "reward": 1.0 if solved else rng.random() * 0.3,
                          "success": solved, "tool_calls": turns, "tool_errors": rng.randint(0, 2),
                          "reward_breakdown": {**template["reward_breakdown"], "answer": 1.0 if solved else 0.0}}
                handle.write(json.dumps(record) + "\n")
    return out


@pytest.fixture(scope="session")
def explored_run(runs_root: Path, oracle_run: Path) -> Path:
    """The oracle run with one episode that first explores: a real execute_sql call whose result text is the
    env's own (played on SQL-v0 here), inserted before the oracle's submit."""
    import gymnasium as gym

    import agentgym  # noqa: F401  (registers SQL-v0)

    env = gym.make("SQL-v0")
    env.reset(seed=1)
    sql = "SELECT 1 AS a, 'x' AS b UNION ALL SELECT 2, NULL"
    observation, *_ = env.step(json.dumps({"name": "execute_sql", "arguments": {"sql": sql}}))
    env.close()
    out = runs_root / "explored"
    out.mkdir()
    shutil.copy(oracle_run / "run.json", out / "run.json")
    lines = (oracle_run / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0])
    record["messages"][2:2] = [
        {"role": "assistant", "content": "", "tool_calls": [{"id": "call_x", "type": "function", "function": {
            "name": "execute_sql", "arguments": json.dumps({"sql": sql})}}]},
        {"role": "tool", "tool_call_id": "call_x", "name": "execute_sql", "content": observation},
    ]
    lines[0] = json.dumps(record)
    (out / "trajectories.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


@pytest.fixture(scope="session")
def diagnosed_run(runs_root: Path, random_run: Path) -> Path:
    """The random run's first episode with the diagnosis the env itself gives those actions (played again on
    SQL-v0: `info["diagnosis"]` of the last step), in case the run's records do not carry one yet."""
    import gymnasium as gym

    import agentgym  # noqa: F401  (registers SQL-v0)

    lines = (random_run / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0])
    if not isinstance(record.get("diagnosis"), dict):
        env = gym.make("SQL-v0", max_turns=4)
        env.reset(options={"task_id": record["task_id"]})
        info: dict[str, Any] = {}
        for message in record["messages"][2:]:
            if message["role"] != "assistant":
                continue
            calls = message.get("tool_calls") or []
            action = message.get("content") or "" if not calls else "".join(
                "<tool_call>" + json.dumps({"name": call["function"]["name"],
                                            "arguments": json.loads(call["function"]["arguments"] or "{}")})
                + "</tool_call>" for call in calls)
            *_, info = env.step(action)
        env.close()
        record["diagnosis"] = info["diagnosis"]
    out = runs_root / "diagnosed"
    out.mkdir()
    shutil.copy(random_run / "run.json", out / "run.json")
    missing = {**json.loads(lines[1]), "env_id": "Nowhere-v0"}  # an env no installed plugin provides
    (out / "trajectories.jsonl").write_text(json.dumps(record) + "\n" + json.dumps(missing) + "\n", encoding="utf-8")
    return out
