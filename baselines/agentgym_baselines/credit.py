"""Diagnosis-guided credit: a failure label per assistant turn, and advantage weights per token from it.

Every finished agentgym episode carries `info["diagnosis"]["turns"]`, one label per env step (see
docs/diagnosis.md). In the TRL adapter each tool call is one env step, and one assistant turn (a run of model
tokens between tool results) holds zero or more tool calls. `assistant_turn_labels` maps the steps back to the
turns; `label_token_weights` turns the labels into a weight per completion token, which the trainer multiplies
into the rollout's advantage (`AgentGRPOConfig.label_credit`); `failed_turns_mask` marks the tokens of failing
turns, for TT-OPD's `distill_turn_selection="failed"`. The rule and its weights are documented in
docs/baselines.md ("Diagnosis-guided credit").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from agentgym.diagnosis import (
    BAD_ARGUMENTS,
    FAILURE_TURN_LABELS,
    FORMAT_ERROR,
    OK,
    SUBMITTED,
    TOOL_ERROR,
    TURN_LABELS,
    UNKNOWN_TOOL,
)
from agentgym_baselines.turns import assistant_turn_ids, model_token_mask

# A turn after the episode ended that called no tool (the model's closing words after `submit`'s result).
AFTER_END = "after_end"
# The last turn's tool calls, which TRL never ran (its tool-calling round limit was reached).
UNANSWERED = "unanswered"
CREDIT_LABELS = (*TURN_LABELS, AFTER_END, UNANSWERED)


@dataclass
class Invocation:
    """One call of an adapter tool method (what TRL made), and the env steps it led to."""

    name: str
    arguments: Any
    steps: list[int] = field(default_factory=list)  # indices of the env steps it made, in order
    failed: bool = False      # it raised ToolCallFailed (the env, or the CodeAct runner, answered an error)
    after_end: bool = False   # it was made after the episode had ended (no env step)
    ended: bool = False       # one of its steps ended the episode (submitted or truncated)


def combine_labels(labels: Sequence[str]) -> str:
    """One label for a turn made of several calls, with the env's own rule (agentgym.diagnosis.label_turns):
    a turn with any `ok` call is `ok`; otherwise its first failure in the taxonomy's order; otherwise `submitted`."""
    if not labels or OK in labels:
        return OK
    failures = [label for label in labels if label in FAILURE_TURN_LABELS]
    if failures:
        return min(failures, key=TURN_LABELS.index)
    return SUBMITTED if SUBMITTED in labels else OK


def _invocation_label(invocation: Invocation, step_labels: Sequence[str]) -> str:
    if invocation.after_end:
        return TOOL_ERROR  # TRL showed the model "the episode is over" as an error
    labels = [step_labels[index] for index in invocation.steps if index < len(step_labels)]
    if invocation.failed and not invocation.steps:
        labels.append(TOOL_ERROR)  # e.g. a CodeAct block that raised before calling any tool
    return combine_labels(labels)


def assistant_turn_labels(messages: Sequence[Mapping[str, Any]], invocations: Sequence[Invocation],
                          step_labels: Sequence[str], tool_names: set[str] | frozenset[str]) -> list[str]:
    """The label of each assistant message of one TRL rollout, in order.

    Args:
        messages: The rollout's completion messages as TRL built them (assistant, tool, ..., assistant).
        invocations: The adapter's record of its tool-method calls in this episode, in order.
        step_labels: One diagnosis label per env step of the episode.
        tool_names: The tool names TRL could dispatch for this rollout.

    A tool call is matched to the next recorded invocation when name and arguments agree; a call TRL could not
    make (a name it does not know, arguments it could not pass) never reached the env and is `unknown_tool` or
    `bad_arguments`. A message without tool calls is `format_error` (no readable tool call) while the episode is
    open and `after_end` once it has ended. The last message's calls are `unanswered` when no tool result follows
    it and none of them ran (TRL stopped at its round limit).
    """
    labels: list[str] = []
    cursor = 0
    ended = False
    for position, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        calls = message.get("tool_calls") or []
        if not calls:
            labels.append(AFTER_END if ended else FORMAT_ERROR)
            continue
        answered = any(later.get("role") == "tool" for later in messages[position + 1:])
        if not answered and cursor == len(invocations):
            labels.append(UNANSWERED)
            continue
        call_labels = []
        for call in calls:
            function = call.get("function") if call.get("type", "function") == "function" else None
            if not isinstance(function, Mapping):
                call_labels.append(FORMAT_ERROR)
                continue
            name, arguments = function.get("name"), function.get("arguments")
            if cursor < len(invocations) and invocations[cursor].name == name \
                    and invocations[cursor].arguments == arguments:
                invocation = invocations[cursor]
                cursor += 1
                call_labels.append(_invocation_label(invocation, step_labels))
                ended = ended or invocation.ended
            else:
                call_labels.append(BAD_ARGUMENTS if name in tool_names else UNKNOWN_TOOL)
        labels.append(combine_labels(call_labels))
    return labels


@dataclass(frozen=True)
class CreditWeights:
    """Raw turn weights of diagnosis-guided credit (before each rollout is renormalised to mean weight 1)."""

    failure: float = 2.0           # failing turns of a rollout with negative advantage
    ok: float = 0.5                # ok and after_end turns of a rollout with negative advantage
    positive_failure: float = 0.0  # failing turns of a rollout with positive advantage

    def __post_init__(self) -> None:
        for name in ("failure", "ok", "positive_failure"):
            if getattr(self, name) < 0:
                raise ValueError(f"label credit weight {name} must be >= 0, got {getattr(self, name)}")

    def turn_weight(self, label: str, advantage: float) -> float:
        """The raw weight of one turn labelled `label` in a rollout whose advantage is `advantage`."""
        failing = label in FAILURE_TURN_LABELS
        if label == UNANSWERED:
            return 1.0
        if advantage < 0:
            return self.failure if failing else self.ok if label in (OK, AFTER_END) else 1.0
        if advantage > 0:
            return self.positive_failure if failing else 1.0
        return 1.0


def label_token_weights(completion_mask: torch.Tensor, tool_mask: torch.Tensor | None,
                        labels: Sequence[Sequence[str] | None], advantages: torch.Tensor,
                        weights: CreditWeights) -> tuple[torch.Tensor, int]:
    """Per-token weights (B, T) to multiply into the advantages, and how many rollouts were misaligned.

    Each model token gets its turn's raw weight; then each rollout is scaled so its model tokens' mean weight is 1
    (credit moves between the rollout's turns; its total is unchanged). A rollout whose raw weights are all 0 keeps
    0 (nothing in it is credited). Rollouts without labels (None) and turns past the labelled ones keep weight 1;
    a rollout whose token turns and labelled turns differ in number counts as misaligned.
    """
    turn_ids = assistant_turn_ids(completion_mask, tool_mask)
    model = model_token_mask(completion_mask, tool_mask).to(torch.float32)
    result = torch.ones(turn_ids.shape, dtype=torch.float32, device=turn_ids.device)
    misaligned = 0
    sequence_advantages = advantages if advantages.dim() == 1 else advantages.mean(dim=1)
    for row, rollout_labels in enumerate(labels):
        turns = int(turn_ids[row].max().item())
        if rollout_labels is None:
            continue
        if turns != len(rollout_labels):
            misaligned += 1
        advantage = float(sequence_advantages[row].item())
        table = torch.ones(turns + 1, dtype=torch.float32, device=turn_ids.device)
        for index, label in enumerate(rollout_labels[:turns]):
            table[index + 1] = weights.turn_weight(label, advantage)
        raw = table[turn_ids[row]] * model[row]
        total = float(raw.sum().item())
        tokens = float(model[row].sum().item())
        if total > 0:
            result[row] = raw * (tokens / total)
        elif tokens > 0:
            result[row] = raw  # all zero
    return result * model + (1 - model), misaligned


def failed_turns_mask(completion_mask: torch.Tensor, tool_mask: torch.Tensor | None,
                      labels: Sequence[Sequence[str] | None]) -> torch.Tensor:
    """1 on the model tokens of turns with a failure label (`agentgym.diagnosis.FAILURE_TURN_LABELS`), 0
    elsewhere; shape (B, T). Rollouts without labels get no tokens."""
    turn_ids = assistant_turn_ids(completion_mask, tool_mask)
    mask = torch.zeros_like(turn_ids)
    for row, rollout_labels in enumerate(labels):
        if not rollout_labels:
            continue
        failing = [index + 1 for index, label in enumerate(rollout_labels) if label in FAILURE_TURN_LABELS]
        if failing:
            mask[row] = torch.isin(turn_ids[row], torch.tensor(failing, device=turn_ids.device)).long()
    return mask


def label_shares(labels: Sequence[Sequence[str] | None]) -> dict[str, float]:
    """The fraction of labelled assistant turns carrying each label (every label, so per-step means line up)."""
    flat = [label for rollout in labels if rollout for label in rollout]
    if not flat:
        return {}
    return {label: flat.count(label) / len(flat) for label in CREDIT_LABELS}
