"""`agentgym eval --perturb`: the same agent on the clean and the perturbed env, compared."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from agentgym.cli import main


def test_perturbed_run_is_compared_with_the_clean_one(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["eval", "EvalToy-v0", "--agent", "oracle", "--out", str(out), "--no-progress",
                                       "--no-plots", "--perturb", "tool_rename,transient_errors", "--perturb-seed", "1",
                                       "--env-arg", "perturb_rate=1.0"])
    assert result.exit_code == 0, result.output
    comparison = json.loads((out / "perturbation.json").read_text())
    # The oracle retries a transient failure as the message tells it to (it used to replay its solution once
    # and lose every episode whose `submit` failed transiently), so neither kind costs it success; it calls
    # tools by their old names, which the renamed env refuses, but its submit carries the gold answer.
    assert comparison["clean_success_rate"] == 1.0
    assert comparison["perturbed_success_rate"] == 1.0
    assert comparison["by_kind"]["transient_errors"]["success_rate"] == 1.0
    assert comparison["by_kind"]["tool_rename"]["success_rate"] == 1.0
    retried = [json.loads(line) for line in
               (out / "perturbed-transient_errors" / "trajectories.jsonl").read_text().splitlines()]
    contents = [str(message.get("content")) for record in retried for message in record["messages"]]
    assert any("temporarily unavailable" in content for content in contents)
    perturbed = [json.loads(line) for line in (out / "perturbed" / "trajectories.jsonl").read_text().splitlines()]
    contents = [str(message.get("content")) for record in perturbed for message in record["messages"]]
    assert any("unknown tool 'count_animals'" in content for content in contents)
    assert "clean success 100.0%, perturbed" in result.output
    # the top report compares clean with each kind; each perturbed run's own report names its perturbation
    report = (out / "report.md").read_text()
    assert "| clean |" in report and "| transient_errors |" in report and "| tool_rename |" in report
    assert "| tool_rename+transient_errors |" in report and "## Success by family" in report
    assert "Perturbed: tool_rename" in (out / "perturbed-tool_rename" / "report.md").read_text()


def test_unknown_perturbation_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["eval", "EvalToy-v0", "--out", str(tmp_path / "r"), "--perturb", "quake"])
    assert result.exit_code == 2 and "choose from typos" in result.output
