"""Eval defaults that cannot skew results: the test split by default, samples stratified by family, and
reward statistics beside success."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result
from eval_toyenv import toy_tasks

from agentgym.cli import main
from agentgym.tasks import save_tasks


def _eval(out: Path, *arguments: str) -> Result:
    return CliRunner().invoke(main, ["eval", "EvalToy-v0", "--out", str(out), "--no-progress", "--no-plots",
                                     *arguments])


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]


def test_eval_runs_the_test_split_by_default_and_says_so(tmp_path: Path) -> None:
    tasks = [task.model_copy(update={"split": "test" if index % 3 == 0 else "train"})
             for index, task in enumerate(toy_tasks(12))]
    task_file = tmp_path / "tasks.jsonl"
    save_tasks(tasks, task_file)
    result = _eval(tmp_path / "default", "--tasks", str(task_file))
    assert result.exit_code == 0, result.output
    assert {record["split"] for record in _records(tmp_path / "default")} == {"test"}
    assert len(_records(tmp_path / "default")) == 4
    assert "split: EvalToy-v0 test" in result.output
    summary = json.loads((tmp_path / "default" / "summary.json").read_text())
    assert summary["run"]["splits"] == {"EvalToy-v0": "test"}
    assert "of split test" in (tmp_path / "default" / "report.md").read_text()
    everything = _eval(tmp_path / "all", "--tasks", str(task_file), "--split", "all")
    assert everything.exit_code == 0 and len(_records(tmp_path / "all")) == 12
    train = _eval(tmp_path / "train", "--tasks", str(task_file), "--split", "train")
    assert train.exit_code == 0 and {record["split"] for record in _records(tmp_path / "train")} == {"train"}


def test_samples_are_stratified_by_family(tmp_path: Path) -> None:
    # 11 "count" tasks and 1 "code" task: any two tasks drawn cover both families
    for seed in ("0", "1", "2"):
        assert _eval(tmp_path / seed, "--n", "2", "--seed", seed).exit_code == 0
        assert {record["family"] for record in _records(tmp_path / seed)} == {"count", "code"}
    assert _eval(tmp_path / "per-family", "--per-family", "3").exit_code == 0
    families = [record["family"] for record in _records(tmp_path / "per-family")]
    assert sorted(families) == ["code", "count", "count", "count"]


def test_summary_and_report_carry_reward_statistics(tmp_path: Path) -> None:
    assert _eval(tmp_path / "run", "--agent", "random", "--n", "6").exit_code == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    rewards = [record["reward"] for record in _records(tmp_path / "run")]
    assert abs(summary["mean_reward"] - sum(rewards) / len(rewards)) < 1e-9
    low, high = summary["mean_reward_ci"]
    assert low <= summary["mean_reward"] <= high
    assert sum(summary["reward_histogram"]["counts"]) == 6 and len(summary["reward_histogram"]["edges"]) == 11
    for group in summary["by_family"].values():
        assert {"mean_reward", "mean_reward_ci", "reward_histogram"} <= set(group)
    report = (tmp_path / "run" / "report.md").read_text()
    assert "mean reward (95% CI)" in report and "## Reward distribution" in report
