"""Which completion tokens belong to which assistant turn.

TRL's multi-turn completion is one token sequence: assistant turn 1, the tool result wrapper (chat-template
tokens and the tool's output), assistant turn 2, ... Its `tool_mask` is 0 on tool-result tokens and 1 elsewhere;
`completion_mask` is 0 on padding (and on everything after the first eos of truncated completions). A token
is the model's own when both are 1, and each maximal run of such tokens is one assistant turn.
"""

from __future__ import annotations

import torch


def model_token_mask(completion_mask: torch.Tensor, tool_mask: torch.Tensor | None) -> torch.Tensor:
    """1 on tokens the model generated (not prompt, tool results or padding), 0 elsewhere; shape (B, T)."""
    mask = completion_mask.long()
    return mask if tool_mask is None else mask * tool_mask.long()


def assistant_turn_ids(completion_mask: torch.Tensor, tool_mask: torch.Tensor | None) -> torch.Tensor:
    """The 1-based assistant turn of every model token, 0 on other tokens; shape (B, T)."""
    model = model_token_mask(completion_mask, tool_mask)
    previous = torch.nn.functional.pad(model[:, :-1], (1, 0))
    starts = (model == 1) & (previous == 0)
    return torch.cumsum(starts.long(), dim=1) * model


def first_turns_mask(completion_mask: torch.Tensor, tool_mask: torch.Tensor | None, turns: int) -> torch.Tensor:
    """1 on the model tokens of the first `turns` assistant turns (all turns when `turns` is 0); shape (B, T)."""
    if turns < 0:
        raise ValueError(f"turns must be 0 (all turns) or positive, got {turns}")
    ids = assistant_turn_ids(completion_mask, tool_mask)
    if turns == 0:
        return (ids > 0).long()
    return ((ids > 0) & (ids <= turns)).long()


def turns_per_completion(completion_mask: torch.Tensor, tool_mask: torch.Tensor | None) -> torch.Tensor:
    """How many assistant turns each completion has; shape (B,)."""
    return assistant_turn_ids(completion_mask, tool_mask).max(dim=1).values
