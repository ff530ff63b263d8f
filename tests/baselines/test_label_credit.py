"""Diagnosis-guided credit and TT-OPD's failed-turn distillation, on real training steps with a tiny model.

Four scripted rollouts of one toy task (forced generations, see forcing.py for why that is the one stand-in):
a success with a failing first turn, a failure that mixes ok, failing and submit turns, a failure that never
calls a tool, and a clean success. The test reads the trainer's own batch: the turn labels it computed from the
env's diagnosis, the per-token advantages it trained on, TT-OPD's distillation mask, and the parameters after a
step with the option off, on with unit weights (must be the same) and on with the shipped weights.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import torch
import toy_env
from agentgym_baselines.credit import CreditWeights, Invocation, assistant_turn_labels, label_token_weights
from agentgym_baselines.tiny import build_tiny_model
from agentgym_baselines.training import RunSettings, build_trainer
from agentgym_baselines.turns import assistant_turn_ids, model_token_mask
from forcing import force_generations, tool_call

# Each script: the assistant turns of one rollout. "W" is replaced by the task's word.
SCRIPTS = {
    "success_after_error": [tool_call("lookup", {"key": "zzz"}), tool_call("submit", {"answer": "W"}), "Done."],
    "mixed_failure": [tool_call("lookup", {"key": "W", "mode": "prefix"}), tool_call("lookup", {"key": "qqq"}),
                      tool_call("submit", {"answer": "wrong"}), "Done."],
    "no_call": ["I will not use any tool."],
    "clean_success": [tool_call("lookup", {"key": "W"}), tool_call("submit", {"answer": "W"}), "Done."],
}
ORDER = list(SCRIPTS)
# The "Done." after a submission is never generated: the rollout ends with the episode (no after_end turn).
EXPECTED_LABELS = {
    "success_after_error": ["tool_error", "submitted"],
    "mixed_failure": ["ok", "tool_error", "submitted"],
    "no_call": ["format_error"],
    "clean_success": ["ok", "submitted"],
}


def _word(prompt: str) -> str:
    return re.findall(r"Submit the word (\w+)", prompt)[-1]


def _choose(row: int, prompt: str) -> str:
    word = _word(prompt)
    turns = prompt.split("<|im_start|>assistant")[1:-1]  # the assistant turns so far (the last part is the new one)
    if not turns:
        script = SCRIPTS[ORDER[row]]
    else:
        first = turns[0]
        script = next(lines for lines in SCRIPTS.values() if lines[0].replace("W", word) in first)
    return script[len(turns)].replace('"W"', f'"{word}"')


def _script_of(text: str, word: str) -> str:
    return next(name for name, lines in SCRIPTS.items() if lines[0].replace("W", word) in text)


def _parameters(model: Any) -> dict[str, torch.Tensor]:
    return {name: parameter.detach().clone() for name, parameter in model.named_parameters()}


def _run(tmp_path: Path, method: str, name: str, **config: Any) -> dict[str, Any]:
    """One training step on the four scripted rollouts; returns the batch, the labels and the parameters."""
    model, tokenizer = build_tiny_model(0)
    force_generations(model, tokenizer, _choose)
    values = {"max_steps": 1, "num_generations": 4, "per_device_train_batch_size": 4, "max_completion_length": 160,
              "learning_rate": 1e-2, "save_strategy": "no", "beta": 0.0}
    values.update(config)
    settings = RunSettings(method=method, env_id=toy_env.ENV_ID, model="tiny:random",
                           output_dir=str(tmp_path / name), config=values)
    trainer = build_trainer(settings, model, tokenizer)
    seen: dict[str, Any] = {}
    original = trainer._generate_and_score_completions

    def capture(inputs: list[dict[str, Any]]) -> dict[str, Any]:
        output = original(inputs)
        seen.update(batch=output, labels=[list(labels or []) for labels in trainer.batch_turn_labels()],
                    logged=list(trainer._logs["advantages"])[-len(inputs):],
                    prompt=trainer.rollout_prompts[0][-1]["content"])  # as shown (reset filled it in)
        return output

    trainer._generate_and_score_completions = capture
    trainer.train()
    batch = seen["batch"]
    word = _word(seen["prompt"])
    scripts = [_script_of(tokenizer.decode(ids), word) for ids in batch["completion_ids"]]
    return {**seen, "scripts": scripts, "parameters": _parameters(model), "log": trainer.state.log_history[0]}


@pytest.fixture(scope="module")
def credited(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """TT-OPD with label credit on and failed-turn distillation (both read the same labels)."""
    return _run(tmp_path_factory.mktemp("credit"), "ttopd", "on", label_credit=True,
                distill_turn_selection="failed", hint="none")


def _turn_values(batch: dict[str, Any], row: int, key: str) -> list[set[float]]:
    """The distinct values of `batch[key]` on each assistant turn's model tokens of rollout `row`."""
    ids = assistant_turn_ids(batch["completion_mask"], batch["tool_mask"])[row]
    values = batch[key][row]
    return [{round(float(value), 6) for value in values[ids == turn]} for turn in range(1, int(ids.max()) + 1)]


def test_turn_labels_come_from_the_envs_diagnosis(credited: dict[str, Any]) -> None:
    assert sorted(credited["scripts"]) == sorted(ORDER)  # each script is one rollout of the group
    for script, labels in zip(credited["scripts"], credited["labels"], strict=True):
        assert labels == EXPECTED_LABELS[script], script
    log = credited["log"]
    assert log["credit/tool_error"] == pytest.approx(2 / 8)  # 2 of the 8 assistant turns
    assert log["credit/misaligned"] == 0.0


def test_advantages_move_between_turns_as_the_rule_says(credited: dict[str, Any]) -> None:
    batch = credited["batch"]
    assert batch["advantages"].dim() == 2
    model = model_token_mask(batch["completion_mask"], batch["tool_mask"]).bool()
    for row, script in enumerate(credited["scripts"]):
        advantage = credited["logged"][row]  # TRL's own (sequence) advantage, before the credit
        turns = [next(iter(values)) for values in _turn_values(batch, row, "advantages")]
        assert all(len(values) == 1 for values in _turn_values(batch, row, "advantages"))  # one value per turn
        # the rollout's credit is moved between its turns, never created: the token mean is TRL's advantage
        assert batch["advantages"][row][model[row]].mean().item() == pytest.approx(advantage, rel=1e-4)
        if script == "mixed_failure":  # negative: the failing turn carries 4x an ok turn, the submit 2x
            assert advantage < 0
            ok, failing, submitted = turns
            assert failing == pytest.approx(4 * ok, rel=1e-4) and submitted == pytest.approx(2 * ok, rel=1e-4)
            assert failing < advantage < ok < 0
        elif script == "success_after_error":  # positive: the failing turn is not rewarded
            assert advantage > 0
            failing, submitted = turns
            assert failing == 0.0 and submitted > advantage
        else:  # one label throughout (all failing, or no failing turn at all): unchanged
            assert turns == pytest.approx([advantage] * len(turns), rel=1e-4)


def test_ttopd_distils_the_failed_turns(credited: dict[str, Any]) -> None:
    batch = credited["batch"]
    for row, script in enumerate(credited["scripts"]):
        distilled = [values == {1.0} for values in _turn_values(batch, row, "distill_mask")]
        assert distilled == [label in ("tool_error", "format_error") for label in EXPECTED_LABELS[script]], script
    assert not (batch["distill_mask"].bool() & (batch["tool_mask"] == 0)).any()  # never a tool result token


def test_off_trains_as_before_and_unit_weights_change_nothing(tmp_path: Path) -> None:
    off = _run(tmp_path, "grpo", "off")
    assert off["batch"]["advantages"].dim() == 1  # TRL's own sequence advantages, untouched
    assert off["batch"]["advantages"].tolist() == pytest.approx(off["logged"])
    assert not any(key.startswith("credit/") for key in off["log"])
    unit = _run(tmp_path, "grpo", "unit", label_credit=True, label_credit_failure_weight=1.0,
                label_credit_ok_weight=1.0, label_credit_positive_failure_weight=1.0)
    assert all(torch.equal(off["parameters"][name], unit["parameters"][name]) for name in off["parameters"])
    shipped = _run(tmp_path, "grpo", "shipped", label_credit=True)
    assert any(not torch.equal(off["parameters"][name], shipped["parameters"][name]) for name in off["parameters"])


def test_weights_are_checked_and_renormalised_per_rollout() -> None:
    with pytest.raises(ValueError, match="must be >= 0"):
        CreditWeights(failure=-1.0)
    completion = torch.tensor([[1, 1, 1, 1, 1, 1]])
    tool = torch.tensor([[1, 1, 0, 1, 1, 1]])  # turn 1: 2 tokens, tool result, turn 2: 3 tokens
    weights, misaligned = label_token_weights(completion, tool, [["ok", "bad_arguments", "ok"]],
                                              torch.tensor([-1.0]), CreditWeights())
    assert misaligned == 1  # three labels for two token turns
    raw = [0.5, 0.5, 2.0, 2.0, 2.0]  # tool-result token left out
    scale = 5 / sum(raw)
    assert weights[0, [0, 1, 3, 4, 5]].tolist() == pytest.approx([value * scale for value in raw])


def test_calls_trl_never_made_get_labels_of_their_own() -> None:
    def assistant(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
        return {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": name, "arguments": arguments}} for name, arguments in calls]}

    tool = {"role": "tool", "name": "lookup", "content": "..."}
    made = [Invocation("lookup", {"key": "apple"}, steps=[0]), Invocation("lookup", {"key": "river"}, steps=[1])]
    messages = [assistant(("fly", {}), ("lookup", {"key": "apple"})), tool, tool,  # unknown name beside a good call
                assistant(("lookup", {"key": 3, "extra": 1})), tool,              # TRL could not pass these
                assistant(("lookup", {"key": "river"})), tool,
                assistant(("lookup", {"key": "stone"}))]                           # the round limit: never ran
    labels = assistant_turn_labels(messages, made, ["ok", "repeated_call"], {"lookup", "submit"})
    assert labels == ["ok", "bad_arguments", "repeated_call", "unanswered"]
    assert assistant_turn_labels(messages[:3], [], [], {"lookup"}) == ["unknown_tool"]  # both failed: the first label
    assert CreditWeights().turn_weight("unanswered", -1.0) == 1.0
