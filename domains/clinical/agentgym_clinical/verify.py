"""How a ClinicalQA-v0 answer is scored: which one option a submission names, compared with the gold option.

A submission names an option by its letter in the episode's (shuffled) order ("B", "(b)", "Answer: B"), by the
option's text ("Simple goiter", case, spacing and Unicode forms aside), by both ("B. Simple goiter", which
must agree), or by a sentence that contains exactly one option's text. Anything that names two options (a
list of letters, every option's text, "yes or no"), or none, scores 0. Text is read with
`agentgym.answers.normalize_text`, the one reading every domain shares.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from typing import Any

from agentgym import Score, Task, verifier
from agentgym.answers import normalize_text

LETTERS = string.ascii_uppercase

# "b", "(b)", "b)", "answer: b", "the answer is b", "option (b)", "final answer: b"
_LETTER_ONLY = re.compile(
    r"^(?:(?:the\s+)?(?:final\s+|correct\s+)?(?:answer|option|choice)\s*(?:is\s*)?[:=-]?\s*)?"
    r"[(\[]?([a-z])[)\]]?$"
)
# "b. simple goiter", "(b) simple goiter", "b) simple goiter", "b: simple goiter"
_LETTER_AND_TEXT = re.compile(r"^[(\[]?([a-z])(?:[.):\]]|\s+-)\s*(.+)$")
_MARKUP = re.compile(r"[*_`#]+")


def option_key(text: Any) -> str:
    """The comparable form of an option's text (and of a submission): `normalize_text`, markup removed."""
    return normalize_text(_MARKUP.sub(" ", normalize_text(text)))


def named_options(text: str, keys: Sequence[str]) -> set[int]:
    """Indices of the options whose text occurs in `text` as whole words, ignoring an occurrence that lies
    inside a longer option's occurrence ("beta blocker" inside "beta blocker with alpha blockade")."""
    spans: list[tuple[int, int, int]] = []
    for index, key in enumerate(keys):
        if not key:
            continue
        pattern = (r"(?<!\w)" if key[0].isalnum() else "") + re.escape(key) + (r"(?!\w)" if key[-1].isalnum() else "")
        spans.extend((match.start(), match.end(), index) for match in re.finditer(pattern, text))
    named = set()
    for start, end, index in spans:
        inside_longer = any(other != index and o_start <= start and end <= o_end and (o_end - o_start) > (end - start)
                            for o_start, o_end, other in spans)
        if not inside_longer:
            named.add(index)
    return named


def _by_text(text: str, keys: Sequence[str], question: str) -> int | None:
    exact = [index for index, key in enumerate(keys) if key == text]
    if len(exact) == 1:
        return exact[0]
    if exact:
        return None  # two options read the same: no way to tell which was meant
    named = named_options(text, keys)
    if len(named) != 1:
        return None
    # An option the question itself names cannot be chosen by a sentence that contains it: echoing the question
    # back would choose it. Its letter or its exact text still can.
    if question and named & named_options(question, keys):
        return None
    return named.pop()


def read_choice(submission: Any, options: Sequence[str], question: str = "") -> int | None:
    """The position (in `options`, the order the agent saw) of the one option `submission` names, else None.

    Rules, in order: the exact text of an option; a letter alone; a letter with text, which must name the same
    option; a sentence containing exactly one option's text, unless `question` names that option too. A list,
    a number of options, empty or ambiguous text gives None.
    """
    if isinstance(submission, bool) or submission is None or isinstance(submission, (list, tuple, dict, set)):
        return None
    text = option_key(submission)
    if not text:
        return None
    keys = [option_key(option) for option in options]
    question = option_key(question)
    exact = [index for index, key in enumerate(keys) if key == text]
    if exact:
        return exact[0] if len(exact) == 1 else None
    letters = LETTERS[: len(options)].lower()
    letter = _LETTER_ONLY.match(text)
    if letter:
        return letters.index(letter.group(1)) if letter.group(1) in letters else None
    combined = _LETTER_AND_TEXT.match(text)
    if combined and combined.group(1) in letters:
        chosen = letters.index(combined.group(1))
        return chosen if _by_text(option_key(combined.group(2)), keys, question) == chosen else None
    return _by_text(text, keys, question)


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
