"""Evaluation metrics over finished episodes: success rate, unbiased pass@k, pass^k, PASS@(k,T), turns and
tool-error rate, and the distribution of diagnosis labels, overall and grouped (by env, family, difficulty), with
task-level bootstrap confidence intervals.

Samples of one task are not independent, so every confidence interval resamples *tasks* (with all their
samples), not episodes.

An episode whose grading failed for reasons outside the agent (diagnosis `infra_error`, docs/diagnosis.md) is no
measurement of the agent: it is left out of every metric and counted apart, in `infra_failed`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentgym.diagnosis import INFRA_ERROR


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimator of Chen et al. (2021): 1 - C(n-c, k) / C(n, k).

    The probability that at least one of `k` samples drawn without replacement from `n` samples, `c` of them
    correct, is correct.

    Raises:
        ValueError: unless 0 <= c <= n and 1 <= k <= n.
    """
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"pass@{k} needs at least {k} samples per task, got n={n}")
    if n - c < k:
        return 1.0
    # the product form avoids the huge binomials of the closed form
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The unbiased pass^k estimator: C(c, k) / C(n, k).

    The probability that all `k` samples drawn without replacement from `n` samples, `c` of them correct, are
    correct: how consistently an agent solves a task, where pass@k says whether it can at all. pass^1 equals
    pass@1.

    Raises:
        ValueError: unless 0 <= c <= n and 1 <= k <= n.
    """
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"pass^{k} needs at least {k} samples per task, got n={n}")
    if c < k:
        return 0.0
    # C(c, k) / C(n, k) = prod_{i=0}^{k-1} (c - i) / (n - i), without the huge binomials
    return math.prod((c - i) / (n - i) for i in range(k))


@dataclass(frozen=True)
class TaskSamples:
    """The finished samples of one task: per sample, success, turns, tool calls, tool errors and the reward the
    env paid (empty when the records carry none)."""

    key: str
    successes: tuple[bool, ...]
    turns: tuple[int, ...]
    tool_calls: tuple[int, ...]
    tool_errors: tuple[int, ...]
    rewards: tuple[float, ...] = ()

    @property
    def n(self) -> int:
        return len(self.successes)

    def correct_within(self, max_turns: int | None = None) -> int:
        """Samples that succeeded, using at most `max_turns` turns when given."""
        return sum(1 for ok, turns in zip(self.successes, self.turns)
                   if ok and (max_turns is None or turns <= max_turns))


def record_success(record: Mapping[str, Any], success_threshold: float = 1.0) -> bool:
    """Whether one trajectory record is a success, from the verifier's score alone.

    A record that carries its `reward_breakdown` (with "answer") and `terminated` is judged again here:
    submitted, no agent error, and `reward_breakdown["answer"] >= success_threshold`, whatever shaped reward it
    was paid. An older or foreign record without them falls back on its own `success` field.
    """
    breakdown = record.get("reward_breakdown")
    if isinstance(breakdown, Mapping) and "answer" in breakdown and "terminated" in record:
        answer = breakdown["answer"]
        if isinstance(answer, bool) or not isinstance(answer, (int, float)):
            return False
        return bool(record["terminated"]) and record.get("error") is None and float(answer) >= success_threshold
    return bool(record["success"])


def _reward_of(record: Mapping[str, Any]) -> float:
    value = record.get("reward", 0.0)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


# Edges of the reward histogram: tenths of [0, 1]; a reward outside [0, 1] falls in the first or last bin.
REWARD_BINS = tuple(round(edge / 10, 1) for edge in range(11))


def reward_histogram(rewards: Sequence[float]) -> dict[str, list[Any]]:
    """Counts of `rewards` in the bins `REWARD_BINS` (the last bin holds 1.0 itself), as
    {"edges": [0.0, 0.1, ..., 1.0], "counts": [10 ints]}."""
    values = np.clip(np.asarray(rewards, dtype=float), 0.0, 1.0)
    counts, _ = np.histogram(values, bins=np.asarray(REWARD_BINS))
    return {"edges": list(REWARD_BINS), "counts": [int(count) for count in counts]}


def group_samples(records: Iterable[Mapping[str, Any]], *, success_threshold: float = 1.0) -> list[TaskSamples]:
    """Group trajectory records (dicts with env_id, task_id, success, turns, tool_calls, tool_errors) by task.

    Success is `record_success(record, success_threshold)`: the verifier's score, never the shaped reward.
    """
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        grouped.setdefault(f"{record.get('env_id', '')}/{record['task_id']}", []).append(record)
    result = []
    for key in sorted(grouped):
        items = sorted(grouped[key], key=lambda item: int(item.get("sample", 0)))
        result.append(TaskSamples(
            key=key,
            successes=tuple(record_success(item, success_threshold) for item in items),
            turns=tuple(int(item["turns"]) for item in items),
            tool_calls=tuple(int(item.get("tool_calls", 0)) for item in items),
            tool_errors=tuple(int(item.get("tool_errors", 0)) for item in items),
            rewards=tuple(_reward_of(item) for item in items),
        ))
    return result


def _ratio(numerators: np.ndarray, denominators: np.ndarray) -> float:
    total = float(denominators.sum())
    return float(numerators.sum()) / total if total > 0 else float("nan")


def bootstrap_ratio_ci(numerators: Sequence[float] | np.ndarray, denominators: Sequence[float] | np.ndarray, *, resamples: int = 1000,
                       seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of sum(numerators) / sum(denominators), resampling the paired entries
    (one per task). Returns (nan, nan) with no entries or `resamples` = 0."""
    top = np.asarray(numerators, dtype=float)
    bottom = np.asarray(denominators, dtype=float)
    if len(top) == 0 or resamples <= 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(top), size=(resamples, len(top)))
    with np.errstate(invalid="ignore", divide="ignore"):
        values = top[picks].sum(axis=1) / bottom[picks].sum(axis=1)
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return float("nan"), float("nan")
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def pass_at_k_turns(tasks: Sequence[TaskSamples], k: int, turn_limits: Sequence[int]) -> list[float]:
    """PASS@(k,T) for each T in `turn_limits`: the unbiased pass@k where a sample counts as correct only if it
    succeeded within T turns. Tasks with fewer than k samples are left out; nan when none is left."""
    eligible = [task for task in tasks if task.n >= k]
    if not eligible:
        return [float("nan")] * len(turn_limits)
    return [float(np.mean([pass_at_k(task.n, task.correct_within(limit), k) for task in eligible]))
            for limit in turn_limits]


def _clean(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def summarize_tasks(tasks: Sequence[TaskSamples], ks: Sequence[int], *, turn_limits: Sequence[int] = (),
                    resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Every metric of one group of tasks, as JSON-ready values (nan becomes null).

    Keys: tasks, episodes, success_rate(+_ci), mean_reward(+_ci: bootstrap over tasks), reward_min,
    reward_max, reward_histogram ({"edges", "counts"}), pass_at_k {k: value} (+ pass_at_k_ci), pass_hat_k
    {k: value} (+ pass_hat_k_ci; both over the tasks with at least k samples),
    mean_turns(+_ci), tool_error_rate(+_ci), tool_calls, tool_errors, and pass_at_k_turns {"turns": [...], k: [...]} when
    `turn_limits` is given.
    """
    episodes = np.array([task.n for task in tasks], dtype=float)
    successes = np.array([sum(task.successes) for task in tasks], dtype=float)
    turns = np.array([sum(task.turns) for task in tasks], dtype=float)
    calls = np.array([sum(task.tool_calls) for task in tasks], dtype=float)
    errors = np.array([sum(task.tool_errors) for task in tasks], dtype=float)
    reward_sums = np.array([sum(task.rewards) for task in tasks], dtype=float)
    every_reward = [reward for task in tasks for reward in task.rewards]

    def interval(top: np.ndarray, bottom: np.ndarray, offset: int) -> list[float | None]:
        low, high = bootstrap_ratio_ci(top, bottom, resamples=resamples, seed=seed + offset)
        return [_clean(low), _clean(high)]

    summary: dict[str, Any] = {
        "tasks": len(tasks),
        "episodes": int(episodes.sum()),
        "success_rate": _clean(_ratio(successes, episodes)),
        "success_rate_ci": interval(successes, episodes, 0),
        "mean_reward": _clean(_ratio(reward_sums, episodes)),
        "mean_reward_ci": interval(reward_sums, episodes, 3),
        "reward_min": min(every_reward) if every_reward else None,
        "reward_max": max(every_reward) if every_reward else None,
        "reward_histogram": reward_histogram(every_reward),
        "pass_at_k": {},
        "pass_at_k_ci": {},
        "pass_hat_k": {},
        "pass_hat_k_ci": {},
        "mean_turns": _clean(_ratio(turns, episodes)),
        "mean_turns_ci": interval(turns, episodes, 1),
        "tool_calls": int(calls.sum()),
        "tool_errors": int(errors.sum()),
        "tool_error_rate": _clean(_ratio(errors, calls)),
        "tool_error_rate_ci": interval(errors, calls, 2),
    }
    for k in ks:
        eligible = [task for task in tasks if task.n >= k]
        values = np.array([pass_at_k(task.n, sum(task.successes), k) for task in eligible], dtype=float)
        summary["pass_at_k"][str(k)] = _clean(float(values.mean())) if len(values) else None
        summary["pass_at_k_ci"][str(k)] = interval(values, np.ones_like(values), 10 + k)
        every = np.array([pass_hat_k(task.n, sum(task.successes), k) for task in eligible], dtype=float)
        summary["pass_hat_k"][str(k)] = _clean(float(every.mean())) if len(every) else None
        summary["pass_hat_k_ci"][str(k)] = interval(every, np.ones_like(every), 1000 + k)
    if turn_limits:
        curves: dict[str, Any] = {"turns": list(turn_limits)}
        for k in ks:
            curves[str(k)] = [_clean(value) for value in pass_at_k_turns(tasks, k, turn_limits)]
        summary["pass_at_k_turns"] = curves
    return summary


def _by_count(counter: Counter[str]) -> dict[str, int]:
    """Labels from the most to the least frequent (ties by name), so a report reads top-down."""
    return {label: count for label, count in sorted(counter.items(), key=lambda item: (-item[1], item[0]))}


def diagnosis_distribution(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """How often each diagnosis label (docs/diagnosis.md) occurs in `records` (trajectory dicts).

    Returns `{"episodes": {episode label: episodes}, "turns": {turn label: turns}, "domain": {domain label:
    episodes showing it}, "diagnosed": episodes with a diagnosis, "undiagnosed": episodes without one}`, each
    mapping ordered from the most frequent label. An episode has no diagnosis when its env gives none, when the
    agent's side ended it (an agent error, a loop), or when its record predates the field.
    """
    episodes: Counter[str] = Counter()
    turns: Counter[str] = Counter()
    domain: Counter[str] = Counter()
    missing = 0
    for record in records:
        found = record.get("diagnosis")
        if not isinstance(found, Mapping) or not isinstance(found.get("episode"), str):
            missing += 1
            continue
        episodes[found["episode"]] += 1
        counts = found.get("counts")
        if isinstance(counts, Mapping):
            turns.update({str(label): int(count) for label, count in counts.items() if isinstance(count, int)})
        labels = found.get("domain")
        if isinstance(labels, list):
            domain.update({str(label) for label in labels})
    return {"episodes": _by_count(episodes), "turns": _by_count(turns), "domain": _by_count(domain),
            "diagnosed": sum(episodes.values()), "undiagnosed": missing}


def infra_failed(record: Mapping[str, Any]) -> bool:
    """Whether the episode of `record` could not be graded because the infrastructure failed (its diagnosis is
    `infra_error`): no measurement of the agent, so metrics leave it out."""
    found = record.get("diagnosis")
    return isinstance(found, Mapping) and found.get("episode") == INFRA_ERROR


def infra_summary(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """`{"episodes": infra-failed episodes, "share": of all records (None when there are none), "task_ids": the
    tasks they belong to}`."""
    failed = [record for record in records if infra_failed(record)]
    return {"episodes": len(failed), "share": len(failed) / len(records) if records else None,
            "task_ids": sorted({str(record.get("task_id", "")) for record in failed})}


def summarize(records: Sequence[Mapping[str, Any]], ks: Sequence[int], *, max_turns: int | None = None,
              resamples: int = 1000, seed: int = 0, success_threshold: float = 1.0) -> dict[str, Any]:
    """The whole `summary.json` body for trajectory records: overall metrics plus `by_env`, `by_family` and
    `by_difficulty` groups (family keys are prefixed with the env id when records span several envs). Each of
    them carries `diagnosis` (`diagnosis_distribution`) beside the metrics of `summarize_tasks`.

    Success, pass@k and PASS@(k,T) count an episode as solved from its verifier score (`record_success`
    with `success_threshold`), never from a reward that shaping weights raised. Infra-failed episodes
    (`infra_failed`) are left out of those metrics and counted in `infra_failed` (`infra_summary`), overall and
    per group; the diagnosis distribution still shows them."""
    if max_turns is None:
        max_turns = max((int(record["turns"]) for record in records), default=0)
    turn_limits = list(range(1, max_turns + 1))
    several_envs = len({record.get("env_id", "") for record in records}) > 1

    def family_of(record: Mapping[str, Any]) -> str:
        return f"{record.get('env_id', '')}/{record['family']}" if several_envs else str(record["family"])

    groupings: dict[str, Callable[[Mapping[str, Any]], str]] = {
        "by_env": lambda record: str(record.get("env_id", "")),
        "by_family": family_of,
        "by_difficulty": lambda record: str(record["difficulty"]),
    }
    def metrics_of(bucket: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        kept = [record for record in bucket if not infra_failed(record)]
        return {**summarize_tasks(group_samples(kept, success_threshold=success_threshold), ks,
                                  turn_limits=turn_limits, resamples=resamples, seed=seed),
                "diagnosis": diagnosis_distribution(bucket), "infra_failed": infra_summary(bucket)}

    summary = metrics_of(records)
    for name, key_of in groupings.items():
        buckets: dict[str, list[Mapping[str, Any]]] = {}
        for record in records:
            buckets.setdefault(key_of(record), []).append(record)
        summary[name] = {key: metrics_of(bucket) for key, bucket in sorted(buckets.items())}
    return summary
