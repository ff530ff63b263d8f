"""The curriculum bench's code path, small: the learn bench's setup, one GRPO step per sampler, the report.

`bench/curriculum.py` itself takes about half an hour; here every arm runs one optimizer step from a two-step
warm-up, and the checks are on what a reader of its report relies on: every arm starts from the same checkpoint
and gets the same rollouts, each arm really trained with its sampler (and the adaptive-feedback arm with
feedback on), and the mixed-outcome shares and test success come with intervals that bracket them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import curriculum

pytest.importorskip("agentgym.curriculum", reason="agentgym.curriculum (the samplers) is not installed")


@pytest.mark.slow  # three arms of the bench's whole path take about 4 minutes on 2 cores: make test-slow
def test_bench_compares_samplers_at_equal_rollouts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    arms = [arm for arm, (sampler, _) in curriculum.ARMS.items() if sampler in curriculum.available_samplers()]
    assert "uniform" in arms and "mixed-outcome" in arms
    out = tmp_path / "curriculum.json"
    code = curriculum.main(["--warmup-steps", "2", "--steps", "1", "--samples", "1", "--test-tasks", "2",
                            "--train-tasks", "4", "--max-completion-length", "48", "--arms", ",".join(arms),
                            "--out", str(out)])
    assert code == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    saved = json.loads(out.read_text())
    assert printed["figures"] == saved["figures"]
    reported = printed["arms"]
    assert list(reported) == arms
    assert {reported[arm]["rollouts"] for arm in arms} == {8}  # one step of one group of 8, every arm
    for arm in arms:
        sampler, feedback = curriculum.ARMS[arm]
        assert reported[arm]["sampler"] == sampler and reported[arm]["feedback"] == feedback
        assert reported[arm]["training_env_feedback"] == feedback  # the env the trainer rolled out in
        assert reported[arm]["sampler_stats_at_end"]  # the curriculum drew the rows and logged its state
        groups = reported[arm]["groups"]
        assert groups["groups"] == 1
        assert 0.0 <= groups["mixed_outcome_ci95_wilson"][0] <= groups["mixed_outcome_share"] <= \
            groups["mixed_outcome_ci95_wilson"][1] <= 1.0
        test = reported[arm]["after"]["test"]
        assert 0.0 <= test["ci95"][0] <= test["success"] <= test["ci95"][1] <= 1.0
        assert len(saved["curves"][arm]["mixed_outcome_share"]) == 1


def test_an_unknown_arm_is_refused_with_the_choices() -> None:
    with pytest.raises(SystemExit) as refused:
        curriculum.main(["--arms", "uniform,hardest-first"])
    assert "hardest-first" in str(refused.value) and "mixed-outcome" in str(refused.value)


def test_group_shares_count_mixed_groups_with_an_interval() -> None:
    log = [{"reward": 0.5, "frac_reward_zero_std": 0.0}, {"reward": 0.0, "frac_reward_zero_std": 1.0},
           {"reward": 1.0, "frac_reward_zero_std": 1.0}, {"reward": 0.25, "frac_reward_zero_std": 0.0}]
    shares = curriculum.group_shares(log, groups_per_step=1)
    assert shares["mixed_outcome_share"] == 0.5 and shares["groups"] == 4 and shares["mixed_groups"] == 2
    low, high = shares["mixed_outcome_ci95_wilson"]
    assert 0.0 < low < 0.5 < high < 1.0
