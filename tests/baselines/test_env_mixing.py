"""Env mixing: one policy trained on two envs (the baselines' toy env and SQL-v0) through TRL's
multi-environment `environment_factory`, a dataset mixed in the given shares, and clear errors for a bad --mix.

The training run forces the tiny model's generations (forcing.py says why): every toy rollout submits its word,
every second SQL rollout replays the task's solution and the others submit a wrong query, so the per-env reward
columns must read 1.0 and 0.5.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import gymnasium as gym
import pytest
import torch
import toy_env
from agentgym_baselines.adapter import environment_factory
from agentgym_baselines.cli import train
from agentgym_baselines.mixing import ENVIRONMENT_COLUMN, mixed_task_dataset, parse_mix
from agentgym_baselines.tiny import build_tiny_model
from agentgym_baselines.training import RunSettings, build_trainer
from click.testing import CliRunner
from forcing import force_generations, replay_or_wrong, tool_call

import agentgym

TOY, SQL = toy_env.ENV_ID, "SQL-v0"


@pytest.fixture(scope="module", autouse=True)
def _sql_installed() -> None:
    if SQL not in {record.id for record in agentgym.registered()}:
        if os.environ.get("CI"):  # make install puts every distribution in; missing is a failure
            pytest.fail("CI installs every distribution, but SQL-v0 is missing: run make install")
        pytest.skip("SQL-v0 is not installed (pip install -e domains/sql)")


def test_dataset_mixes_tasks_in_the_given_shares() -> None:
    dataset = mixed_task_dataset([TOY, SQL], [1.0, 3.0], split="train", seed=0, size=40)
    rows = dataset.to_list()
    assert len(rows) == 40
    assert sum(row[ENVIRONMENT_COLUMN] == TOY for row in rows) == 10  # 1/4 of the rows
    assert set(rows[0]) == {"prompt", "task_id", "seed", ENVIRONMENT_COLUMN}  # no answer column
    known = {env_id: {task.id for task in gym.make(env_id).unwrapped.task_set} for env_id in (TOY, SQL)}
    assert all(row["task_id"] in known[row[ENVIRONMENT_COLUMN]] for row in rows)
    toy_rows = [row["task_id"] for row in rows if row[ENVIRONMENT_COLUMN] == TOY]
    assert len(set(toy_rows)) == 8  # the toy env's 8 train tasks, each once before any repeats
    assert [row[ENVIRONMENT_COLUMN] for row in rows[:12]] != sorted(row[ENVIRONMENT_COLUMN] for row in rows[:12])
    assert mixed_task_dataset([TOY, SQL], [1.0, 3.0], seed=0, size=40).to_list() == rows  # seeded
    equal = mixed_task_dataset([TOY, SQL], parse_mix(None, 2), seed=1).to_list()
    assert abs(sum(row[ENVIRONMENT_COLUMN] == TOY for row in equal) * 2 - len(equal)) <= 1  # equal shares


def test_one_policy_trains_on_two_envs_with_their_own_tools(tmp_path: Path) -> None:
    tasks = {task.prompt: task for task in gym.make(SQL).unwrapped.task_set}
    model, tokenizer = build_tiny_model(3)

    def choose(row: int, prompt: str) -> str:
        user = prompt.split("<|im_start|>user\n", 1)[1].split("<|im_end|>", 1)[0]
        turns = prompt.split("<|im_start|>assistant")[1:-1]
        if user.startswith("Submit the word"):
            word = user.split()[-1].rstrip(".")
            return tool_call("submit", {"answer": word}) if not turns else "Done."
        task = tasks[user]
        return replay_or_wrong(task, turns, solve=row % 2 == 0)

    prompts = force_generations(model, tokenizer, choose)
    config = {"max_steps": 1, "num_generations": 2, "per_device_train_batch_size": 8, "max_completion_length": 256,
              "learning_rate": 1e-2, "save_strategy": "no"}
    settings = RunSettings(method="grpo", env_id=f"{TOY},{SQL}", model="tiny:random", output_dir=str(tmp_path / "mix"),
                           config=config)
    trainer = build_trainer(settings, model, tokenizer)
    before = {name: value.detach().clone() for name, value in model.named_parameters()}
    trainer.train()
    assert set(trainer.environment_factories) == {TOY, SQL}
    # each rollout's prompt lists its own env's tools only
    first_turn = [prompt for prompt in prompts if prompt.count("<|im_start|>assistant") == 1]
    toy_prompts = [prompt for prompt in first_turn if "Submit the word" in prompt]
    sql_prompts = [prompt for prompt in first_turn if "Submit the word" not in prompt]
    assert toy_prompts and sql_prompts
    assert all('"lookup"' in prompt and '"execute_sql"' not in prompt for prompt in toy_prompts)
    assert all('"execute_sql"' in prompt and '"lookup"' not in prompt for prompt in sql_prompts)
    # one reward column per env, in the metrics file as in the trainer's log
    toy_column = f"rewards/{environment_factory(TOY).__name__}/mean"
    sql_column = f"rewards/{environment_factory(SQL).__name__}/mean"
    logged = [json.loads(line) for line in (tmp_path / "mix" / "metrics.jsonl").read_text().splitlines()]
    steps = [entry for entry in logged if "reward" in entry]
    assert len(steps) == 1  # one step of 4 tasks, both envs among them (asserted above)
    assert steps[0][toy_column] == pytest.approx(1.0) and steps[0][sql_column] == pytest.approx(0.5)
    assert any(not torch.equal(before[name], value) for name, value in model.named_parameters())


@pytest.mark.parametrize(("arguments", "message"), [
    (["--env", f"{TOY},{SQL}", "--mix", "0.5,0.3,0.2"], "--mix has 3 share(s) but --env names 2 env(s)"),
    (["--env", f"{TOY},{SQL}", "--mix", "0.5,-1"], "--mix share -1 must be a finite number >= 0"),
    (["--env", f"{TOY},{SQL}", "--mix", "0,0"], "--mix shares sum to 0"),
    (["--env", f"{TOY},{SQL}", "--mix", "half,half"], "--mix share 'half' is not a number"),
    (["--env", TOY, "--mix", "1"], "--mix needs several envs in --env"),
    (["--env", f"{TOY},{TOY}"], f"--env names {TOY} more than once"),
    (["--env", f"{TOY},"], "has an empty env id"),
    (["--env", f"{TOY},{SQL}", "--remote", "ws://127.0.0.1:1"], "--remote has 1 URL(s) but --env names 2"),
])
def test_bad_env_lists_and_mixes_give_one_clear_line(tmp_path: Path, arguments: list[str], message: str) -> None:
    result = CliRunner().invoke(train, ["grpo", *arguments, "--model", "tiny:random",
                                        "--output", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output and not (tmp_path / "out").exists()


def test_cli_trains_on_a_mix_and_reports_it(tmp_path: Path) -> None:
    result = CliRunner().invoke(train, [
        "grpo", "--env", f"{TOY},{SQL}", "--mix", "1,3", "--model", "tiny:random", "--output", str(tmp_path / "out"),
        "--max-steps", "1", "--num-generations", "2", "--max-completion-length", "32", "--save-steps", "1000"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output[result.output.index("{\n"):])
    assert summary["mix"] == {TOY: 0.25, SQL: 0.75} and summary["steps"] == 1
    assert set(summary["last_reward_per_env"]) == {TOY, SQL}
    assert (tmp_path / "out" / "metrics.jsonl").exists()
