"""How a ClinicalQA-v0 answer is scored: which one option a submission names, compared with the gold option.

A submission names an option by its letter in the episode's (shuffled) order ("B", "(b)", "Answer: B"), by the
option's text ("Simple goiter", case, spacing and Unicode forms aside), by both ("B. Simple goiter", which
must agree), by a sentence that contains exactly one option's text, or by a distinctive part of one option's
text ("Class B" for "Child-Pugh class B" beside "Child-Pugh class A"). Anything that names two options (a list
of letters, every option's text, "yes or no", "class A or B"), or none, scores 0. The rules are
`agentgym.answers.read_option`, the one reading every domain shares.
"""

from __future__ import annotations

from typing import Any

from agentgym import Score, Task, verifier
from agentgym.answers import OPTION_LETTERS, named_options, option_key, read_option

LETTERS = OPTION_LETTERS
read_choice = read_option  # the name this domain's modules and tests know
__all__ = ["LETTERS", "clinical_choice", "episode_options", "named_options", "option_key", "read_choice"]


def episode_options(task: Task) -> list[str]:
    """The options in the order this episode showed them (`metadata["episode_order"]`, else as stored)."""
    options = list(task.metadata.get("options", []))
    order = task.metadata.get("episode_order")
    if isinstance(order, list) and sorted(order) == list(range(len(options))):
        return [options[position] for position in order]
    return options


@verifier("clinical_choice")
def clinical_choice(task: Task, submission: Any, state: Any) -> Score:
    """1.0 when the submission names exactly the gold option (`task.answer` is the gold option's text)."""
    options = episode_options(task)
    chosen = read_choice(submission, options, str(task.metadata.get("question", "")))
    if chosen is None:
        return Score(0.0, message="the answer names no single option: give one option's letter or its text")
    ok = option_key(options[chosen]) == option_key(task.answer)
    return Score(float(ok), message="" if ok else "not the correct option")
