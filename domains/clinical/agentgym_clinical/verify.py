"""How a ClinicalQA-v0 answer is scored: which one option a submission names, compared with the gold option
(`clinical_choice`), or, for a free-number question, one number within the stated tolerance (`clinical_number`).

A submission names an option by its letter in the episode's (shuffled) order ("B", "(b)", "Answer: B"), by the
option's text ("Simple goiter", case, spacing and Unicode forms aside), by both ("B. Simple goiter", which
must agree), by a sentence that contains exactly one option's text, or by a distinctive part of one option's
text ("Class B" for "Child-Pugh class B" beside "Child-Pugh class A"). Anything that names two options (a list
of letters, every option's text, "yes or no", "class A or B"), or none, scores 0. The rules are
`agentgym.answers.read_option`, the one reading every domain shares.

A number answer is one number (`agentgym.answers.split_quantity`), optionally followed by the unit the question
asks for in any spelling `agentgym.answers.same_unit` accepts ("mg", "mg/day", "mg per day" for a daily dose).
It scores 1 when it lies within the task's tolerance of the gold, which the prompt states
(`tasks.common.number_contract`). Two numbers ("150 or 300", "150-300", "2 x 150 = 300"), another unit, or no
number score 0.
"""

from __future__ import annotations

import re
from typing import Any

from agentgym import Score, Task, verifier
from agentgym.answers import (
    OPTION_LETTERS,
    named_options,
    option_key,
    read_option,
    same_unit,
    split_items,
    split_quantity,
)

LETTERS = OPTION_LETTERS
read_choice = read_option  # the name this domain's modules and tests know
__all__ = ["LETTERS", "clinical_choice", "clinical_number", "clinical_numbers", "episode_options", "named_options",
           "number_error", "option_key", "read_choice", "within_tolerance"]


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


def within_tolerance(value: float, gold: float, tolerance: dict[str, float]) -> bool:
    """Whether `value` is within `tolerance` of `gold`: {"rel": r} (a share of |gold|) and/or {"abs": a}; the
    larger allowance wins. Tiny float noise (1e-9) is allowed so that exact rational golds match themselves."""
    allowed = max(float(tolerance.get("rel", 0.0)) * abs(gold), float(tolerance.get("abs", 0.0))) + 1e-9
    return abs(value - gold) <= allowed


# Words before the number that turn it into a bound or a denial ("not 0", "> 0", "less than 150"): the answer
# then states another thing than the number, and scores 0. "At most" / "up to" name a maximum, which is what a
# dose rule's maximum asks for, and stay.
_BOUND = re.compile(r"(?<![\w])(?:not|no|never|less|more|fewer|greater|over|under|above|below|at least|exceeds?|"
                    r"lower|higher)(?![\w])|[<>\u2264\u2265\u2260]")
_NUMBER_START = re.compile(r"[-+]?\d")


def number_error(submission: Any, gold: float, task: Task) -> str:
    """Why `submission` is not the number `gold` under `task`'s contract ("" when it is): one number, no unit or
    one of `metadata["units"]` (read by `same_unit`; with `metadata["grams_read_as_mg"]` also the same spellings
    in g, read as 1,000 mg), within `metadata["tolerance"]` of `gold` or equal to `gold` rounded to
    `metadata["decimals"]`."""
    quantity = split_quantity(submission)
    if quantity is None:
        return "holds no number: give one number"
    if isinstance(submission, str) and _BOUND.search(_NUMBER_START.split(submission.casefold(), maxsplit=1)[0]):
        return "bounds or denies the number instead of giving it"
    value, unit = quantity
    units = [str(unit_text) for unit_text in task.metadata.get("units", [])]
    if unit and not any(same_unit(unit, accepted) for accepted in units):
        # A dose in grams is the same dose ("2 g/day" for 2000 mg a day), where the task says so.
        grams = [f"g{accepted[2:]}" for accepted in units if accepted.startswith("mg")]
        if task.metadata.get("grams_read_as_mg") and any(same_unit(unit, spelling) for spelling in grams):
            value *= 1000
        else:
            return f"is not one number {f'in {units[0]}' if units else 'without a unit'}"
    if within_tolerance(value, gold, task.metadata.get("tolerance", {})):
        return ""
    # The exact value rounded as the prompt asks always scores, even where the rounding step is wider than the
    # tolerance (15.45 rounded to 15 is 2.9% off a 2% band).
    decimals = task.metadata.get("decimals")
    if isinstance(decimals, int) and abs(value - round(gold, decimals)) <= 1e-9:
        return ""
    return "is not the correct number"


@verifier("clinical_number")
def clinical_number(task: Task, submission: Any, state: Any) -> Score:
    """1.0 when the submission is one number within `metadata["tolerance"]` of the exact gold
    (`metadata["exact"]`, else `task.answer`), in the asked unit if any (`number_error`)."""
    error = number_error(submission, float(task.metadata.get("exact", task.answer)), task)
    return Score(0.0 if error else 1.0, message=f"the answer {error}" if error else "")


@verifier("clinical_numbers")
def clinical_numbers(task: Task, submission: Any, state: Any) -> Score:
    """1.0 when the submission is a list (a JSON array, a JSON-encoded array, lines, or one line split at ";" or
    ",") of exactly as many numbers as the gold, in its order, each right by `number_error`."""
    golds = [float(value) for value in task.metadata.get("exact", task.answer)]
    items = split_items(submission)
    if len(items) != len(golds):
        return Score(0.0, message=f"the answer is not a list of {len(golds)} numbers")
    wrong = [number for number, (item, gold) in enumerate(zip(items, golds), start=1)
             if number_error(item, gold, task)]
    return Score(0.0 if wrong else 1.0, message=f"item {wrong[0]} is not right" if wrong else "")
