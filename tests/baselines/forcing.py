"""Make a random tiny model act: replace some of its generations with given text.

A randomly initialised model never writes a valid tool call, so every reward in a group would be equal and
nothing would train. `force_generations` wraps the model instance's `generate` (the only mock in these tests,
because no real tiny model can be made to call tools on demand) so that chosen rows become the given text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

Chooser = Callable[[int, str], "str | None"]


def force_generations(model: Any, tokenizer: Any, choose: Chooser) -> list[str]:
    """Wrap `model.generate`: row `i` of a call whose decoded prompt is `p` becomes `choose(i, p)` (+ eos) when
    that is not None. Returns the list of prompts seen, for assertions."""
    original = model.generate
    seen: list[str] = []

    def generate(*args: Any, **kwargs: Any) -> torch.Tensor:
        input_ids = kwargs["input_ids"]
        prompt_length = input_ids.size(1)
        prompts = [tokenizer.decode(row, skip_special_tokens=False) for row in input_ids]
        seen.extend(prompts)
        forced = [choose(index, prompt) for index, prompt in enumerate(prompts)]
        # Generate for real only when some row is not forced (keeps fully forced tests fast).
        output = original(*args, **kwargs) if any(text is None for text in forced) else None
        rows = []
        for index, text in enumerate(forced):
            if text is None:
                assert output is not None
                rows.append(output[index, prompt_length:].tolist())
            else:
                rows.append(tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id])
        width = max(len(row) for row in rows)
        completion = torch.full((len(rows), width), tokenizer.pad_token_id, dtype=input_ids.dtype)
        for index, row in enumerate(rows):
            completion[index, : len(row)] = torch.tensor(row, dtype=input_ids.dtype)
        return torch.cat([input_ids, completion.to(input_ids.device)], dim=1)

    model.generate = generate
    return seen


def tool_call(name: str, arguments: dict[str, Any]) -> str:
    import json

    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def replay_or_wrong(task: Any, turns: list[str], solve: bool) -> str:
    """The next assistant turn of a rollout that replays `task.solution` (`solve`) or submits a wrong value in every
    argument of the task's own terminal tool at once; "Done." once the rollout has submitted. `turns` are the
    assistant turns so far."""
    final = task.solution[-1]
    if not turns:
        return tool_call(**task.solution[0]) if solve else tool_call(final["name"],
                                                                      {key: "SELECT 1" for key in final["arguments"]})
    if "SELECT 1" in turns[0] or len(turns) >= len(task.solution):
        return "Done."
    return tool_call(**task.solution[len(turns)])
