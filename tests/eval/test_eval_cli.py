"""`agentgym eval` and `agentgym export` end to end on the toy env: files, resume, faults, determinism."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

HERE = Path(__file__).resolve().parent

from agentgym.cli import main
from agentgym.tasks import save_tasks


def _eval(out: Path, *arguments: str, env: str = "EvalToy-v0") -> Result:
    return CliRunner().invoke(main, ["eval", env, "--out", str(out), "--no-progress", *arguments])


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]


def _comparable(out: Path) -> list[dict[str, Any]]:
    records = _records(out)
    for record in records:
        record.pop("timings")
    return sorted(records, key=lambda record: (record["env_id"], record["task_id"], record["sample"]))


def test_oracle_run_writes_trajectories_summary_report_and_plots(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = _eval(out, "--agent", "oracle", "--k", "2")
    assert result.exit_code == 0, result.output
    records = _records(out)
    assert len(records) == 24 and all(record["success"] for record in records)
    first = records[0]
    assert {"messages", "reward_breakdown", "rewards", "timings", "tool_calls", "turns"} <= set(first)
    assert first["messages"][0]["role"] == "system" and first["timings"]["total_s"] > 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["success_rate"] == 1.0 and summary["pass_at_k"] == {"1": 1.0, "2": 1.0}
    assert summary["complete"] and summary["episodes"] == 24
    assert set(summary["by_family"]) == {"count", "code"}
    assert set(summary["by_difficulty"]) == {"easy", "medium", "hard"}
    assert summary["pass_at_k_turns"]["turns"] == [1, 2, 3, 4, 5, 6]
    assert summary["pass_at_k_turns"]["1"][0] == 0.0 and summary["pass_at_k_turns"]["1"][2] == 1.0
    report = (out / "report.md").read_text()
    assert "## By family" in report and "pass@2" in report
    for name in ("success_by_family", "success_by_difficulty", "pass_at_k_turns", "turns_histogram"):
        assert (out / "plots" / f"{name}.png").read_bytes().startswith(b"\x89PNG")


def test_rerun_resumes_repairs_a_cut_line_and_grows_n(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert _eval(out, "--n", "4", "--no-plots").exit_code == 0
    assert len(_records(out)) == 4
    path = out / "trajectories.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:3]) + lines[3][:40])  # a crash in the middle of the last write
    result = _eval(out, "--n", "4", "--no-plots")
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run"]["episodes_run_now"] == 1 and len(_records(out)) == 4
    again = _eval(out, "--n", "4", "--no-plots")
    assert json.loads((out / "summary.json").read_text())["run"]["episodes_run_now"] == 0, again.output
    grown = _eval(out, "--n", "6", "--no-plots")
    assert grown.exit_code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run"]["episodes_run_now"] == 2 and summary["episodes"] == 6


def test_rerun_with_other_settings_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert _eval(out, "--n", "2", "--no-plots").exit_code == 0
    result = _eval(out, "--n", "2", "--agent", "random", "--no-plots")
    assert result.exit_code != 0
    assert "other settings" in result.output and "agent: 'oracle' then, 'random' now" in result.output


def test_several_envs_a_task_file_and_env_args(tmp_path: Path) -> None:
    import eval_toyenv

    tasks = tmp_path / "tasks.jsonl"
    save_tasks(eval_toyenv.toy_tasks(3), tasks)
    out = tmp_path / "both"
    result = _eval(out, "--agent", "oracle", "--max-turns", "4", "--no-plots", env="EvalToy-v0,EvalToySmall-v0")
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["by_env"]["EvalToy-v0"]["episodes"] == 12 and summary["by_env"]["EvalToySmall-v0"]["tasks"] == 4
    assert "EvalToySmall-v0/count" in summary["by_family"]
    from_file = _eval(tmp_path / "file", "--tasks", str(tasks), "--env-arg", "step_delay=0", "--no-plots")
    assert from_file.exit_code == 0, from_file.output
    assert {record["task_id"] for record in _records(tmp_path / "file")} == {"toy-0", "toy-1", "toy-2"}
    bad = _eval(tmp_path / "bad", "--env-arg", "no_such_option=1")
    assert bad.exit_code != 0 and "could not make EvalToy-v0" in bad.output


def test_results_do_not_depend_on_workers_or_backend(tmp_path: Path) -> None:
    runs = {}
    for name, arguments in {"serial": ["--workers", "1"], "threads": ["--workers", "3", "--backend", "thread"],
                            "processes": ["--workers", "2", "--backend", "process"]}.items():
        result = _eval(tmp_path / name, "--agent", "random", "--k", "2", "--no-plots", *arguments)
        assert result.exit_code == 0, result.output
        runs[name] = _comparable(tmp_path / name)
    assert runs["serial"] == runs["threads"] == runs["processes"]
    assert len(runs["serial"]) == 24


def test_a_dead_worker_process_is_replaced_and_its_episode_retried(tmp_path: Path) -> None:
    marker = tmp_path / "crashed"
    result = _eval(tmp_path / "run", "--workers", "2", "--backend", "process", "--env-arg",
                   f"crash_marker={marker}", "--no-plots")
    assert result.exit_code == 0, result.output
    assert marker.exists()  # a worker really died
    records = _records(tmp_path / "run")
    assert sorted(record["task_id"] for record in records) == sorted(f"toy-{i}" for i in range(12))
    assert all(record["success"] for record in records)


def test_a_full_disk_gives_a_clear_error(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "trajectories.jsonl").symlink_to("/dev/full")  # every write fails with ENOSPC, like a full disk
    result = _eval(out, "--n", "2", "--no-plots")
    assert result.exit_code == 1
    assert "is full" in result.output and "run the same command again to resume" in result.output
    assert "Traceback" not in result.output


def test_export_writes_a_datasets_dataset(tmp_path: Path) -> None:
    import datasets

    out = tmp_path / "run"
    assert _eval(out, "--agent", "random", "--n", "3", "--k", "2", "--no-plots").exit_code == 0
    result = CliRunner().invoke(main, ["export", str(out), "--format", "hf", "--out", str(tmp_path / "ds")])
    assert result.exit_code == 0, result.output
    splits = datasets.load_from_disk(str(tmp_path / "ds"))
    assert list(splits) == ["train"]  # the toy env's tasks are all of the train split
    dataset = splits["train"]
    assert len(dataset) == 6
    row = dataset[0]
    assert row["messages"][0]["role"] == "system" and row["messages"][1]["role"] == "user"
    assert row["messages"][1]["content"].endswith("?")
    assert "count_animals" in [tool["function"]["name"] for tool in row["tools"]]
    assert isinstance(row["reward_breakdown"], dict) and "answer" in row["reward_breakdown"]
    oracle = tmp_path / "oracle"
    assert _eval(oracle, "--n", "2", "--no-plots").exit_code == 0
    assert CliRunner().invoke(main, ["export", str(oracle), "--out", str(tmp_path / "sft"),
                                     "--only-success"]).exit_code == 0
    calls = datasets.load_from_disk(str(tmp_path / "sft"))["train"][0]["messages"][2]["tool_calls"]
    assert calls[0]["function"]["name"] in ("count_animals", "keeper_code")


def test_ctrl_c_keeps_finished_episodes_and_the_rerun_finishes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    command = [sys.executable, "-c", "import eval_toyenv; from agentgym.cli import main; main()",
               "eval", "EvalToy-v0", "--k", "3", "--env-arg", "step_delay=0.05", "--out", str(out),
               "--no-progress", "--no-plots"]
    environment = {**os.environ, "PYTHONPATH": str(HERE)}
    # Ctrl-C as in a terminal: a test run started in the background by a non-interactive shell inherits SIGINT
    # ignored, and Python then never raises KeyboardInterrupt; the eval would just finish.
    process = subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    path = out / "trajectories.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not path.exists() or path.read_text().count("\n") < 3):
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    output = process.communicate(timeout=60)[0].decode()
    assert process.returncode == 130, output
    assert "finished episodes are kept" in output
    kept = _records(out)
    assert 3 <= len(kept) < 36
    finished = subprocess.run(command, env=environment, capture_output=True, timeout=120, check=False)
    assert finished.returncode == 0, finished.stdout.decode() + finished.stderr.decode()
    records = _records(out)
    assert len(records) == 36 and len({(r["task_id"], r["sample"]) for r in records}) == 36
    assert records[:len(kept)] == kept


@pytest.mark.parametrize("arguments", [["--k", "3", "--samples", "2"], ["--k", "0"]])
def test_bad_k_is_explained(tmp_path: Path, arguments: list[str]) -> None:
    result = _eval(tmp_path / "run", *arguments)
    assert result.exit_code == 2 and "--k" in result.output
