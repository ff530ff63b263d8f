"""The learning bench's code path, small: real FHIR-v0 episodes, real TRL steps, the report it prints.

`bench/learn.py` itself takes about 30 minutes; here it runs with a handful of warm-up steps, one optimizer
step per method and two test tasks, and the checks are on what a reader of its report relies on: the warm-up
data are the oracle's episodes rendered as the trainer renders rollouts (never TT-OPD's hint), both methods get
the same steps and rollouts from the same start, and the report carries the figures and the curves.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import learn
from agentgym_baselines.adapter import shown_prompt, task_dataset
from agentgym_baselines.ttopd import TTOPDConfig
from agentgym_fhir.data import DEFAULT_PATIENTS


@pytest.fixture(autouse=True, scope="module")
def fhir_default_population() -> Iterator[None]:
    """The bench's population (2,000 patients) is a 0.9 GB store and minutes to build; these checks hold on FHIR-v0's
    own default population, which the env's first use puts in the cache anyway (README, section Tests)."""
    bench_patients = learn.PATIENTS
    learn.PATIENTS = DEFAULT_PATIENTS
    yield
    learn.PATIENTS = bench_patients


@pytest.fixture(scope="module")
def renderer(tmp_path_factory: pytest.TempPathFactory) -> learn.Renderer:
    model, tokenizer = learn.build_model(0)
    return learn.Renderer(learn.build("grpo", model, tokenizer, 1, 0, tmp_path_factory.mktemp("render")))


def test_env_is_the_fhir_family_with_its_oracle_tools() -> None:
    import gymnasium as gym

    learn.register()
    env = gym.make(learn.ENV_ID, **learn.env_kwargs())
    try:
        inner = env.unwrapped
        assert list(inner.tools) == list(learn.TOOLS)
        assert {task.family for task in inner.task_set} == {learn.FAMILY}
        assert {task.split for task in inner.task_set} == {"train", "test"}
        # every task takes two tool calls before submit, and the oracle solves it through the env
        task = next(iter(inner.task_set.filter(split="test")))
        env.reset(options={"task_id": task.id})
        names = [action["name"] for action in task.solution]
        assert names[-1] == "submit" and len(names) >= 3
        for action in task.solution:
            _, reward, terminated, _, _ = env.step(action)
        assert terminated and reward == 1.0
    finally:
        env.close()


def oracle_episodes(renderer: learn.Renderer, count: int = 3) -> tuple[list[Any], dict[str, Any], list[Any]]:
    """The first `count` train rows, every task by id, and the warm-up's (ids, labels) of those rows."""
    import gymnasium as gym

    rows = list(task_dataset(learn.ENV_ID, split="train", **learn.env_kwargs()))[:count]
    probe = gym.make(learn.ENV_ID, **learn.env_kwargs())
    tasks = {task.id: task for task in probe.unwrapped.task_set}
    probe.close()
    return rows, tasks, learn.oracle_sequences(renderer, rows, tasks)


def test_warm_up_data_are_oracle_episodes_rendered_as_the_trainer_renders(renderer: learn.Renderer) -> None:
    rows, tasks, sequences = oracle_episodes(renderer)
    trainer = renderer.trainer
    trainer._batch_environments = [None]
    shown = shown_prompt(rows[0], renderer.environment_class().reset(**rows[0]))  # as TRL fills it in
    prompt_ids, _, _ = trainer._tokenize_prompts([shown])
    ids, labels = sequences[0]
    assert ids[: len(prompt_ids[0])] == list(prompt_ids[0])  # TRL's own prompt tokens
    assert all(label == -100 for label in labels[: len(prompt_ids[0])])
    trained = renderer.tokenizer.decode([label for label in labels if label != -100])
    for action in tasks[rows[0]["task_id"]].solution:
        assert json.dumps(action["arguments"]) in trained  # each oracle call is a model turn
    assert "tool_response" not in trained  # tool results are context, never targets
    hint_prefix = TTOPDConfig.__dataclass_fields__["hint_template"].default.split("{")[0].strip()
    text = "".join(renderer.tokenizer.decode(sequence) for sequence, _ in sequences)
    assert hint_prefix not in text and "verified correct answer" not in text


def test_shared_prefix_loss_is_the_full_rows_loss(renderer: learn.Renderer) -> None:
    """The warm-up runs the system prompt and tools once per batch; its loss and gradient must be the full rows'."""
    import torch

    _, _, sequences = oracle_episodes(renderer)
    shared = learn.shared_prefix_length(sequences) - 1
    assert shared > 100  # the system prompt and the tool schemas
    model = renderer.trainer.model
    pad = renderer.tokenizer.pad_token_id

    def loss_and_gradient(cut: int) -> tuple[torch.Tensor, torch.Tensor]:
        model.zero_grad()
        ids, mask = learn.pad_batch([item[0][cut:] for item in sequences], pad, left=False)
        labels, _ = learn.pad_batch([item[1][cut:] for item in sequences], -100, left=False)
        prefix = torch.tensor(sequences[0][0][:cut], dtype=torch.long) if cut else None
        loss = learn.turn_loss(model, ids, mask, labels, prefix=prefix)
        loss.backward()
        gradient = torch.cat([parameter.grad.flatten() for parameter in model.parameters()
                              if parameter.grad is not None])
        return loss.detach(), gradient

    full_loss, full_gradient = loss_and_gradient(0)
    cached_loss, cached_gradient = loss_and_gradient(shared)
    model.zero_grad()
    assert torch.allclose(full_loss, cached_loss, rtol=1e-4, atol=1e-5)
    assert torch.allclose(full_gradient, cached_gradient, rtol=1e-3, atol=1e-5)


def test_tokenizer_is_fitted_on_train_split_text_only() -> None:
    import gymnasium as gym

    learn.register()
    text = "\n".join(learn.train_split_text())
    probe = gym.make(learn.ENV_ID, **learn.env_kwargs())
    task_set = probe.unwrapped.task_set
    probe.close()
    assert all(task.prompt in text for task in task_set.filter(split="train"))
    assert not any(task.prompt in text for task in task_set.filter(split="test"))
    hint_prefix = TTOPDConfig.__dataclass_fields__["hint_template"].default.split("{")[0].strip()
    assert hint_prefix not in text and "verified correct answer" not in text


def test_bootstrap_interval_brackets_the_mean() -> None:
    assert learn.bootstrap_interval([[0.0], [0.0]], seed=0) == (0.0, 0.0)
    low, high = learn.bootstrap_interval([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0], [0.0, 1.0]], seed=0)
    assert 0.0 <= low < 0.5 < high <= 1.0


@pytest.mark.slow  # the bench's whole path (warm-up, two methods, test rollouts) takes about 3 minutes on 2 cores: make test-slow
def test_bench_runs_both_methods_at_equal_steps_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "learn.json"
    code = learn.main(["--warmup-steps", "2", "--steps", "1", "--samples", "1", "--test-tasks", "2",
                       "--train-tasks", "4", "--max-completion-length", "48", "--patients", str(DEFAULT_PATIENTS),
                       "--out", str(out)])
    assert code == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    saved = json.loads(out.read_text())
    assert printed["figures"] == saved["figures"]
    methods = printed["methods"]
    assert set(methods) == {"grpo", "ttopd", "grpo-tuned", "ttopd-tuned"}  # the shipped defaults and the tuned arms
    assert {methods[arm]["steps"] for arm in methods} == {1}
    assert len({methods[arm]["rollouts"] for arm in methods}) == 1 and methods["grpo"]["rollouts"] > 0
    assert methods["grpo-tuned"]["config"]["learning_rate"] == methods["ttopd-tuned"]["config"]["learning_rate"] == 3e-4
    assert "learning_rate" not in methods["grpo"]["config"]  # the shipped arm keeps agentgym train's own lr
    assert methods["ttopd"]["ttopd_settings"]["hint"] == "outcome"
    assert methods["ttopd"]["ttopd_settings"]["negative_advantage"] == "flip"
    for method in methods:
        test = methods[method]["after"]["test"]
        assert 0.0 <= test["ci95"][0] <= test["success"] <= test["ci95"][1] <= 1.0
        assert set(saved["curves"][method]) >= {"reward", "tool_calls_per_turn", "completion_length"}
    assert Path(printed["curves_png"]) == tmp_path / "learn_curves.png" and Path(printed["curves_png"]).exists()
