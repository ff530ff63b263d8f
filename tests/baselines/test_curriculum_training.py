"""Curricula in TRL training: rows drawn as the trainer reads them, outcomes fed back, group shares logged,
the curriculum's state saved with each checkpoint and restored by --resume.

As in test_training.py, a random tiny model never calls a tool, so its generations are replaced with given text
(`forcing.force_generations`, the one stand-in). The trainer, the env, its verifier and diagnosis are real.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
import toy_env
from agentgym_baselines.adapter import environment_factory, task_dataset
from agentgym_baselines.cli import train
from agentgym_baselines.task_stream import STATE_FILE
from agentgym_baselines.tiny import build_tiny_model
from agentgym_baselines.training import RunSettings, build_trainer, run_training
from click.testing import CliRunner
from forcing import force_generations, tool_call
from trl import GRPOConfig, GRPOTrainer

from agentgym.curriculum import make_sampler

ENV = toy_env.ENV_ID
SOLVED_WORDS = {"apple", "river", "stone"}  # one rollout of each group of these tasks submits the right word
WRONG_WORDS = {"cloud", "tiger"}  # one rollout of each group of these submits a wrong word


def _word(prompt: str) -> str:
    return re.findall(r"Submit the word (\w+)", prompt)[-1]


def _policy(model: Any, tokenizer: Any) -> list[str]:
    """Force every generation; returns the prompts seen. Row 0 of a group acts on its task's word."""

    def choose(row: int, prompt: str) -> str:
        word = _word(prompt)
        if "<tool_response>" in prompt or row % 2:
            return "Done."
        if word in SOLVED_WORDS:
            return tool_call("submit", {"answer": word})
        if word in WRONG_WORDS:
            return tool_call("submit", {"answer": "nothing"})
        return "Done."

    return force_generations(model, tokenizer, choose)


def _trained_words(prompts: list[str]) -> list[str]:
    """The task of each rollout, in order, from the first-turn prompts the model saw."""
    return [_word(prompt) for prompt in prompts if "<tool_response>" not in prompt]


def _train_tasks() -> list[Any]:
    return list(gym.make(ENV).unwrapped.task_set.filter(split="train"))


def _settings(output: Path, curriculum: str | None, **config: Any) -> RunSettings:
    values = {"max_steps": 2, "num_generations": 2, "per_device_train_batch_size": 4, "max_completion_length": 48,
              "learning_rate": 1e-2, "save_strategy": "no"}
    values.update(config)
    return RunSettings(method="grpo", env_id=ENV, model="tiny:random", output_dir=str(output), config=values,
                       curriculum=curriculum)


def test_trls_own_trainer_reads_curriculum_rows_lazily_and_reports_each_outcome(tmp_path: Path) -> None:
    """Plain `trl.GRPOTrainer`, as in a user's own code: the sampler draws only as rows are read, and hears of
    every rollout's success and diagnosis label."""
    model, tokenizer = build_tiny_model(0)
    prompts = _policy(model, tokenizer)
    sampler = make_sampler("failure-focused", _train_tasks(), seed=1, focus=3)
    dataset = task_dataset(ENV, sampler=sampler)
    config = GRPOConfig(output_dir=str(tmp_path), max_steps=3, num_generations=2, per_device_train_batch_size=4,
                        max_completion_length=48, learning_rate=1e-2, save_strategy="no", report_to="none",
                        use_cpu=True, logging_steps=1)
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, args=config, train_dataset=dataset,
                          environment_factory=environment_factory(ENV))
    assert sampler.stats()["draws"] == 0  # nothing is drawn ahead of training (TRL's shuffle is a no-op here)
    trainer.train()

    words = _trained_words(prompts)
    assert len(words) == 12  # 3 steps x 2 groups x 2 rollouts
    assert words[0::2] == words[1::2]  # each draw is one group
    stats = sampler.stats()
    assert stats["episodes"] == 12
    assert stats["draws"] - len(dataset.stream.state_dict()["pending"]) == 6  # the groups trained
    assert stats["success_rate"] == pytest.approx(sum(word in SOLVED_WORDS for word in words[0::2]) / 12)
    # The labels are the env's diagnosis: a wrong answer submitted at once, with no tool call before it, is
    # `submitted_without_evidence`; a rollout the trainer ended without a submission has no diagnosis and counts as
    # `unfinished`.
    wrong = sum(word in WRONG_WORDS for word in words[0::2])
    failures = {"submitted_without_evidence": wrong,
                "unfinished": 12 - wrong - sum(word in SOLVED_WORDS for word in words[0::2])}
    total = sum(failures.values())
    assert sampler.focus_labels() == pytest.approx({label: count / total for label, count in failures.items()
                                                    if count})


def test_group_shares_are_logged_each_step_with_and_without_a_curriculum(tmp_path: Path) -> None:
    for curriculum in (None, "mixed-outcome"):
        model, tokenizer = build_tiny_model(1)
        prompts = _policy(model, tokenizer)
        output = tmp_path / str(curriculum)
        trainer = build_trainer(_settings(output, curriculum), model, tokenizer)
        if curriculum is not None:
            assert trainer.train_dataset.stream.groups_per_batch == 2  # a step's groups are drawn together
        trainer.train()
        groups = _trained_words(prompts)[0::2]  # two groups per step
        lines = [json.loads(line) for line in (output / "metrics.jsonl").read_text().splitlines()]
        steps = [line for line in lines if "reward" in line]
        assert len(steps) == 2
        for index, line in enumerate(steps):
            step_groups = groups[2 * index:2 * index + 2]
            solved = sum(word in SOLVED_WORDS for word in step_groups)
            assert line["groups/mixed_outcome_share"] == solved / 2  # a solved group holds one success, one failure
            # A group is without advantage when its rewards are equal: no success in it (a wrong submission and a
            # rollout that never submitted both score 0).
            assert line["groups/zero_advantage_share"] == (2 - solved) / 2
            assert ("curriculum/draws" in line) == (curriculum is not None)


def test_resume_continues_with_the_same_draws(tmp_path: Path) -> None:
    def run(output: Path, steps: int, resume: bool) -> list[str]:
        model, tokenizer = build_tiny_model(2)
        prompts = _policy(model, tokenizer)
        settings = _settings(output, "mixed-outcome", max_steps=steps, save_strategy="steps", save_steps=1)
        settings.resume = resume
        run_training(settings, model, tokenizer)
        return _trained_words(prompts)

    straight = run(tmp_path / "straight", 3, False)
    first = run(tmp_path / "resumed", 1, False)
    rest = run(tmp_path / "resumed", 3, True)
    assert first + rest == straight
    # The saved state (sampler, read-ahead rows drawn after the restore) is the uninterrupted run's.
    for step in (1, 3):
        saved = (tmp_path / "straight" / f"checkpoint-{step}" / STATE_FILE).read_text()
        assert json.loads((tmp_path / "resumed" / f"checkpoint-{step}" / STATE_FILE).read_text()) == json.loads(saved)

    # Resuming it without --curriculum, or another run with one, is refused in one line.
    common = ["grpo", "--env", ENV, "--model", "tiny:random", "--num-generations", "2", "--max-completion-length",
              "48", "--max-steps", "4", "--resume"]
    without = CliRunner().invoke(train, [*common, "--output", str(tmp_path / "resumed")])
    assert without.exit_code == 1 and "trained with --curriculum mixed-outcome" in without.output
    assert "Traceback" not in without.output
    other = CliRunner().invoke(train, [*common, "--output", str(tmp_path / "resumed"), "--curriculum", "uniform"])
    assert other.exit_code == 1 and "--curriculum mixed-outcome" in other.output


def test_cli_refuses_unknown_curricula_and_stray_options(tmp_path: Path) -> None:
    common = ["grpo", "--env", ENV, "--model", "tiny:random", "--output", str(tmp_path / "run")]
    unknown = CliRunner().invoke(train, [*common, "--curriculum", "mixed"])
    assert unknown.exit_code == 2 and "'mixed' is not one of" in unknown.output and "mixed-outcome" in unknown.output
    stray = CliRunner().invoke(train, [*common, "--curriculum-arg", "window=4"])
    assert stray.exit_code == 2 and "--curriculum-arg needs --curriculum NAME" in stray.output
    option = CliRunner().invoke(train, [*common, "--curriculum", "uniform", "--curriculum-arg", "windw=4",
                                        "--max-steps", "1"])
    assert option.exit_code == 1 and "unknown option(s) windw for the uniform curriculum" in option.output


def test_a_generation_batchs_groups_are_drawn_together_without_repeats() -> None:
    """With nothing learnt yet every task weighs the same, so one draw at a time would repeat tasks within a batch
    of 4 out of 8 tasks most of the time; drawn together they never do."""
    tasks = _train_tasks()
    for seed in range(3):
        dataset = task_dataset(ENV, sampler="mixed-outcome", sampler_options={"seed": seed})
        dataset.stream.groups_per_batch = 4
        rows = iter(dataset)
        batches = [[next(rows)["task_id"] for _ in range(4)] for _ in range(3)]
        assert all(len(set(batch)) == 4 for batch in batches)
        assert {task_id for batch in batches for task_id in batch} <= {task.id for task in tasks}
