"""The prompt trained on is the prompt graded, on every registered env (plugins included).

For each env the registry knows, episodes are started the way TRL starts them: `reset(**row)` on a row of
`task_dataset`, whose return TRL appends to the row's user message. The trained-on prompt is that text. The
task's oracle solution is then played through the adapter's tool methods, with a multiple-choice answer written
as the trained-on prompt shows it (the letter in front of the gold option's text), and must score 1 in every
episode. The same row and seed must give the same prompt twice.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from agentgym_baselines.adapter import environment_factory, task_dataset

import agentgym

EPISODES = 20


# Envs whose first `gym.make` builds its task set in sandboxes (CLI-v0: 40 workspaces, ~10 min on a loaded
# 2-core machine): run by make test-slow.
SLOW_TO_MAKE = {"CLI-v0"}


def _env_ids() -> list[str]:
    return sorted(record.id for record in agentgym.registered())


def _env_params() -> list[Any]:
    return [pytest.param(env_id, marks=[pytest.mark.slow, pytest.mark.docker]) if env_id in SLOW_TO_MAKE
            else env_id for env_id in _env_ids()]


def _as_the_prompt_shows_it(task: Any, arguments: dict[str, Any], prompt: str) -> dict[str, Any]:
    """`arguments` with an answer that is one of the task's options replaced by that option's letter in `prompt`."""
    options = task.metadata.get("options") or []
    shown = dict(arguments)
    for key, value in arguments.items():
        if isinstance(value, str) and value in options:
            letters = re.findall(rf"^([A-Z])\. {re.escape(value)}$", prompt, flags=re.MULTILINE)
            assert len(letters) == 1, f"option {value!r} is not shown once in the trained-on prompt"
            shown[key] = letters[0]
    return shown


def _trained_prompt(row: dict[str, Any], returned: str | None) -> str:
    return row["prompt"][-1]["content"] + (returned or "")


@pytest.mark.parametrize("env_id", _env_params())
def test_the_gold_answer_as_the_trained_prompt_shows_it_scores_1(env_id: str) -> None:
    cls = environment_factory(env_id)
    rows = list(task_dataset(env_id, split=None, limit=EPISODES))
    assert rows, f"{env_id} has no tasks"
    instance, again = cls(), cls()
    tasks = instance._tasks()
    scored = []
    for episode in range(EPISODES):
        row = dict(rows[episode % len(rows)], seed=episode)  # every episode its own seed
        prompt = _trained_prompt(row, instance.reset(**row))
        assert prompt == _trained_prompt(row, again.reset(**row)), "same row and seed, another prompt"
        task = tasks.get(row["task_id"])
        # The oracle's episode: the task's solution, or submitting its answer when it has none (the toy env's).
        for call in task.solution or [{"name": "submit", "arguments": {"answer": task.answer}}]:
            arguments = cls._signatures[call["name"]].flatten(call.get("arguments", {}))
            if cls._signatures[call["name"]].tool.terminal:
                arguments = _as_the_prompt_shows_it(task, arguments, prompt)
            getattr(instance, call["name"])(**arguments)
        scored.append(instance.get_reward())
    assert scored == [1.0] * EPISODES


def test_clinical_options_are_shuffled_per_seed_but_fixed_by_it() -> None:
    """The env that renders its prompt per episode: seeds give different orders, the trainer shows each one."""
    if "ClinicalQA-v0" not in _env_ids():
        pytest.skip("agentgym-clinical is not installed")
    cls = environment_factory("ClinicalQA-v0")
    row = task_dataset("ClinicalQA-v0", split="train", limit=1)[0]
    prompts = {cls().reset(**dict(row, seed=seed)) for seed in range(8)}
    assert len(prompts) > 1
    assert cls().reset(**row) == cls().reset(**row)
