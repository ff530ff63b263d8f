"""Assistant turns in TRL's multi-turn completions: the masks TT-OPD's truncation relies on."""

from __future__ import annotations

import pytest
import torch
from agentgym_baselines.turns import assistant_turn_ids, first_turns_mask, turns_per_completion

# Row 0: turn 1 (3 tokens), tool result (2), turn 2 (2), tool result (1), turn 3 (1), padding (1).
# Row 1: a single turn (4 tokens) and padding (tool_mask is padded with 1, completion_mask with 0).
COMPLETION_MASK = torch.tensor([[1, 1, 1, 1, 1, 1, 1, 1, 1, 0],
                                [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]])
TOOL_MASK = torch.tensor([[1, 1, 1, 0, 0, 1, 1, 0, 1, 1],
                          [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]])


def test_turn_ids_number_runs_of_model_tokens() -> None:
    assert assistant_turn_ids(COMPLETION_MASK, TOOL_MASK).tolist() == [[1, 1, 1, 0, 0, 2, 2, 0, 3, 0],
                                                                       [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]]
    assert turns_per_completion(COMPLETION_MASK, TOOL_MASK).tolist() == [3, 1]


@pytest.mark.parametrize(("turns", "row0"), [
    (1, [1, 1, 1, 0, 0, 0, 0, 0, 0, 0]),
    (2, [1, 1, 1, 0, 0, 1, 1, 0, 0, 0]),
    (3, [1, 1, 1, 0, 0, 1, 1, 0, 1, 0]),
    (0, [1, 1, 1, 0, 0, 1, 1, 0, 1, 0]),
])
def test_first_turns_mask_covers_exactly_the_first_k_turns(turns: int, row0: list[int]) -> None:
    mask = first_turns_mask(COMPLETION_MASK, TOOL_MASK, turns)
    assert mask[0].tolist() == row0
    assert mask[1].tolist() == [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
    assert not (mask.bool() & (TOOL_MASK == 0)).any()


def test_negative_turns_are_refused() -> None:
    with pytest.raises(ValueError, match="0 \\(all turns\\)"):
        first_turns_mask(COMPLETION_MASK, TOOL_MASK, -1)
