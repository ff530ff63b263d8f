"""TT-OPD: turn-truncated on-policy distillation from an EMA teacher that sees the verified outcome.

The loss of one batch is the GRPO loss on the outcome reward plus `kl_coef` times a per-token reverse KL
between student and teacher, estimated with k1 = log π_S(y_t) − log π_T(y_t) on the tokens y_t the student
sampled. Each mechanism is real and can be switched off on its own (`TTOPDConfig`):

- turn truncation: the KL covers the model's tokens of the first `distill_turns` assistant turns (0: all);
  prompt, tool-result and padding tokens are never in it (nor in the GRPO loss: TRL masks them). With
  `distill_only=True` the rollouts themselves stop after K turns and the loss is the KL term alone (a
  distillation-only pass: a rollout cut at K turns has no outcome for GRPO to score);
- EMA teacher: a gradient-free copy of the student, θ_T ← β·θ_T + (1−β)·θ_S after every `ema_every`-th
  optimizer step (0: never, the teacher stays the initial copy), and θ_T ← θ_S after every `hard_copy_every`-th
  (0: never; on a step where both fall, the hard copy wins). The EMA runs on an fp32 master copy of the
  teacher's weights when the teacher computes in a lower precision (bf16 on CUDA), so a (1−β) = 0.5% step is not
  rounded away; the teacher's own weights are that master rounded once;
- outcome-privileged hint: the teacher's prompt carries a hint built from the rollout's verified outcome (or
  the task's gold answer), inserted at `hint_position`; the student never sees it. The teacher scores the
  student's own completion tokens after its hinted prompt, so its log-probs are aligned token by token;
- negative advantages: on trajectories whose advantage is negative the KL term can be kept, dropped, or have
  its sign flipped (the student is pushed away from the teacher there, as in the authors' code).

Gradient of the KL term: E_{y~π_S}[k1] is the reverse KL, and its gradient is E[k1 · ∇log π_S(y)] (the
score-function form; differentiating k1 itself has zero expected gradient on-policy). The surrogate used is
sg(k1)·(log π_S − sg(log π_S)) + sg(k1), whose value is the k1 estimate and whose gradient is that one.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from agentgym_baselines.adapter import AgentGymEnvironment
from agentgym_baselines.credit import failed_turns_mask
from agentgym_baselines.grpo import AgentGRPOConfig, AgentGRPOTrainer
from agentgym_baselines.turns import first_turns_mask, model_token_mask

TEACHER_CHECKPOINT_FILE = "ttopd_teacher.pt"
HINT_KINDS = ("outcome", "answer", "none")
HINT_POSITIONS = ("system", "user", "end")
NEGATIVE_ADVANTAGE_MODES = ("flip", "keep", "skip")
DISTILL_TURN_SELECTIONS = ("first", "failed")


@dataclass
class TTOPDConfig(AgentGRPOConfig):
    """`AgentGRPOConfig` (GRPOConfig plus label credit) plus the TT-OPD settings. Defaults and their sources:
    docs/baselines.md."""

    kl_coef: float = field(default=4.0, metadata={"help": "λ: weight of the per-token reverse KL to the teacher "
                                                          "(0 turns distillation off: plain GRPO)."})
    distill_turns: int = field(default=2, metadata={"help": "K: distil on the first K assistant turns; 0 = all."})
    distill_turn_selection: str = field(default="first", metadata={
        "help": "Which turns the KL covers: 'first' (the first K) or 'failed' (every turn with a diagnosis failure "
                "label; K is not used)."})
    distill_only: bool = field(default=False, metadata={"help": "Distillation-only pass: rollouts stop after K "
                                                                 "turns and the loss is the KL term alone."})
    ema_decay: float = field(default=0.995, metadata={"help": "β in θ_T ← β·θ_T + (1−β)·θ_S."})
    ema_every: int = field(default=5, metadata={"help": "n: EMA update after every n-th optimizer step; 0 = never."})
    hard_copy_every: int = field(default=30, metadata={"help": "m: θ_T ← θ_S after every m-th step; 0 = never."})
    hint: str = field(default="outcome", metadata={"help": "Teacher-only hint: 'outcome' (the rollout's verified "
                                                            "score), 'answer' (the gold answer) or 'none'."})
    hint_position: str = field(default="user", metadata={"help": "Where the hint goes in the teacher's prompt: "
                                                                  "'system' (end of the system message), 'user' "
                                                                  "(end of the task message) or 'end' (a new user "
                                                                  "message just before the completion)."})
    hint_template: str = field(default="[Privileged information for the teacher] {hint}",
                               metadata={"help": "Format of the inserted hint text; `{hint}` is replaced."})
    negative_advantage: str = field(default="flip", metadata={"help": "KL on negative-advantage trajectories: "
                                                                      "'flip' its sign, 'keep' it, or 'skip' it."})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.hint not in HINT_KINDS:
            raise ValueError(f"hint must be one of {HINT_KINDS}, got {self.hint!r}")
        if self.hint_position not in HINT_POSITIONS:
            raise ValueError(f"hint_position must be one of {HINT_POSITIONS}, got {self.hint_position!r}")
        if self.distill_turn_selection not in DISTILL_TURN_SELECTIONS:
            raise ValueError(f"distill_turn_selection must be one of {DISTILL_TURN_SELECTIONS}, "
                             f"got {self.distill_turn_selection!r}")
        if self.negative_advantage not in NEGATIVE_ADVANTAGE_MODES:
            raise ValueError(f"negative_advantage must be one of {NEGATIVE_ADVANTAGE_MODES}, "
                             f"got {self.negative_advantage!r}")
        if not 0.0 <= self.ema_decay <= 1.0:
            raise ValueError(f"ema_decay must be in [0, 1], got {self.ema_decay}")
        if self.distill_turns < 0 or self.ema_every < 0 or self.hard_copy_every < 0:
            raise ValueError("distill_turns, ema_every and hard_copy_every must be 0 or positive")
        if "{hint}" not in self.hint_template:
            raise ValueError("hint_template must contain '{hint}'")
        if self.distill_only:
            if self.distill_turns < 1:
                raise ValueError("distill_only needs distill_turns >= 1 (the turn the rollouts stop at)")
            if self.kl_coef == 0.0:
                raise ValueError("distill_only with kl_coef=0 trains nothing; set kl_coef > 0")
            if self.hint == "outcome":
                raise ValueError("distill_only rollouts stop before they submit, so they have no verified outcome "
                                 "to hint at; use hint='answer' or hint='none'")
            # K assistant turns = the first generation and K−1 tool rounds.
            self.max_tool_calling_iterations = self.distill_turns - 1


def hint_text(kind: str, *, reward: float, answer: Any, template: str) -> str:
    """The teacher's hint for one rollout: its verified outcome, or the gold answer."""
    if kind == "outcome":
        verdict = "correct" if reward >= 1.0 else "incorrect" if reward <= 0.0 else "partly correct"
        body = f"A verifier checked the attempt that follows: it is {verdict} (score {reward:.2f} out of 1)."
    elif kind == "answer":
        body = f"The verified correct answer to this task is: {answer}"
    else:
        raise ValueError(f"no hint text for hint kind {kind!r}")
    return template.format(hint=body)


def insert_hint(prompt: list[dict[str, Any]], hint: str, position: str) -> list[dict[str, Any]]:
    """A copy of the chat `prompt` with `hint` inserted at `position` ('system', 'user' or 'end')."""
    messages = [dict(message) for message in prompt]
    if position == "end":
        return messages + [{"role": "user", "content": hint}]
    role = "system" if position == "system" else "user"
    for message in messages:
        if message["role"] == role and isinstance(message.get("content"), str):
            message["content"] = message["content"] + "\n\n" + hint
            return messages
    if role == "system":
        return [{"role": "system", "content": hint}] + messages
    return messages + [{"role": "user", "content": hint}]


@torch.no_grad()
def ema_update(teacher: torch.nn.Module, student: torch.nn.Module, master: list[torch.Tensor | None],
               decay: float) -> None:
    """θ_T ← decay·θ_T + (1−decay)·θ_S in fp32 (decay 1.0 is a hard copy: θ_T ← θ_S).

    `master[i]` is the fp32 master of the teacher's i-th parameter, or None where that parameter is fp32 itself;
    a low-precision teacher parameter is set to its master rounded once, so rounding never accumulates.
    """
    for teacher_parameter, student_parameter, weights in zip(teacher.parameters(), student.parameters(), master,
                                                            strict=True):
        target = teacher_parameter if weights is None else weights
        source = student_parameter.detach().to(device=target.device, dtype=torch.float32)
        if decay == 1.0:
            target.copy_(source)
        else:
            target.mul_(decay).add_(source, alpha=1.0 - decay)
        if weights is not None:
            teacher_parameter.copy_(weights)


def build_teacher(student: torch.nn.Module) -> torch.nn.Module:
    """A gradient-free copy of `student` whose every forward path runs the copy's own weights.

    Trainers patch a model's `forward` on the instance (accelerate's mixed-precision wrapper, TRL's hooks): a
    closure over the student's bound method, which `deepcopy` does not rebind. Copied as is, the teacher's plain
    forward would run the student's weights. Every instance-level `forward` of the copy is dropped, so its
    modules run their class's forward on their own parameters."""
    teacher = copy.deepcopy(student)
    for module in teacher.modules():
        for name in ("forward", "_original_forward"):
            module.__dict__.pop(name, None)
    teacher.requires_grad_(False)
    teacher.eval()
    return teacher


class _TeacherUpdater(TrainerCallback):
    """Runs the teacher's EMA / hard-copy schedule after each optimizer step."""

    def __init__(self, trainer: TTOPDTrainer) -> None:
        self.trainer = trainer

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                    **kwargs: Any) -> None:
        self.trainer.update_teacher(state.global_step)


class TTOPDTrainer(AgentGRPOTrainer):
    """GRPO plus distillation from an EMA teacher with outcome-privileged hints (see the module docstring).

    Args:
        *args: As for `GRPOTrainer`; `args` must be a `TTOPDConfig`.
        codeact: As for `AgentGRPOTrainer`.
        **kwargs: As for `GRPOTrainer`.

    Attributes:
        teacher: The teacher model (same architecture as the student, `requires_grad=False`, eval mode).
        teacher_updates: `(global_step, "ema" | "copy")` for every teacher update so far.
    """

    args: TTOPDConfig

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not isinstance(self.args, TTOPDConfig):
            raise TypeError("TTOPDTrainer needs args=TTOPDConfig(...)")
        # The teacher's log-probs are computed once per generation batch and cached in it. A batch that spans
        # several optimizer steps (several passes, or more steps per generation than accumulation steps) would be
        # scored after a teacher update with the old teacher's values: refuse it.
        if self.args.num_iterations != 1:
            raise ValueError("TTOPDTrainer needs num_iterations=1: the cached teacher log-probs of a generation "
                             "batch would be stale after a teacher update between passes")
        if self.args.steps_per_generation != self.args.gradient_accumulation_steps:
            raise ValueError(f"TTOPDTrainer needs steps_per_generation == gradient_accumulation_steps (got "
                             f"{self.args.steps_per_generation} and {self.args.gradient_accumulation_steps}): a "
                             "generation batch must be one optimizer step, or its cached teacher log-probs go stale "
                             "at the next teacher update")
        self.teacher = build_teacher(self.accelerator.unwrap_model(self.model))
        # TRL's log-prob forward, patched onto the teacher itself as TRL does for its reference model.
        from trl.trainer.grpo_trainer import add_fused_lm_head

        add_fused_lm_head(self.teacher, temperature=self.temperature,
                          cast_lm_head_to_fp32=self.args.cast_lm_head_to_fp32, outputs=("log_probs", "entropy"))
        # fp32 master weights of the teacher where it computes in lower precision (None where it is fp32).
        self.teacher_master: list[torch.Tensor | None] = [
            None if parameter.dtype == torch.float32 else parameter.detach().float().clone()
            for parameter in self.teacher.parameters()]
        self.teacher_updates: list[tuple[int, str]] = []
        self._capture_logps = False
        self._captured_logps: torch.Tensor | None = None
        self.add_callback(_TeacherUpdater(self))

    # ------------------------------------------------------------------------------ teacher schedule
    @torch.no_grad()
    def update_teacher(self, global_step: int) -> str | None:
        """Apply the schedule for optimizer step `global_step`: "copy", "ema" or None (no update)."""
        config = self.args
        if config.hard_copy_every and global_step % config.hard_copy_every == 0:
            kind = "copy"
        elif config.ema_every and global_step % config.ema_every == 0:
            kind = "ema"
        else:
            return None
        student = self.accelerator.unwrap_model(self.model)
        ema_update(self.teacher, student, self.teacher_master, 1.0 if kind == "copy" else config.ema_decay)
        self.teacher_updates.append((global_step, kind))
        return kind

    # ------------------------------------------------------------------------------ generation side
    def _teacher_prompts(self, inputs: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        """Each rollout's prompt with its hint (the prompt unchanged when hint is 'none')."""
        config = self.args
        # The prompts the rollouts were generated from (each environment's reset filled the task message in).
        shown = self.rollout_prompts if len(self.rollout_prompts) == len(inputs) else [row["prompt"] for row in inputs]
        prompts = [list(prompt) for prompt in shown]
        if config.hint == "none":
            return prompts
        environments: list[Any] = list(self.environments or [])
        if len(environments) != len(prompts) or not all(isinstance(e, AgentGymEnvironment) for e in environments):
            raise TypeError("TT-OPD hints need agentgym environments: pass "
                            "environment_factory=agentgym_baselines.adapter.environment_factory(ENV_ID)")
        hinted = []
        for prompt, environment in zip(prompts, environments, strict=True):
            task = environment._task()
            text = hint_text(config.hint, reward=environment.get_reward(),
                             answer=None if task is None else task.answer, template=config.hint_template)
            hinted.append(insert_hint(prompt, text, config.hint_position))
        return hinted

    @torch.no_grad()
    def _teacher_logps(self, teacher_prompts: list[list[dict[str, Any]]], completion_ids: torch.Tensor,
                       completion_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The teacher's log-probs of the student's completion tokens after the teacher's own prompts.

        Returns `(logps (B, T), teacher input_ids (B, P'+T))`; position t of `logps` scores completion token t.
        """
        prompt_ids, _, _ = self._tokenize_prompts(teacher_prompts)
        device = completion_ids.device
        width = max(len(ids) for ids in prompt_ids)
        pad = self._tokenizer.pad_token_id
        ids = torch.full((len(prompt_ids), width), pad, dtype=completion_ids.dtype, device=device)
        mask = torch.zeros((len(prompt_ids), width), dtype=completion_mask.dtype, device=device)
        for row, sequence in enumerate(prompt_ids):  # left padding, as for the student's prompts
            ids[row, width - len(sequence):] = torch.tensor(sequence, dtype=ids.dtype, device=device)
            mask[row, width - len(sequence):] = 1
        input_ids = torch.cat([ids, completion_ids], dim=1)
        attention_mask = torch.cat([mask, completion_mask], dim=1)
        logps, _, _ = self._get_per_token_logps_and_entropies(
            self.teacher, input_ids, attention_mask, completion_ids.size(1),
            batch_size=self.args.per_device_train_batch_size,
        )
        return logps, input_ids

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        output = super()._generate_and_score_completions(inputs)
        completion_mask, tool_mask = output["completion_mask"], output.get("tool_mask")
        if self.args.distill_turn_selection == "failed":
            distill_mask = failed_turns_mask(completion_mask, tool_mask, self.batch_turn_labels())
        else:
            distill_mask = first_turns_mask(completion_mask, tool_mask, self.args.distill_turns)
        output["distill_mask"] = distill_mask.to(completion_mask.dtype)
        if self.args.kl_coef != 0.0:
            teacher_logps, teacher_input_ids = self._teacher_logps(
                self._teacher_prompts(inputs), output["completion_ids"], completion_mask)
            output["teacher_per_token_logps"] = teacher_logps
            self._last_teacher_input_ids = teacher_input_ids
        return output

    # ------------------------------------------------------------------------------ loss side
    def _get_per_token_logps_and_entropies(self, model: Any, *args: Any, **kwargs: Any) -> Any:
        result = super()._get_per_token_logps_and_entropies(model, *args, **kwargs)
        if self._capture_logps and model is not self.teacher:
            # Keep the student's log-probs (with their graph) from the GRPO loss's own forward pass, so the KL
            # term needs no second forward pass.
            self._captured_logps = result[0]
        return result

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> torch.Tensor:
        if self.args.kl_coef == 0.0 or "teacher_per_token_logps" not in inputs:
            return super()._compute_loss(model, inputs)
        self._capture_logps, self._captured_logps = True, None
        try:
            loss = super()._compute_loss(model, inputs)
        finally:
            self._capture_logps = False
        student_logps = self._captured_logps
        self._captured_logps = None
        if student_logps is None:
            raise RuntimeError("TT-OPD could not read the student's log-probs from the GRPO forward pass")
        distillation = self.args.kl_coef * self._distillation_loss(student_logps, inputs)
        if self.args.distill_only:
            return 0.0 * loss + distillation  # the GRPO term kept in the graph at weight 0 (same forward pass)
        return loss + distillation

    def _distillation_loss(self, student_logps: torch.Tensor, inputs: dict[str, Any]) -> torch.Tensor:
        config = self.args
        mask = model_token_mask(inputs["completion_mask"], inputs.get("tool_mask")) * inputs["distill_mask"].long()
        mask = mask.to(student_logps.dtype)
        k1 = (student_logps - inputs["teacher_per_token_logps"]).detach()
        advantages = inputs["advantages"]
        sequence_advantage = advantages if advantages.dim() == 1 else advantages.mean(dim=1)
        sign = torch.ones_like(sequence_advantage, dtype=student_logps.dtype)
        negative = sequence_advantage < 0
        if config.negative_advantage == "flip":
            sign = torch.where(negative, -sign, sign)
        elif config.negative_advantage == "skip":
            sign = torch.where(negative, torch.zeros_like(sign), sign)
        surrogate = sign.unsqueeze(1) * k1 * (student_logps - student_logps.detach() + 1.0)
        tokens = mask.sum().clamp(min=1.0)
        loss = (surrogate * mask).sum() / tokens
        mode = "train" if getattr(self.model, "training", False) else "eval"
        metrics = self._metrics[mode]
        metrics["ttopd/reverse_kl"].append(self.accelerator.gather((k1 * mask).sum() / tokens).mean().item())
        model_tokens = model_token_mask(inputs["completion_mask"], inputs.get("tool_mask")).sum().clamp(min=1)
        metrics["ttopd/distilled_token_fraction"].append((mask.sum() / model_tokens).item())
        metrics["ttopd/flipped_fraction"].append(
            negative.float().mean().item() if config.negative_advantage == "flip" else 0.0)
        if mode == "train":  # the GRPO part is scaled the same way for gradient accumulation
            loss = loss / getattr(self, "current_gradient_accumulation_steps", self.args.gradient_accumulation_steps)
        return loss

    # ------------------------------------------------------------------------------ checkpoints
    def _save_checkpoint(self, model: Any, trial: Any) -> None:
        super()._save_checkpoint(model, trial)
        if self.args.should_save:
            folder = os.path.join(self._get_output_dir(trial=trial), f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}")
            torch.save({"state_dict": self.teacher.state_dict(), "updates": self.teacher_updates,
                        "master": self.teacher_master}, os.path.join(folder, TEACHER_CHECKPOINT_FILE))

    def _load_from_checkpoint(self, resume_from_checkpoint: str, model: Any = None) -> None:
        super()._load_from_checkpoint(resume_from_checkpoint, model)
        path = os.path.join(resume_from_checkpoint, TEACHER_CHECKPOINT_FILE)
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path} is missing: this checkpoint was not written by TTOPDTrainer, so the "
                                    "teacher cannot be restored; start a new run instead of --resume")
        saved = torch.load(path, map_location="cpu", weights_only=False)
        self.teacher.load_state_dict(saved["state_dict"])
        if saved.get("master") is not None:
            device = next(self.teacher.parameters()).device
            self.teacher_master = [None if weights is None else weights.to(device) for weights in saved["master"]]
        self.teacher_updates = [tuple(update) for update in saved["updates"]]
