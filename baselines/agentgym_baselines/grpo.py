"""`AgentGRPOTrainer`: TRL's `GRPOTrainer` on agentgym envs, with the episode metrics agents need.

Beyond TRL's own metrics (`reward`, `rewards/<EnvClass>/mean`, `completions/mean_length` counting the model's
tokens only, `tools/call_frequency`, `tools/failure_frequency`), each generation batch logs:
- `episodes/assistant_turns`: assistant turns per episode (runs of model tokens between tool results);
- `episodes/submitted`: fraction of episodes that called the terminal tool;
- `tools/<name>/calls`: calls of each tool per episode, and `tools/<name>/failures`: the fraction that failed;
- `groups/mixed_outcome_share`: fraction of groups (the `num_generations` rollouts of one task) holding both a
  success and a failure; `groups/zero_advantage_share`: fraction whose rewards are all equal (zero advantage);
- `curriculum/<stat>`: the curriculum's `stats()` when the dataset is `task_dataset(..., sampler=...)`;
- `episodes/cut_by_budget`: fraction of rollouts TRL ended because a tool result would not fit in
  `max_completion_length` (the tool ran, its result was dropped); `episodes/cut_by_tool_limit`: fraction ended
  with a tool call still unanswered at `max_tool_calling_iterations`.
In CodeAct mode (`codeact=True`) the tokenizer reads ```python blocks as `execute_code` calls.

The episode's end is the rollout's end: once a rollout's environment reports its episode over (an accepted
submission or the env's turn limit), TRL's tool loop generates nothing more for it (no tokens, so no tool call
can follow), and its completion is cut after the model's last turn, so the ending tool's result and the next
turn's header are not in the sequence at all: no token after the episode's end reaches any loss.
`rollout_prompts` holds the prompts the batch was generated from (after each environment's `reset`).

Diagnosis-guided credit (`AgentGRPOConfig(label_credit=True)`, off by default): each assistant turn gets the
failure label of its tool calls (`agentgym_baselines.credit`), and the rollout's advantage becomes a per-token one,
weighted by its turn's label (the rule: docs/baselines.md). It also logs `credit/<label>`, the share of assistant
turns with each label, and `credit/misaligned`, the fraction of rollouts whose labels did not line up with their
token turns (their extra turns keep weight 1).

The cut counts read TRL's `_tool_call_loop` result, an internal: `check_trl_internals()` (run at construction)
fails loudly on a TRL whose internals moved, and `baselines/pyproject.toml` pins the TRL release it was written for.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

import torch
import trl
from trl import GRPOConfig, GRPOTrainer

from agentgym_baselines.adapter import AgentGymEnvironment
from agentgym_baselines.codeact import enable_codeact_parsing
from agentgym_baselines.credit import CreditWeights, assistant_turn_labels, label_shares, label_token_weights
from agentgym_baselines.task_stream import batch_metrics
from agentgym_baselines.turns import turns_per_completion

TRL_VERSION = "1.16.0"  # the release whose internals this module and ttopd.py override; pinned in pyproject.toml
# GRPOTrainer methods overridden or called here and in ttopd.py, with the parameters relied on.
TRL_INTERNALS: dict[str, tuple[str, ...]] = {
    "_generate_and_score_completions": ("inputs",),
    "_tool_call_loop": ("prompts", "prompt_ids", "completion_ids", "completions", "logprobs", "images",
                        "multimodal_fields"),
    "_get_per_token_logps_and_entropies": ("model", "input_ids", "attention_mask", "logits_to_keep"),
    "_compute_loss": ("model", "inputs"),
    "_tokenize_prompts": ("prompts",),
    "_save_checkpoint": ("model", "trial"),
    "_generate": ("prompts",),
    "_generate_single_turn": ("prompt_ids", "images", "multimodal_fields", "num_generations"),
}
TOOL_LOOP_RESULT = ("tool_mask", "completions", "completion_ids", "logprobs", "tool_call_count",
                    "tool_failure_count", "tool_images")


def check_trl_internals() -> None:
    """Raise RuntimeError naming what moved when TRL's internals differ from those this package overrides."""
    problems = []
    if trl.__version__ != TRL_VERSION:
        problems.append(f"trl {trl.__version__} is installed, these trainers were written for trl {TRL_VERSION}")
    for name, expected in TRL_INTERNALS.items():
        method = getattr(GRPOTrainer, name, None)
        if method is None:
            problems.append(f"GRPOTrainer.{name} is gone")
            continue
        parameters = list(inspect.signature(method).parameters)[1:]
        if tuple(parameters[:len(expected)]) != expected:
            problems.append(f"GRPOTrainer.{name}{tuple(parameters)} no longer starts with {expected}")
    loop = getattr(GRPOTrainer, "_tool_call_loop", None)
    if loop is not None and "return " + ", ".join(TOOL_LOOP_RESULT) not in " ".join(inspect.getsource(loop).split()):
        problems.append(f"GRPOTrainer._tool_call_loop no longer returns {TOOL_LOOP_RESULT}")
    if problems:
        raise RuntimeError("agentgym_baselines overrides TRL internals that moved: " + "; ".join(problems)
                           + f". Install the pinned release (pip install trl=={TRL_VERSION}) or update "
                           "agentgym_baselines.grpo / ttopd for the new TRL.")


@dataclass
class AgentGRPOConfig(GRPOConfig):
    """`GRPOConfig` plus diagnosis-guided credit (docs/baselines.md, "Diagnosis-guided credit")."""

    label_credit: bool = field(default=False, metadata={"help": "Reweight each rollout's advantage per assistant "
                                                                "turn by the turn's diagnosis label."})
    label_credit_failure_weight: float = field(default=2.0, metadata={
        "help": "Raw weight of failing turns in a rollout with negative advantage."})
    label_credit_ok_weight: float = field(default=0.5, metadata={
        "help": "Raw weight of ok (and after-the-end) turns in a rollout with negative advantage."})
    label_credit_positive_failure_weight: float = field(default=0.0, metadata={
        "help": "Raw weight of failing turns in a rollout with positive advantage."})

    def __post_init__(self) -> None:
        super().__post_init__()
        self.credit_weights()  # negative weights fail here

    def credit_weights(self) -> CreditWeights:
        return CreditWeights(failure=self.label_credit_failure_weight, ok=self.label_credit_ok_weight,
                             positive_failure=self.label_credit_positive_failure_weight)


class AgentGRPOTrainer(GRPOTrainer):
    """`trl.GRPOTrainer` with agentgym episode metrics and optional CodeAct parsing.

    Args:
        *args: As for `GRPOTrainer`.
        codeact: Read ```python blocks in the model's messages as `execute_code` tool calls (use with
            `environment_factory(env_id, codeact=True)`).
        **kwargs: As for `GRPOTrainer`.
    """

    def __init__(self, *args: Any, codeact: bool = False, **kwargs: Any) -> None:
        check_trl_internals()
        super().__init__(*args, **kwargs)
        self.codeact = codeact
        self._cuts: tuple[list[bool], list[bool]] | None = None
        self._rollout_messages: list[Any] = []
        self._batch_labels: list[list[str] | None] | None = None
        self.rollout_prompts: list[list[dict[str, Any]]] = []
        if codeact:
            enable_codeact_parsing(self._tokenizer)

    def _generate(self, prompts: list[Any]) -> Any:
        # The prompts after each environment's reset: what the model was shown (the teacher starts from these).
        self.rollout_prompts = [list(prompt) for prompt in prompts]
        return super()._generate(prompts)

    def _episode_over(self, index: int) -> bool:
        environments: list[Any] = list(self.environments or [])
        environment = environments[index] if index < len(environments) else None
        return isinstance(environment, AgentGymEnvironment) and environment._done  # submitted or out of turns

    def _tool_call_loop(self, prompts: Any, prompt_ids: Any, completion_ids: Any, completions: Any, logprobs: Any,
                        images: Any, multimodal_fields: Any) -> Any:
        self._generate_single_turn = self._generation_stopping_at_episode_end(  # type: ignore[method-assign]
            prompt_ids, completion_ids)
        try:
            result = list(super()._tool_call_loop(prompts, prompt_ids, completion_ids, completions, logprobs, images,
                                                  multimodal_fields))
        finally:
            del self._generate_single_turn  # back to the class's method
        result = _cut_after_episode_end(result, [self._episode_over(i) for i in range(len(result[2]))])
        completions = result[TOOL_LOOP_RESULT.index("completions")]
        self._rollout_messages = list(completions)
        environments: list[Any] = list(self.environments or [])
        budget, limit = [], []
        for index, messages in enumerate(completions):
            last = messages[-1] if messages else {}
            unanswered = last.get("role") == "assistant" and bool(last.get("tool_calls"))
            answered = sum(1 for message in messages if message.get("role") == "tool")
            environment = environments[index] if index < len(environments) else None
            made = environment._invocations if isinstance(environment, AgentGymEnvironment) else answered
            # TRL ran the tools of the last message, then dropped their results: more calls than results seen.
            budget.append(unanswered and made > answered)
            limit.append(unanswered and made <= answered)
        self._cuts = (budget, limit)
        return tuple(result)

    def _generation_stopping_at_episode_end(self, prompt_ids: list[list[int]], completion_ids: list[list[int]]) -> Any:
        """`_generate_single_turn` for TRL's tool loop that generates nothing for a rollout whose episode is over.

        The loop passes the sequences of the rollouts still calling tools, in rollout order, each one its
        rollout's prompt and completion so far plus the tool-result suffix; they are matched to rollouts by that
        prefix, in order."""
        original = type(self)._generate_single_turn.__get__(self)

        def generate(sequences: list[list[int]], images: Any, multimodal_fields: Any, num_generations: int,
                     *args: Any, **kwargs: Any) -> Any:
            owners = _owners(sequences, prompt_ids, completion_ids)
            over = [owner is not None and self._episode_over(owner) for owner in owners]
            if not any(over):
                return original(sequences, images, multimodal_fields, num_generations, *args, **kwargs)
            live = [index for index, ended in enumerate(over) if not ended]
            text_only = images is None and not multimodal_fields
            if text_only and (live or self.accelerator.num_processes == 1):
                ids: list[list[int]] = [[] for _ in sequences]
                logps: list[list[float]] | None = [[] for _ in sequences]  # safe whether TRL keeps logprobs
                if live:
                    made_ids, made_logps = original([sequences[i] for i in live], None, multimodal_fields,
                                                    num_generations, *args, **kwargs)
                    for position, index in enumerate(live):
                        ids[index] = list(made_ids[position])
                    if made_logps is None:
                        logps = None
                    else:
                        for position, index in enumerate(live):
                            logps[index] = list(made_logps[position])  # type: ignore[index]
                return ids, logps
            # Images, or every rollout over on one of several processes (generation may be collective): generate
            # for all, keep nothing for the ended ones.
            made_ids, made_logps = original(sequences, images, multimodal_fields, num_generations, *args, **kwargs)
            made_ids = [[] if ended else list(row) for row, ended in zip(made_ids, over, strict=True)]
            if made_logps is not None:
                made_logps = [[] if ended else list(row) for row, ended in zip(made_logps, over, strict=True)]
            return made_ids, made_logps

        return generate

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        self._batch_labels = None
        output = super()._generate_and_score_completions(inputs)
        self._log_episode_metrics(output)
        if getattr(self.args, "label_credit", False):
            self._apply_label_credit(output)
        return output

    def batch_turn_labels(self) -> list[list[str] | None]:
        """The diagnosis label of each assistant turn of each rollout of the batch just generated (None for a
        rollout without an agentgym environment)."""
        if self._batch_labels is None:
            environments: list[Any] = list(self.environments or [])
            tool_dicts = list(getattr(self, "_sync_tool_dicts", []) or [])
            labels: list[list[str] | None] = []
            for index, messages in enumerate(self._rollout_messages):
                environment = environments[index] if index < len(environments) else None
                if not isinstance(environment, AgentGymEnvironment):
                    labels.append(None)
                    continue
                names = set(tool_dicts[index]) if index < len(tool_dicts) else set(environment._signatures)
                labels.append(assistant_turn_labels(messages, environment._invocation_log,
                                                    environment._step_labels(), names))
            self._batch_labels = labels
        return self._batch_labels

    def _credit_weights(self) -> CreditWeights:
        args = self.args
        if isinstance(args, AgentGRPOConfig):
            return args.credit_weights()
        return CreditWeights()  # a plain GRPOConfig with label_credit set on it: the shipped weights

    def _apply_label_credit(self, output: dict[str, Any]) -> None:
        labels = self.batch_turn_labels()
        if len(labels) != output["completion_mask"].size(0):
            raise RuntimeError(f"label credit: {len(labels)} labelled rollouts for a batch of "
                               f"{output['completion_mask'].size(0)}")
        weights, misaligned = label_token_weights(output["completion_mask"], output.get("tool_mask"), labels,
                                                  output["advantages"], self._credit_weights())
        advantages = output["advantages"]
        if advantages.dim() == 1:
            advantages = advantages.unsqueeze(1)
        output["advantages"] = advantages * weights.to(device=advantages.device, dtype=advantages.dtype)
        mode = "train" if getattr(self.model, "training", False) else "eval"
        metrics = self._metrics[mode]
        for label, share in label_shares(labels).items():
            metrics[f"credit/{label}"].append(share)
        metrics["credit/misaligned"].append(misaligned / max(len(labels), 1))

    def _log_episode_metrics(self, output: dict[str, Any]) -> None:
        mode = "train" if getattr(self.model, "training", False) else "eval"
        metrics = self._metrics[mode]
        turns = turns_per_completion(output["completion_mask"], output.get("tool_mask")).float()
        metrics["episodes/assistant_turns"].append(self.accelerator.gather(turns).mean().item())
        if self._cuts is not None:
            budget, limit = self._cuts
            self._cuts = None
            metrics["episodes/cut_by_budget"].append(sum(budget) / max(len(budget), 1))
            metrics["episodes/cut_by_tool_limit"].append(sum(limit) / max(len(limit), 1))
        candidates: list[Any] = list(self.environments or [])
        environments = [e for e in candidates if isinstance(e, AgentGymEnvironment)]
        if not environments:
            return
        stats = [environment._episode_stats() for environment in environments]
        metrics["episodes/submitted"].append(sum(s["submitted"] for s in stats) / len(stats))
        # Episodes the infrastructure failed (info["infra_error"]): counted apart so a run can see and drop them.
        metrics["episodes/infra_failed"].append(sum(s["infra_error"] for s in stats) / len(stats))
        names = sorted({name for s in stats for name in s["calls"]})
        for name in names:
            calls = sum(s["calls"].get(name, 0) for s in stats)
            failures = sum(s["failures"].get(name, 0) for s in stats)
            metrics[f"tools/{name}/calls"].append(calls / len(stats))
            metrics[f"tools/{name}/failures"].append(failures / calls if calls else 0.0)
        if len(environments) == len(candidates):  # group shares, and the curriculum's stats when it draws the tasks
            group_size = self.num_generations if mode == "train" else self.num_generations_eval
            dataset = self.train_dataset if mode == "train" else None
            for name, value in batch_metrics(dataset, stats, group_size).items():
                metrics[name].append(value)


def _owners(sequences: list[list[int]], prompt_ids: list[list[int]], completion_ids: list[list[int]]) -> list[int | None]:
    """For each sequence of a tool-loop generation call, the rollout it continues (its prompt and completion so
    far are the sequence's start), matched in rollout order; None when none matches."""
    owners: list[int | None] = []
    start = 0
    for sequence in sequences:
        found = None
        for index in range(start, len(prompt_ids)):
            prompt, completion = list(prompt_ids[index]), list(completion_ids[index])
            head = len(prompt) + len(completion)
            if len(sequence) >= head and list(sequence[:head]) == prompt + completion:
                found = index
                break
        owners.append(found)
        if found is not None:
            start = found + 1
    return owners


def _cut_after_episode_end(result: list[Any], over: list[bool]) -> list[Any]:
    """TRL's tool-loop result with each ended rollout's completion cut after its last model token (dropping the
    ending tool's result and the header of a turn that was never generated)."""
    tool_mask = result[TOOL_LOOP_RESULT.index("tool_mask")]
    completion_ids = result[TOOL_LOOP_RESULT.index("completion_ids")]
    logprobs = result[TOOL_LOOP_RESULT.index("logprobs")]
    for index, ended in enumerate(over):
        if not ended:
            continue
        mask = tool_mask[index]
        keep = max((position + 1 for position, value in enumerate(mask) if value), default=len(mask))
        tool_mask[index] = mask[:keep]
        completion_ids[index] = completion_ids[index][:keep]
        if logprobs is not None:
            logprobs[index] = logprobs[index][:keep]
    return result


def device_settings() -> dict[str, Any]:
    """GRPOConfig settings for this machine: CUDA with bf16 when present, else CPU in float32."""
    if torch.cuda.is_available():
        return {"use_cpu": False, "bf16": torch.cuda.is_bf16_supported(), "fp16": False}
    return {"use_cpu": True, "bf16": False, "fp16": False}
