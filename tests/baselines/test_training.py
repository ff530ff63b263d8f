"""GRPO and TT-OPD steps end to end on CPU with a tiny model built in the test and a real agentgym env.

A random tiny model never writes a tool call, so some of its generations are replaced with given tool calls
(`forcing.force_generations`; see there why that is the one stand-in here). Everything else is real: TRL's
trainer, the env, its verifier, the chat template, the optimizer.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
import torch
import toy_env
from agentgym_baselines.cli import train
from agentgym_baselines.tiny import build_tiny_model
from agentgym_baselines.training import RunSettings, build_trainer
from agentgym_baselines.ttopd import TTOPDTrainer
from agentgym_baselines.turns import first_turns_mask
from click.testing import CliRunner
from forcing import force_generations, tool_call
from transformers import TrainerCallback

import agentgym

ENV = toy_env.ENV_ID
HINT_MARKER = "[Privileged information for the teacher]"


def _word(prompt: str) -> str:
    return re.findall(r"Submit the word (\w+)", prompt)[-1]


def _settings(tmp_path: Path, method: str, **config: Any) -> RunSettings:
    values = {"max_steps": 1, "num_generations": 4, "per_device_train_batch_size": 4,
              "max_completion_length": 96, "learning_rate": 1e-2, "save_strategy": "no"}
    values.update(config)
    return RunSettings(method=method, env_id=ENV, model="tiny:random", output_dir=str(tmp_path / method),
                       config=values)


def _capture_batches(trainer: Any) -> list[dict[str, Any]]:
    batches: list[dict[str, Any]] = []
    original = trainer._generate_and_score_completions

    def capture(inputs: list[dict[str, Any]]) -> dict[str, Any]:
        output = original(inputs)
        batches.append(output)
        return output

    trainer._generate_and_score_completions = capture
    return batches


def _parameters(model: Any) -> dict[str, torch.Tensor]:
    return {name: parameter.detach().clone() for name, parameter in model.named_parameters()}


def test_grpo_step_trains_on_env_rewards_and_masks_tool_results(tmp_path: Path) -> None:
    model, tokenizer = build_tiny_model(0)

    def choose(row: int, prompt: str) -> str | None:
        responses = prompt.count("<tool_response>")
        if responses == 0 and row == 0:
            return tool_call("lookup", {"key": _word(prompt)})
        if responses == 1 and "lookup" in prompt.split("<|im_start|>assistant")[-2]:
            return tool_call("submit", {"answer": _word(prompt)})
        return None if responses == 0 else "Done."

    force_generations(model, tokenizer, choose)
    trainer = build_trainer(_settings(tmp_path, "grpo"), model, tokenizer)
    batches = _capture_batches(trainer)
    before = _parameters(model)
    trainer.train()

    after = _parameters(model)
    assert all(not torch.equal(before[name], after[name]) for name in before)
    log = trainer.state.log_history[0]
    assert log["reward"] == pytest.approx(0.25)  # one rollout of four looked up and submitted the right word
    assert log["episodes/submitted"] == pytest.approx(0.25)
    assert log["episodes/infra_failed"] == 0.0  # logged apart; no rollout here lost its infrastructure
    assert log["tools/lookup/calls"] == pytest.approx(0.25) and log["tools/submit/calls"] == pytest.approx(0.25)
    assert log["episodes/assistant_turns"] > 1.0
    assert "completions/mean_length" in log and "tools/failure_frequency" in log
    assert json.loads((tmp_path / "grpo" / "metrics.jsonl").read_text().splitlines()[0])["step"] == 1

    batch = batches[0]
    solved = int(torch.argmax(batch["advantages"]))
    ids, completion_mask, tool_mask = (batch["completion_ids"][solved], batch["completion_mask"][solved],
                                       batch["tool_mask"][solved])
    masked_out = tokenizer.decode(ids[(completion_mask == 1) & (tool_mask == 0)])
    trained_on = tokenizer.decode(ids[(completion_mask == 1) & (tool_mask == 1)])
    assert "<tool_response>" in masked_out and "-> " in masked_out  # the lookup's result
    assert "<tool_response>" not in trained_on and "-> " not in trained_on
    assert '"name": "lookup"' in trained_on and '"name": "submit"' in trained_on


class _Snapshots(TrainerCallback):
    """Teacher before each step, teacher and student after it (runs after the trainer's teacher update)."""

    def __init__(self, trainer: TTOPDTrainer) -> None:
        self.trainer = trainer
        self.steps: list[dict[str, Any]] = []

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.steps.append({"teacher_before": _parameters(self.trainer.teacher)})

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.steps[-1].update(step=state.global_step, teacher_after=_parameters(self.trainer.teacher),
                              student=_parameters(self.trainer.model))


def _forward_inputs(model: Any, tokenizer: Any) -> list[str]:
    seen: list[str] = []

    def hook(module: Any, args: Any, kwargs: dict[str, Any]) -> None:
        input_ids = kwargs.get("input_ids", args[0] if args else None)
        seen.extend(tokenizer.decode(row, skip_special_tokens=True) for row in input_ids)

    model.register_forward_pre_hook(hook, with_kwargs=True)
    return seen


def test_ttopd_steps_teacher_ema_hints_and_turn_mask(tmp_path: Path) -> None:
    model, tokenizer = build_tiny_model(1)

    def choose(row: int, prompt: str) -> str:
        # Even rows: lookup, then submit the right word (two tool turns, then a short last turn).
        # Odd rows: submit a wrong word at once.
        responses = prompt.count("<tool_response>")
        if responses == 0:
            return tool_call("lookup", {"key": _word(prompt)}) if row % 2 == 0 else tool_call(
                "submit", {"answer": "nothing"})
        if responses == 1 and '"name": "lookup"' in prompt.split("<|im_start|>assistant")[-2]:
            return tool_call("submit", {"answer": _word(prompt)})
        return "Done."

    generation_prompts = force_generations(model, tokenizer, choose)
    settings = _settings(tmp_path, "ttopd", max_steps=3, hint="answer", hint_position="user", distill_turns=1,
                         ema_decay=0.9, ema_every=2, hard_copy_every=3)
    trainer = build_trainer(settings, model, tokenizer)
    assert isinstance(trainer, TTOPDTrainer)
    snapshots = _Snapshots(trainer)
    trainer.add_callback(snapshots)
    batches = _capture_batches(trainer)
    student_inputs = _forward_inputs(model, tokenizer)
    teacher_inputs = _forward_inputs(trainer.teacher, tokenizer)
    initial = _parameters(model)
    trainer.train()

    # The student trained; the teacher never had a gradient.
    assert all(not torch.equal(initial[name], parameter) for name, parameter in _parameters(model).items())
    assert all(not p.requires_grad and p.grad is None for p in trainer.teacher.parameters())
    # Teacher schedule: nothing after step 1, EMA after step 2, hard copy after step 3.
    assert trainer.teacher_updates == [(2, "ema"), (3, "copy")]
    first, second, third = snapshots.steps
    for name, value in first["teacher_after"].items():
        assert torch.equal(value, first["teacher_before"][name])
    for name, value in second["teacher_after"].items():
        expected = 0.9 * second["teacher_before"][name] + 0.1 * second["student"][name]
        assert torch.allclose(value, expected, atol=1e-6, rtol=0)
        assert not torch.equal(value, second["teacher_before"][name])
    for name, value in third["teacher_after"].items():
        assert torch.equal(value, third["student"][name])

    # The hint (with the gold answer) is in every teacher input and in no student input.
    assert teacher_inputs and student_inputs and generation_prompts
    for text in teacher_inputs:
        assert HINT_MARKER in text
        assert re.search(r"Submit the word (\w+)\.\n\n.*The verified correct answer to this task is: \1", text)
    for text in student_inputs + generation_prompts:
        assert HINT_MARKER not in text and "verified correct answer" not in text

    # The KL covers exactly the model's tokens of the first assistant turn.
    for batch in batches:
        distill = batch["distill_mask"].bool()
        model_tokens = (batch["completion_mask"] * batch["tool_mask"]).bool()
        assert torch.equal(batch["distill_mask"], first_turns_mask(batch["completion_mask"], batch["tool_mask"], 1))
        assert not (distill & ~model_tokens).any()  # never tool results, never padding
        for row in range(distill.size(0)):
            first_turn = tokenizer.decode(batch["completion_ids"][row][distill[row]])
            rest = tokenizer.decode(batch["completion_ids"][row][model_tokens[row] & ~distill[row]])
            assert first_turn.count("<tool_call>") == 1 and "<tool_response>" not in first_turn
            if row_is_lookup := '"name": "lookup"' in first_turn:
                # The rollout ends at the submission: the "Done." the model would write next is never generated.
                assert '"name": "submit"' in rest and "Done." not in rest
            assert row_is_lookup or rest.replace(tokenizer.eos_token, "") in ("", "Done.")
    log = [entry for entry in trainer.state.log_history if "ttopd/reverse_kl" in entry]
    assert len(log) == 3 and all(0 < entry["ttopd/distilled_token_fraction"] < 1 for entry in log)


def test_ttopd_teacher_scores_the_students_tokens(tmp_path: Path) -> None:
    """With no hint and the teacher still equal to the student, the teacher's log-probs are the student's,
    token for token: the k1 estimate is zero. With a hint, it is not."""
    kl = {}
    for hint in ("none", "outcome"):
        model, tokenizer = build_tiny_model(2)
        force_generations(model, tokenizer, lambda row, prompt: tool_call("submit", {"answer": _word(prompt)})
                          if row == 0 and "<tool_response>" not in prompt else "Done.")
        trainer = build_trainer(_settings(tmp_path / hint, "ttopd", hint=hint, hint_position="system"),
                                model, tokenizer)
        trainer.train()
        kl[hint] = trainer.state.log_history[0]["ttopd/reverse_kl"]
    assert abs(kl["none"]) < 1e-5
    assert abs(kl["outcome"]) > 1e-3


def test_negative_advantage_handling_sets_the_kl_gradient_sign(tmp_path: Path) -> None:
    model, tokenizer = build_tiny_model(3)
    trainer = build_trainer(_settings(tmp_path, "ttopd"), model, tokenizer)
    trainer.model.train()
    gradients = {}
    for mode in ("keep", "flip", "skip"):
        trainer.args.negative_advantage = mode
        student = torch.tensor([[-1.0, -2.0], [-1.0, -2.0]], requires_grad=True)
        inputs = {"completion_mask": torch.ones(2, 2, dtype=torch.long), "tool_mask": torch.ones(2, 2),
                  "distill_mask": torch.ones(2, 2), "advantages": torch.tensor([1.0, -1.0]),
                  "teacher_per_token_logps": torch.tensor([[-1.5, -1.5], [-1.5, -1.5]])}
        trainer._distillation_loss(student, inputs).backward()
        gradients[mode] = student.grad
    k1 = torch.tensor([0.5, -0.5]) / 4  # per token, over 4 distilled tokens
    assert torch.allclose(gradients["keep"], torch.stack([k1, k1]))
    assert torch.allclose(gradients["flip"], torch.stack([k1, -k1]))
    assert torch.allclose(gradients["skip"], torch.stack([k1, torch.zeros(2)]))


def test_cli_trains_checkpoints_and_resumes(tmp_path: Path) -> None:
    output = tmp_path / "run"
    common = ["--env", ENV, "--model", "tiny:random", "--output", str(output), "--num-generations", "2",
              "--max-completion-length", "24", "--save-steps", "1", "--ema-every", "1"]
    first = CliRunner().invoke(train, ["ttopd", *common, "--max-steps", "1"], catch_exceptions=False)
    assert first.exit_code == 0, first.output
    assert (output / "checkpoint-1" / "ttopd_teacher.pt").exists()
    second = CliRunner().invoke(train, ["ttopd", *common, "--max-steps", "2", "--resume"], catch_exceptions=False)
    assert second.exit_code == 0, second.output
    summary = json.loads(second.output[second.output.index('{\n "method"'):])
    assert summary["steps"] == 2 and summary["resumed_from"].endswith("checkpoint-1")
    assert summary["teacher_updates"] == 2  # one restored from the checkpoint, one made after resuming
    assert (output / "model.safetensors").exists()
    missing = CliRunner().invoke(train, ["grpo", *common[:5], str(tmp_path / "empty"), "--resume"])
    assert missing.exit_code != 0 and "no checkpoint" in missing.output


def test_codeact_grpo_runs_python_blocks(tmp_path: Path) -> None:
    model, tokenizer = build_tiny_model(4)
    block = "```python\nvalue = lookup({word!r})\nprint(value)\nsubmit({word!r})\n```"
    force_generations(model, tokenizer, lambda row, prompt: block.format(word=_word(prompt))
                      if row == 0 and "<tool_response>" not in prompt else "Done.")
    settings = _settings(tmp_path, "grpo")
    settings.codeact = True
    trainer = build_trainer(settings, model, tokenizer)
    trainer.train()
    log = trainer.state.log_history[0]
    assert log["reward"] == pytest.approx(0.25)
    assert log["tools/execute_code/calls"] == pytest.approx(0.25)
    assert log["tools/execute_code/failures"] == 0.0


def test_grpo_step_on_sql_env_with_the_oracle_solution(tmp_path: Path) -> None:
    """The real SQL-v0 env: one rollout per group replays the task's solution, the others submit a wrong answer
    through the task's own terminal tool."""
    if "SQL-v0" not in {record.id for record in agentgym.registered()}:
        if os.environ.get("CI"):  # make install puts every distribution in; missing is a failure
            pytest.fail("CI installs every distribution, but an env is missing: run make install")
        pytest.skip("SQL-v0 is not installed (pip install -e domains/sql)")
    tasks = {task.prompt: task for task in gym.make("SQL-v0").unwrapped.task_set}
    model, tokenizer = build_tiny_model(5)

    def choose(row: int, prompt: str) -> str:
        task = tasks[prompt.split("<|im_start|>user\n", 1)[1].split("<|im_end|>", 1)[0]]
        responses = prompt.count("<tool_response>")
        if responses == 0:
            if row == 0:
                return tool_call(**task.solution[0])
            final = task.solution[-1]  # the task's own terminal tool, with a wrong value in every argument
            return tool_call(final["name"], {key: "SELECT 1" for key in final["arguments"]})
        if "SELECT 1" in prompt.split("<|im_start|>assistant")[-2] or responses >= len(task.solution):
            return "Done."
        return tool_call(**task.solution[responses])

    force_generations(model, tokenizer, choose)
    settings = _settings(tmp_path, "grpo", max_completion_length=256)
    settings.env_id = "SQL-v0"
    trainer = build_trainer(settings, model, tokenizer)
    before = _parameters(model)
    trainer.train()
    log = trainer.state.log_history[0]
    assert log["reward"] == pytest.approx(0.25)
    assert log["episodes/submitted"] == 1.0
    assert any(not torch.equal(before[name], value) for name, value in _parameters(model).items())


def test_ema_update_of_a_bf16_teacher_follows_the_fp32_ema() -> None:
    """On CUDA the teacher computes in bf16. Its EMA runs on an fp32 master, so after many 0.5% steps the bf16
    teacher is the fp32 EMA rounded once, where a bf16 in-place update stalls (each step rounds away)."""
    from agentgym_baselines.ttopd import ema_update

    torch.manual_seed(0)
    student = torch.nn.Linear(64, 64)
    teacher = torch.nn.Linear(64, 64)
    teacher.load_state_dict(student.state_dict())
    teacher.to(torch.bfloat16)
    reference = [parameter.detach().float() for parameter in teacher.parameters()]  # fp32 EMA, computed apart
    naive = [parameter.detach().clone() for parameter in teacher.parameters()]  # a bf16 in-place EMA
    master = [parameter.detach().float() for parameter in teacher.parameters()]
    with torch.no_grad():
        for _ in range(200):
            for parameter in student.parameters():
                parameter.add_(0.01)
            ema_update(teacher, student, master, 0.995)
            for ref, naive_weights, source in zip(reference, naive, student.parameters(), strict=True):
                ref.mul_(0.995).add_(source, alpha=0.005)
                naive_weights.mul_(0.995).add_(source.to(torch.bfloat16), alpha=0.005)
    for parameter, ref, weights, naive_weights in zip(teacher.parameters(), reference, master, naive, strict=True):
        assert parameter.dtype == torch.bfloat16
        assert torch.allclose(weights, ref, atol=1e-5, rtol=0)  # the master is the fp32 EMA
        assert torch.equal(parameter, ref.to(torch.bfloat16))  # the teacher is it, rounded once
        drift = (ref - naive_weights.float()).abs().max().item()
        assert drift > 10 * (ref - parameter.float()).abs().max().item()  # the in-place bf16 EMA drifts away


def test_load_model_keeps_fp32_master_weights(tmp_path: Path) -> None:
    from agentgym_baselines.training import load_model

    model, tokenizer = build_tiny_model(6)
    model.to(torch.bfloat16).save_pretrained(tmp_path / "bf16")
    tokenizer.save_pretrained(tmp_path / "bf16")
    loaded, _ = load_model(str(tmp_path / "bf16"))
    assert all(parameter.dtype == torch.float32 for parameter in loaded.parameters())


def test_trl_internals_are_those_the_trainers_override(monkeypatch: pytest.MonkeyPatch) -> None:
    import trl
    from agentgym_baselines.grpo import TRL_VERSION, check_trl_internals

    check_trl_internals()  # the installed TRL is the pinned one, with the internals in place
    pinned = (Path(__file__).parents[2] / "baselines" / "pyproject.toml").read_text()
    assert f'"trl=={TRL_VERSION}"' in pinned
    # A TRL whose internals moved cannot be installed here (no network, and the pin is exact): fake one.
    monkeypatch.setattr(trl, "__version__", "9.0.0")
    monkeypatch.delattr(trl.GRPOTrainer, "_tool_call_loop")
    with pytest.raises(RuntimeError, match=r"trl 9.0.0 is installed.*_tool_call_loop is gone.*pip install trl=="):
        check_trl_internals()


def test_ttopd_refuses_settings_that_would_cache_stale_teacher_logps(tmp_path: Path) -> None:
    model, tokenizer = build_tiny_model(7)
    with pytest.raises(ValueError, match="steps_per_generation == gradient_accumulation_steps"):
        build_trainer(_settings(tmp_path, "ttopd", steps_per_generation=2), model, tokenizer)
    with pytest.raises(ValueError, match="no verified outcome"):
        build_trainer(_settings(tmp_path, "ttopd", distill_only=True), model, tokenizer)


def test_distill_only_rollouts_stop_at_k_turns_and_train_on_the_kl_alone(tmp_path: Path) -> None:
    model, tokenizer = build_tiny_model(8)
    force_generations(model, tokenizer, lambda row, prompt: tool_call("lookup", {"key": _word(prompt)}))
    trainer = build_trainer(_settings(tmp_path, "ttopd", distill_only=True, distill_turns=2, hint="answer"),
                            model, tokenizer)
    assert trainer.args.max_tool_calling_iterations == 1
    batches = _capture_batches(trainer)
    trainer.train()
    turns = batches[0]["distill_mask"]  # every model token is distilled: the rollout stopped at K = 2 turns
    assert torch.equal(turns, (batches[0]["completion_mask"] * batches[0]["tool_mask"]).to(turns.dtype))
    from agentgym_baselines.turns import turns_per_completion

    assert turns_per_completion(batches[0]["completion_mask"], batches[0]["tool_mask"]).max().item() == 2
    log = trainer.state.log_history[0]
    assert log["ttopd/reverse_kl"] != 0.0 and log["episodes/submitted"] == 0.0


@pytest.mark.parametrize("env_id", [record.id for record in agentgym.registry.installed()])
@pytest.mark.parametrize("method", ["grpo", "ttopd"])
def test_train_with_its_defaults_completes_a_step_on_each_domain(tmp_path: Path, env_id: str, method: str) -> None:
    """`agentgym train METHOD --env E --model tiny:random` with the defaults, but 4 rollouts and 128 tokens so it
    runs in seconds on CPU: 4 rollouts are more than CLI-v0's default pool of 2 sandboxes. Every installed env is
    covered, a plugin's included (tests/core/test_plugins.py checks that every built-in domain is installed)."""
    output = tmp_path / "run"
    result = CliRunner().invoke(train, [method, "--env", env_id, "--model", "tiny:random", "--output", str(output),
                                        "--max-steps", "1", "--num-generations", "4",
                                        "--max-completion-length", "128", "--save-steps", "1000"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output[result.output.index('{\n "method"'):])
    assert summary["steps"] == 1 and (output / "model.safetensors").exists()
    lines = [json.loads(line) for line in (output / "metrics.jsonl").read_text().splitlines()]
    assert "episodes/cut_by_budget" in lines[0]


def test_nothing_runs_or_trains_after_the_episode_ends(tmp_path: Path) -> None:
    """A rollout that submits and then writes another tool call: TRL's loop generates nothing after the
    submission (no tool runs), and its completion ends with the submitting turn (no later token in any loss)."""
    model, tokenizer = build_tiny_model(0)
    after_submit: list[str] = []

    def choose(row: int, prompt: str) -> str | None:
        responses = prompt.count("<tool_response>")
        if responses == 0 and row == 0:
            return tool_call("submit", {"answer": _word(prompt)})
        if responses >= 1:  # only a generation after the submission's result gets here
            after_submit.append(prompt)
            return tool_call("lookup", {"key": _word(prompt)})
        return None

    force_generations(model, tokenizer, choose)
    trainer = build_trainer(_settings(tmp_path, "grpo"), model, tokenizer)
    batches = _capture_batches(trainer)
    trainer.train()
    assert after_submit == []
    environments = trainer.environments
    submitted = [index for index, environment in enumerate(environments) if environment._submitted]
    assert len(submitted) == 1 and environments[submitted[0]]._invocations == 1
    batch = batches[0]
    row = submitted[0]
    kept = batch["completion_ids"][row][batch["completion_mask"][row] == 1]
    text = tokenizer.decode(kept)
    assert '"name": "submit"' in text and "<tool_response>" not in text
    assert int(kept[-1]) == tokenizer.eos_token_id  # the submitting turn's own end, nothing after it
    assert trainer.state.log_history[0]["reward"] == pytest.approx(0.25)


def test_the_teacher_runs_its_own_weights_even_when_the_students_forward_was_patched() -> None:
    """A trainer wraps the student's `forward` on the instance (a closure over the student, as accelerate's
    mixed-precision wrapper does); a deep copy keeps that closure, so the copy's forward would be the student's."""
    from agentgym_baselines.ttopd import build_teacher

    student, _ = build_tiny_model(0)
    original = student.forward
    student.forward = lambda *args, **kwargs: original(*args, **kwargs)  # the patch: bound to the student
    teacher = build_teacher(student)
    ids = torch.tensor([[1, 2, 3, 4]])
    before = teacher(input_ids=ids).logits.clone()
    with torch.no_grad():
        for parameter in student.parameters():
            parameter.add_(0.5)
    assert not torch.allclose(student(input_ids=ids).logits, before)
    assert torch.equal(teacher(input_ids=ids).logits, before)  # plain call
    assert torch.equal(teacher.forward(input_ids=ids).logits, before)  # the forward attribute
    assert all(not parameter.requires_grad for parameter in teacher.parameters())
