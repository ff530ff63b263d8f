"""The estimators against values worked by hand."""

from __future__ import annotations

import math

import pytest

from agentgym.metrics import (
    TaskSamples,
    bootstrap_ratio_ci,
    group_samples,
    pass_at_k,
    pass_at_k_turns,
    summarize,
)


def test_pass_at_k_matches_hand_worked_binomials() -> None:
    # 1 - C(n-c, k) / C(n, k)
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)        # C(3,2)=3, C(5,2)=10
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)               # pass@1 is c/n
    assert pass_at_k(4, 1, 3) == pytest.approx(1 - 1 / 4)          # C(3,3)=1, C(4,3)=4
    assert pass_at_k(6, 0, 3) == 0.0
    assert pass_at_k(6, 4, 3) == 1.0                               # n-c=2 < k: every draw holds a success
    assert pass_at_k(200, 10, 100) == pytest.approx(1 - math.comb(190, 100) / math.comb(200, 100))


def test_pass_at_k_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError, match="at least 4 samples"):
        pass_at_k(3, 1, 4)
    with pytest.raises(ValueError, match="0 <= c <= n"):
        pass_at_k(3, 4, 1)


def test_pass_at_k_turns_counts_only_successes_within_the_turn_budget() -> None:
    # task A: successes in 2 and 4 turns, a failure in 5; task B: one success in 1 turn, one failure
    a = TaskSamples("e/a", (True, False, True), (2, 5, 4), (0, 0, 0), (0, 0, 0))
    b = TaskSamples("e/b", (True, False), (1, 3), (0, 0), (0, 0))
    assert pass_at_k_turns([a, b], 1, [1, 2, 4]) == pytest.approx([(0 + 1 / 2) / 2, (1 / 3 + 1 / 2) / 2,
                                                                   (2 / 3 + 1 / 2) / 2])
    # k=2 at T=2: A has c=1 of 3 -> 1 - C(2,2)/C(3,2) = 2/3; B has c=1 of 2 -> 1
    assert pass_at_k_turns([a, b], 2, [2]) == pytest.approx([(2 / 3 + 1) / 2])
    # k=3: only A has 3 samples; at T=5 it has successes -> 1
    assert pass_at_k_turns([a, b], 3, [1, 5]) == pytest.approx([0.0, 1.0])


def _record(task: str, sample: int, success: bool, turns: int, family: str = "f", calls: int = 2,
            errors: int = 0, difficulty: str = "easy", env: str = "E-v0") -> dict[str, object]:
    return {"env_id": env, "task_id": task, "sample": sample, "success": success, "turns": turns,
            "family": family, "difficulty": difficulty, "tool_calls": calls, "tool_errors": errors}


def test_summary_by_family_and_difficulty_matches_hand_counts() -> None:
    records = [
        _record("t1", 0, True, 2, "count"), _record("t1", 1, False, 6, "count", errors=1),
        _record("t2", 0, False, 3, "count", errors=2), _record("t2", 1, False, 3, "count"),
        _record("t3", 0, True, 1, "code", difficulty="hard", calls=1), _record("t3", 1, True, 2, "code",
                                                                            difficulty="hard", calls=1),
    ]
    summary = summarize(records, [1, 2], max_turns=6, resamples=200)
    assert summary["episodes"] == 6 and summary["tasks"] == 3
    assert summary["success_rate"] == pytest.approx(3 / 6)
    assert summary["pass_at_k"]["1"] == pytest.approx((1 / 2 + 0 + 1) / 3)
    assert summary["pass_at_k"]["2"] == pytest.approx((1 + 0 + 1) / 3)
    assert summary["mean_turns"] == pytest.approx(17 / 6)
    assert summary["tool_error_rate"] == pytest.approx(3 / 10)
    count = summary["by_family"]["count"]
    assert count["success_rate"] == pytest.approx(1 / 4) and count["pass_at_k"]["2"] == pytest.approx(1 / 2)
    assert summary["by_difficulty"]["hard"]["success_rate"] == 1.0
    curve = summary["pass_at_k_turns"]
    assert curve["turns"] == [1, 2, 3, 4, 5, 6]
    # pass@1 within T turns: T=1 only t3's first sample (1/2 of t3) -> (0 + 0 + 1/2)/3
    assert curve["1"][0] == pytest.approx(1 / 6)
    assert curve["1"][1] == pytest.approx((1 / 2 + 0 + 1) / 3)
    low, high = summary["success_rate_ci"]
    assert 0.0 <= low <= 0.5 <= high <= 1.0


def test_families_of_several_envs_are_kept_apart() -> None:
    records = [_record("t", 0, True, 1, env="A-v0"), _record("t", 0, False, 1, env="B-v0")]
    summary = summarize(records, [1], resamples=10)
    assert set(summary["by_family"]) == {"A-v0/f", "B-v0/f"}
    assert summary["by_env"]["A-v0"]["success_rate"] == 1.0
    assert len(group_samples(records)) == 2


def test_bootstrap_interval_resamples_tasks_and_is_degenerate_when_all_agree() -> None:
    assert bootstrap_ratio_ci([1, 1, 1], [1, 1, 1], resamples=100) == (1.0, 1.0)
    low, high = bootstrap_ratio_ci([0, 1, 2, 3, 4], [4, 4, 4, 4, 4], resamples=2000, seed=1)
    assert low < 0.5 < high
    assert bootstrap_ratio_ci([], [], resamples=10) != bootstrap_ratio_ci([], [], resamples=10)  # nan != nan
