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
    # the oracle replays its solution once, never retrying: a transient failure of its `submit` defeats it
    assert comparison["clean_success_rate"] == 1.0
    assert comparison["perturbed_success_rate"] < 1.0
    perturbed = [json.loads(line) for line in (out / "perturbed" / "trajectories.jsonl").read_text().splitlines()]
    contents = [str(message.get("content")) for record in perturbed for message in record["messages"]]
    assert any("unknown tool 'count_animals'" in content for content in contents)
    assert any("temporarily unavailable" in content for content in contents)
    assert "clean success 100.0%, perturbed" in result.output


def test_unknown_perturbation_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["eval", "EvalToy-v0", "--out", str(tmp_path / "r"), "--perturb", "quake"])
    assert result.exit_code == 2 and "choose from typos" in result.output
