"""The numbers behind the viewer's plots, computed from a run's episode index.

Success counts an episode from the verifier's score (`agentgym.metrics.record_success`), never from a shaped
reward. Intervals are 95% percentile bootstraps that resample tasks (with all their samples), as in
`agentgym.metrics`, because the samples of one task are not independent.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from agentgym.metrics import bootstrap_ratio_ci, pass_at_k

RESAMPLES = 1000


def _clean(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _by_task(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    tasks: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        tasks.setdefault(f"{row['env']}/{row['task']}", []).append(row)
    return tasks


def group_stats(rows: Sequence[Mapping[str, Any]], *, seed: int = 0) -> dict[str, Any]:
    """Tasks, episodes, success rate, mean reward and tool-error rate of `rows`, each rate with its interval."""
    tasks = _by_task(rows)
    groups = list(tasks.values())
    episodes = np.array([len(items) for items in groups], dtype=float)
    successes = np.array([sum(bool(item["success"]) for item in items) for items in groups], dtype=float)
    rewards = np.array([sum(float(item["reward"]) for item in items) for items in groups], dtype=float)
    calls = np.array([sum(int(item["tool_calls"]) for item in items) for items in groups], dtype=float)
    errors = np.array([sum(int(item["tool_errors"]) for item in items) for items in groups], dtype=float)
    turns = np.array([sum(int(item["turns"]) for item in items) for items in groups], dtype=float)

    def rate(top: np.ndarray, bottom: np.ndarray) -> dict[str, Any]:
        total = float(bottom.sum())
        value = float(top.sum()) / total if total > 0 else float("nan")
        low, high = bootstrap_ratio_ci(top, bottom, resamples=RESAMPLES, seed=seed)
        return {"value": _clean(value), "low": _clean(low), "high": _clean(high)}

    return {
        "tasks": len(groups), "episodes": int(episodes.sum()),
        "success": rate(successes, episodes), "reward": rate(rewards, episodes),
        "turns": rate(turns, episodes), "tool_error_rate": rate(errors, calls),
        "tool_calls": int(calls.sum()), "tool_errors": int(errors.sum()),
    }


def family_key(row: Mapping[str, Any], several_envs: bool) -> str:
    family = str(row.get("family") or "(no family)")
    return f"{row['env']}/{family}" if several_envs else family


def by_family(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """`group_stats` per family (prefixed with the env when the rows span several envs), sorted by name."""
    several_envs = len({row["env"] for row in rows}) > 1
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault(family_key(row, several_envs), []).append(row)
    return {name: group_stats(groups[name]) for name in sorted(groups)}


def pass_at_k_curve(rows: Sequence[Mapping[str, Any]], *, max_turns: int | None = None) -> dict[str, Any]:
    """Unbiased pass@k for k = 1 .. the fewest samples any task has, averaged over tasks; with `max_turns`,
    a sample counts as correct only when it succeeded within that many turns (PASS@(k,T))."""
    tasks = list(_by_task(rows).values())
    if not tasks:
        return {"ks": [], "values": []}
    smallest = min(len(items) for items in tasks)
    ks = list(range(1, smallest + 1))
    values = []
    for k in ks:
        scores = []
        for items in tasks:
            correct = sum(1 for item in items
                          if item["success"] and (max_turns is None or int(item["turns"]) <= max_turns))
            scores.append(pass_at_k(len(items), correct, k))
        values.append(float(np.mean(scores)))
    return {"ks": ks, "values": values, "samples_per_task": smallest, "tasks": len(tasks)}


def pass_at_k_turns(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """PASS@(k,T) over T = 1 .. the most turns any episode took, for k = 1 and the largest k available."""
    tasks = list(_by_task(rows).values())
    if not tasks:
        return {"turns": [], "curves": {}}
    smallest = min(len(items) for items in tasks)
    limit = max(int(row["turns"]) for row in rows) or 1
    turns = list(range(1, limit + 1))
    curves: dict[str, list[float]] = {}
    for k in sorted({1, smallest}):
        curves[str(k)] = [pass_at_k_curve(rows, max_turns=t)["values"][k - 1] for t in turns]
    return {"turns": turns, "curves": curves}


def histogram(values: Sequence[float], *, bins: int = 20, low: float | None = None,
              high: float | None = None) -> dict[str, Any]:
    """Counts of `values` in `bins` equal bins over [low, high] (default: their range, or [0, 1] when all
    values lie there)."""
    data = np.asarray([value for value in values if math.isfinite(value)], dtype=float)
    if len(data) == 0:
        return {"edges": [], "counts": []}
    if low is None or high is None:
        low, high = float(data.min()), float(data.max())
        if low >= 0.0 and high <= 1.0:
            low, high = 0.0, 1.0
    if high <= low:
        high = low + 1.0
    counts, edges = np.histogram(data, bins=bins, range=(low, high))
    return {"edges": [float(edge) for edge in edges], "counts": [int(count) for count in counts]}


def integer_histogram(values: Sequence[int]) -> dict[str, Any]:
    """Counts of each integer from the smallest to the largest of `values` (turn counts)."""
    if not values:
        return {"values": [], "counts": []}
    low, high = min(values), max(values)
    counts = np.bincount(np.asarray(values, dtype=int) - low, minlength=high - low + 1)
    return {"values": list(range(low, high + 1)), "counts": [int(count) for count in counts]}


def training_series(metrics: Sequence[Mapping[str, Any]], *, limit: int = 12) -> dict[str, list[tuple[float, float]]]:
    """(step, value) series of each numeric key logged in `metrics.jsonl`, the reward and loss keys first."""
    series: dict[str, list[tuple[float, float]]] = {}
    for position, item in enumerate(metrics):
        step = item.get("step", position)
        if isinstance(step, bool) or not isinstance(step, (int, float)):
            step = position
        for key, value in item.items():
            if key == "step" or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            if math.isfinite(value):
                series.setdefault(str(key), []).append((float(step), float(value)))

    def priority(name: str) -> tuple[int, str]:
        lowered = name.lower()
        return (0 if "reward" in lowered else 1 if "loss" in lowered else 2 if "kl" in lowered else 3, name)

    return {name: series[name] for name in sorted(series, key=priority)[:limit] if len(series[name]) >= 1}
