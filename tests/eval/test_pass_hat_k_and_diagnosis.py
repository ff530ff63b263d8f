"""pass^k against hand-worked values, and the diagnosis distribution in `summary.json` and `report.md`, from a
real `agentgym eval` run on the toy env and from hand-made records."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentgym.cli import main
from agentgym.metrics import diagnosis_distribution, pass_at_k, pass_hat_k, summarize
from agentgym.report import write_report
from agentgym.rollout import Trajectory


def test_pass_hat_k_matches_hand_worked_binomials() -> None:
    # C(c, k) / C(n, k)
    assert pass_hat_k(5, 3, 2) == pytest.approx(3 / 10)            # C(3,2)=3, C(5,2)=10
    assert pass_hat_k(4, 4, 3) == 1.0                              # every sample succeeded
    assert pass_hat_k(6, 2, 3) == 0.0                              # fewer successes than k
    assert pass_hat_k(10, 3, 1) == pytest.approx(pass_at_k(10, 3, 1)) == pytest.approx(0.3)  # pass^1 = pass@1
    assert pass_hat_k(200, 150, 40) == pytest.approx(math.comb(150, 40) / math.comb(200, 40))
    with pytest.raises(ValueError, match="at least 4 samples"):
        pass_hat_k(3, 1, 4)
    with pytest.raises(ValueError, match="0 <= c <= n"):
        pass_hat_k(3, 4, 1)


def _record(task: str, sample: int, success: bool, family: str, diagnosis: dict[str, Any] | None
            ) -> dict[str, Any]:
    return {"env_id": "E-v0", "task_id": task, "sample": sample, "success": success, "turns": 2, "family": family,
            "difficulty": "easy", "tool_calls": 2, "tool_errors": 0, "diagnosis": diagnosis}


def _diagnosis(episode: str, counts: dict[str, int], domain: list[str] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    turns = [label for label, count in counts.items() for _ in range(count)]
    return {"episode": episode, "turns": turns, "counts": counts, "domain": list(domain), "truncated": False}


RECORDS = [
    # t1 (family a): 3 of 3 succeed; t2 (a): 1 of 3; t3 (b): 2 of 3, one sample without a diagnosis
    _record("t1", 0, True, "a", _diagnosis("solved", {"ok": 1, "submitted": 1})),
    _record("t1", 1, True, "a", _diagnosis("solved", {"ok": 1, "submitted": 1}, ["query_does_not_parse"])),
    _record("t1", 2, True, "a", _diagnosis("solved", {"submitted": 1})),
    _record("t2", 0, False, "a", _diagnosis("wrong_answer", {"ok": 1, "submitted": 1}, ["result_superset"])),
    _record("t2", 1, False, "a", _diagnosis("no_progress", {"ok": 1, "repeated_call": 3})),
    _record("t2", 2, True, "a", _diagnosis("solved", {"ok": 1, "submitted": 1})),
    _record("t3", 0, True, "b", _diagnosis("solved", {"ok": 2, "submitted": 1})),
    _record("t3", 1, True, "b", _diagnosis("solved", {"ok": 1, "submitted": 1})),
    _record("t3", 2, False, "b", None),  # an agent error: the env never finished the episode
]


def test_summary_reports_pass_hat_k_overall_and_per_family() -> None:
    summary = summarize(RECORDS, [1, 2, 3], resamples=100)
    # per task pass^2 = C(c,2)/C(3,2): t1 3/3 -> 1, t2 0/3 -> 0, t3 1/3
    assert summary["pass_hat_k"]["2"] == pytest.approx((1 + 0 + 1 / 3) / 3)
    assert summary["pass_hat_k"]["3"] == pytest.approx((1 + 0 + 0) / 3)
    assert summary["pass_hat_k"]["1"] == pytest.approx(summary["pass_at_k"]["1"])
    assert summary["pass_at_k"]["2"] == pytest.approx((1 + 2 / 3 + 1) / 3)  # pass@k >= pass^k
    assert summary["by_family"]["a"]["pass_hat_k"]["2"] == pytest.approx(1 / 2)
    assert summary["by_family"]["b"]["pass_hat_k"]["3"] == 0.0
    low, high = summary["pass_hat_k_ci"]["2"]
    assert 0.0 <= low <= summary["pass_hat_k"]["2"] <= high <= 1.0


def test_summary_reports_the_label_distribution_per_env_and_family() -> None:
    summary = summarize(RECORDS, [1], resamples=0)
    overall = summary["diagnosis"]
    assert overall["episodes"] == {"solved": 6, "no_progress": 1, "wrong_answer": 1}  # most frequent first
    assert list(overall["episodes"]) == ["solved", "no_progress", "wrong_answer"]
    assert overall["turns"] == {"ok": 8, "submitted": 7, "repeated_call": 3}
    assert overall["domain"] == {"query_does_not_parse": 1, "result_superset": 1}
    assert overall["diagnosed"] == 8 and overall["undiagnosed"] == 1
    assert summary["by_family"]["b"]["diagnosis"]["episodes"] == {"solved": 2}
    assert summary["by_family"]["a"]["diagnosis"]["domain"] == {"query_does_not_parse": 1, "result_superset": 1}
    assert summary["by_env"]["E-v0"]["diagnosis"] == overall
    # Records written before the field existed load and count as undiagnosed.
    old = {key: value for key, value in RECORDS[0].items() if key != "diagnosis"}
    assert diagnosis_distribution([old])["undiagnosed"] == 1


def test_report_shows_pass_hat_k_and_the_labels(tmp_path: Path) -> None:
    summary = summarize(RECORDS, [1, 2], resamples=0)
    summary["run"] = {"agent": "scripted", "envs": ["E-v0"], "samples": 3, "seed": 0, "backend": "thread",
                      "workers": 1, "success_threshold": 1.0, "split": "test"}
    summary.update(complete=True, missing_episodes=0)
    report = write_report(tmp_path, summary, RECORDS, plots=False).read_text()
    assert "pass^2" in report and "pass^1" not in report
    assert "## Failure diagnosis" in report and "### Episode labels by family" in report
    assert "| `solved` | `no_progress` | `wrong_answer` |" in report
    assert "| a | 6 | 4 (67%) | 1 (17%) | 1 (17%) |" in report  # family a: 6 diagnosed episodes
    assert "`result_superset`" in report and "1 episodes carry no diagnosis" in report


def test_trajectory_files_without_the_field_still_load() -> None:
    record = Trajectory(env_id="E-v0", task_id="t", family="f", difficulty="easy", split="test", seed=0, sample=0,
                        reward=1.0, success=True, turns=1, terminated=True, truncated=False, tool_calls=1,
                        tool_errors=0, messages=[], reward_breakdown={"answer": 1.0}).to_dict()
    record.pop("diagnosis")
    assert Trajectory.from_dict(record).diagnosis is None


def test_eval_run_carries_each_episode_diagnosis(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["eval", "EvalToy-v0", "--out", str(out), "--no-progress", "--no-plots",
                                       "--agent", "random", "--n", "6", "--k", "2"])
    assert result.exit_code == 0, result.output
    assert "diagnosis: " in result.output  # the console table is too narrow here to read its headers
    records = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert records and all(record["diagnosis"]["episode"] for record in records)
    assert all(len(record["diagnosis"]["turns"]) == record["turns"] for record in records)
    summary = json.loads((out / "summary.json").read_text())
    labels = [record["diagnosis"]["episode"] for record in records]
    assert summary["diagnosis"]["episodes"] == {label: labels.count(label) for label in summary["diagnosis"]["episodes"]}
    assert sum(summary["diagnosis"]["episodes"].values()) == len(records)
    for family, group in summary["by_family"].items():
        assert sum(group["diagnosis"]["episodes"].values()) == group["episodes"], family
        assert set(group["pass_hat_k"]) == {"1", "2"}
    assert "## Failure diagnosis" in (out / "report.md").read_text()
