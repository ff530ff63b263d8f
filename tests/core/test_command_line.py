"""The `agentgym` command line, run in-process with click's runner against a registered test env."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from zoo import ZooEnv, zoo_tasks

import agentgym
from agentgym import Task, ToolEnv, load_tasks
from agentgym.cli import main


def generate_zoo(seed: int = 0, **options: Any) -> list[Task]:
    count = int(options.get("count", 6))
    return zoo_tasks(count)


class WrongOracleEnv(ToolEnv):
    def __init__(self, **kwargs: Any) -> None:
        bad = [task.model_copy(update={"solution": [{"name": "submit", "arguments": {"answer": -1}}]})
               for task in zoo_tasks(2)]
        super().__init__(tasks=bad, tools=[], **kwargs)


agentgym.register(id="TestZoo-v0", entry_point=ZooEnv, generator=f"{__name__}:generate_zoo")
agentgym.register(id="TestBrokenZoo-v0", entry_point=WrongOracleEnv)


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_help_lists_every_verb(runner: CliRunner) -> None:
    result = runner.invoke(main, ["--help"])
    assert result.exit_code == 0
    for verb in ("list", "info", "play", "check", "tasks", "demo", "sandbox", "eval", "export"):
        assert verb in result.output


def test_info_shows_tools_families_and_splits(runner: CliRunner) -> None:
    result = runner.invoke(main, ["info", "TestZoo-v0", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["tasks"] == 6 and summary["splits"] == {"test": 2, "train": 4}
    assert summary["families"] == {"count": 3, "count-twice": 3}
    assert summary["tools"][0]["function"]["parameters"]["required"] == ["kind"]


def test_unknown_env_is_a_clear_error(runner: CliRunner) -> None:
    result = runner.invoke(main, ["info", "NoSuch-v0"])
    assert result.exit_code == 1
    assert "unknown environment 'NoSuch-v0'; registered:" in result.output and "TestZoo-v0" in result.output


def test_play_lets_a_person_solve_a_task(runner: CliRunner) -> None:
    keystrokes = "count_animals kind=lion\nfeed kind='big cat' kilograms=2\n:tools\nnonsense\n{\"name\": \"submit\", \"arguments\": {\"answer\": 3}}\n"
    result = runner.invoke(main, ["play", "TestZoo-v0", "--task-id", "zoo-0"], input=keystrokes)
    assert result.exit_code == 0, result.output
    assert "How many lions are in the zoo?" in result.output
    assert "\n3\n" in result.output and "Error: no tool call found" in result.output
    assert "fed 2.0 kg to the big cats" in result.output
    assert "episode over reward=1.000" in result.output and '"answer": 1.0' in result.output


def test_check_passes_and_fails_with_reasons(runner: CliRunner) -> None:
    good = runner.invoke(main, ["check", "TestZoo-v0", "--samples", "0"])
    assert good.exit_code == 0, good.output
    assert "PASS oracle solves tasks: oracle solved 6 of 6 tasks" in good.output
    bad = runner.invoke(main, ["check", "TestBrokenZoo-v0"])
    assert bad.exit_code == 1
    assert "FAIL oracle solves tasks: AssertionError: 2 of 2 tasks not solved by the oracle" in bad.output
    assert "PASS garbage never raises" in bad.output


def test_tasks_generate_writes_a_loadable_file(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "zoo.jsonl"
    result = runner.invoke(main, ["tasks", "generate", "TestZoo-v0", "--out", str(out), "--option", "count=4"])
    assert result.exit_code == 0, result.output
    assert len(load_tasks(out)) == 4 and "count: 2" in result.output
    no_generator = runner.invoke(main, ["tasks", "generate", "TestBrokenZoo-v0", "--out", str(out)])
    assert no_generator.exit_code == 1 and "registered no generator" in no_generator.output


def test_bad_env_arg_is_explained(runner: CliRunner) -> None:
    result = runner.invoke(main, ["info", "TestZoo-v0", "--env-arg", "split"])
    assert result.exit_code == 2 and "is not KEY=VALUE" in result.output
    result = runner.invoke(main, ["info", "TestZoo-v0", "--env-arg", "split=validation"])
    assert result.exit_code == 1 and "no tasks match split='validation'" in result.output


def test_an_unknown_env_argument_lists_the_accepted_ones_with_the_close_one(runner: CliRunner) -> None:
    result = runner.invoke(main, ["info", "TestZoo-v0", "--env-arg", "splt=test"])
    assert result.exit_code == 1, result.output
    line = result.output.strip()
    assert "\n" not in line and "Traceback" not in line and "unexpected keyword" not in line
    assert "TestZoo-v0 takes no argument 'splt' (did you mean 'split'?); it takes: " in line
    for accepted in ("families", "max_turns", "perturb", "split", "tasks"):
        assert accepted in line.split("it takes: ")[1].split(", ")
    # An env whose class takes **kwargs it passes on to ToolEnv is read through the chain, to ToolEnv's own list.
    broken = runner.invoke(main, ["info", "TestBrokenZoo-v0", "--env-arg", "bogus=1"])
    assert broken.exit_code == 1 and "TestBrokenZoo-v0 takes no argument 'bogus'; it takes:" in broken.output
    assert "max_turns" in broken.output


def test_an_env_argument_the_env_takes_still_works(runner: CliRunner) -> None:
    result = runner.invoke(main, ["info", "TestZoo-v0", "--env-arg", "split=test", "--json"])
    assert result.exit_code == 0 and json.loads(result.output)["tasks"] == 2


def test_info_shows_each_tool_description_whole_with_its_brackets(runner: CliRunner) -> None:
    result = runner.invoke(main, ["info", "ClinicalQA-v0"])
    assert result.exit_code == 0, result.output
    described = json.loads(runner.invoke(main, ["info", "ClinicalQA-v0", "--json"]).output)["tools"]
    calculate = next(tool["function"]["description"] for tool in described if tool["function"]["name"] == "calculate")
    # Every line a model receives is printed, bracketed text included (rich markup once ate "[10^9/L]").
    for line in calculate.splitlines():
        assert line.strip() in result.output, line
    assert calculate.count("\n- ") == 21 and "platelets [10^9/L]" in result.output  # the 21 calculators
    # ClinicalQA has no patient record: its calculators take their inputs from the question.
    assert "from the question" in calculate and "from the record" not in calculate


def test_a_rerun_eval_says_it_resumed_and_the_report_counts_in_words(runner: CliRunner, tmp_path: Path) -> None:
    command = ["eval", "TestZoo-v0", "--agent", "oracle", "--n", "1", "--out", str(tmp_path / "run")]
    first = runner.invoke(main, command)
    assert first.exit_code == 0, first.output
    assert "resuming" not in first.output
    report = (tmp_path / "run" / "report.md").read_text()
    assert "1 episode over 1 task of split" in report and "(1 sample per task," in report and "1 worker)" in report
    again = runner.invoke(main, command)
    assert again.exit_code == 0, again.output
    assert f"resuming {tmp_path / 'run'}: 1/1 planned episodes are already done; running the remaining 0" in again.stderr


def test_the_local_backend_notice_is_said_once(monkeypatch: pytest.MonkeyPatch,
                                               caplog: pytest.LogCaptureFixture) -> None:
    # Docker's absence is simulated (the test machine may have it): the notice is about what is said, not run.
    from agentgym.sandbox import backends

    monkeypatch.setattr(backends, "docker_problem", lambda image: "the Docker daemon is not running (simulated)")
    monkeypatch.setattr(backends, "_auto_choice", {})
    monkeypatch.setattr(backends, "_warned_local", set())
    monkeypatch.delenv("AGENTGYM_SANDBOX", raising=False)
    with caplog.at_level("WARNING"):
        for image in ("image-a", "image-a", "image-b"):
            assert backends.choose_backend("auto", image, allow_weak_isolation=True) == "local"
    notices = [record for record in caplog.records if "using the local backend" in record.getMessage()]
    assert len(notices) == 1
