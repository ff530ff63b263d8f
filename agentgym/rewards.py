"""Verifiers and reward composition.

A verifier turns a submission into a `Score` in [0, 1]. Tasks name their verifier (`Task.verifier.name`);
domains register theirs with `@verifier("name")`. Every built-in verifier reads the submission through
`agentgym.answers`. The episode's reward is the verifier's score; shaping components (format, schema,
execution, per-turn process signals) are reported in the breakdown and only added when the user gives weights,
only to submitted episodes, and never up to the value of a correct answer (see `combine`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentgym import answers

if TYPE_CHECKING:
    from agentgym.tasks import Task

# What each reward-breakdown term means (what `ToolEnv` writes at the end of an episode), for `agentgym play`'s
# summary and the viewer, which show it beside each value.
BREAKDOWN_TERMS = {
    "answer": "the verifier's score of what the task asked for; success is this score alone (>= the threshold)",
    "format": "share of turns whose action parsed as a tool call (1 - format errors / turns)",
    "schema": "share of tool calls naming a real tool with valid arguments (0 when the episode only submitted)",
    "execution": "share of tool calls that ran without error (0 when the episode only submitted)",
    "submitted": "1 when the episode ended by calling the submit tool",
    "process": "mean of the process/* signals below",
}
BREAKDOWN_PREFIXES = {
    "process/": "a per-call process signal of the domain, clipped to [0, 1] and averaged over the episode's calls",
    "verifier/": "a component the verifier reported beside its score (reported, not added to the reward)",
}


def explain_term(term: str) -> str | None:
    """A one-line meaning of a reward-breakdown term, or None for a term no table above describes."""
    if term in BREAKDOWN_TERMS:
        return BREAKDOWN_TERMS[term]
    return next((meaning for prefix, meaning in BREAKDOWN_PREFIXES.items() if term.startswith(prefix)), None)


SHAPING_COMPONENTS = ("format", "schema", "execution", "answer", "process")


@dataclass(frozen=True)
class Score:
    """A verifier's verdict: `value` in [0, 1], named sub-scores, and a short human-readable reason."""

    value: float
    components: dict[str, float] = field(default_factory=dict)
    message: str = ""

    def __post_init__(self) -> None:
        if not (isinstance(self.value, (int, float)) and math.isfinite(self.value)):
            raise ValueError(f"a score must be a finite number, got {self.value!r}")
        object.__setattr__(self, "value", min(1.0, max(0.0, float(self.value))))


VerifierFunction = Callable[..., "Score | float | bool"]
_VERIFIERS: dict[str, VerifierFunction] = {}


def verifier(name: str) -> Callable[[VerifierFunction], VerifierFunction]:
    """Register `function(task, submission, state, **params) -> Score | float | bool` under `name`."""

    def register(function: VerifierFunction) -> VerifierFunction:
        _VERIFIERS[name] = function
        return function

    return register


def available_verifiers() -> list[str]:
    return sorted(_VERIFIERS)


def verify(task: Task, submission: Any, state: Any = None) -> Score:
    """Score `submission` for `task` with the task's named verifier."""
    try:
        function = _VERIFIERS[task.verifier.name]
    except KeyError:
        raise KeyError(
            f"task {task.id!r} names verifier {task.verifier.name!r}, which is not registered; "
            f"known: {', '.join(available_verifiers())}. Import the domain package that defines it."
        ) from None
    result = function(task, submission, state, **task.verifier.params)
    if isinstance(result, Score):
        return result
    return Score(float(result))


# The one way to read an answer lives in `agentgym.answers`; these two names stay importable from here.
normalize_text = answers.normalize_text
to_number = answers.parse_number


_PURE_NUMBER = re.compile(r"\s*[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\s*")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@verifier("exact")
def exact(task: Task, submission: Any, state: Any, *, normalize: bool = True) -> Score:
    """Equal to the gold answer.

    A numeric gold (or a gold text that is just a number) compares by value within a relative 1e-9
    (`answers.numbers_match`), and the submission must hold exactly one number; a list gold compares item by
    item in order (`answers.lists_match`); text compares with `answers.normalize_text` (case, Unicode form,
    spaces and surrounding punctuation ignored), or exactly when `normalize` is false.
    """
    gold = task.answer
    if _is_number(gold) or (isinstance(gold, str) and _PURE_NUMBER.fullmatch(gold)):
        ok = answers.numbers_match(submission, gold, rel_tol=1e-9)
        return Score(float(ok), message="" if ok else "not the expected number")
    if isinstance(gold, (list, tuple)):
        ok = answers.lists_match(submission, gold, ordered=True)
        return Score(float(ok), message="" if ok else "not the expected list")
    if type(submission) is type(gold) and submission == gold:
        return Score(1.0)
    if normalize and submission is not None and normalize_text(submission) == normalize_text(gold):
        return Score(1.0)
    return Score(0.0, message="answer differs from the expected one")


@verifier("numeric")
def numeric(task: Task, submission: Any, state: Any, *, tolerance: float | None = None,
            relative: bool | None = None) -> Score:
    """The one number in the submission is within tolerance of the gold.

    Default: relative tolerance 1e-6 of the gold (`answers.numbers_match`), so a small gold is never matched by
    0. `tolerance` with `relative=True` is a relative tolerance; `tolerance` alone is an absolute one, used
    exactly as the task author wrote it. A submission holding two different numbers ("3 or 4") scores 0.
    """
    if answers.parse_number(task.answer) is None:
        return Score(0.0, message="the task's gold answer is not a number")
    if answers.parse_number(submission) is None:
        return Score(0.0, message="no single number in the submission")
    if tolerance is None:
        ok = answers.numbers_match(submission, task.answer)
    elif relative:
        ok = answers.numbers_match(submission, task.answer, rel_tol=tolerance)
    else:
        ok = answers.numbers_match(submission, task.answer, rel_tol=0.0, abs_tol=tolerance)
    return Score(float(ok), message="" if ok else "not within tolerance of the expected number")


def _multiset_overlap(got: list[str], gold: list[str]) -> int:
    return sum((Counter(got) & Counter(gold)).values())


@verifier("set")
def set_equal(task: Task, submission: Any, state: Any, *, normalize: bool = True) -> Score:
    """The same items as the gold in any order (`answers.lists_match`): listing an extra candidate or missing
    one scores 0. The breakdown reports precision and recall (training signal only, never success).

    With `normalize` false, items compare exactly as written (only surrounding spaces are ignored).
    """
    if normalize:
        got, gold = answers.parse_list(submission), answers.parse_list(task.answer)
        ok = answers.lists_match(submission, task.answer)
    else:
        got = [str(item).strip() for item in _as_collection(submission) if str(item).strip()]
        gold = [str(item).strip() for item in _as_collection(task.answer) if str(item).strip()]
        ok = Counter(got) == Counter(gold)
    if not got and not gold:
        return Score(1.0, {"precision": 1.0, "recall": 1.0})
    overlap = _multiset_overlap(got, gold)
    precision = overlap / len(got) if got else 0.0
    recall = overlap / len(gold) if gold else 0.0
    return Score(float(ok), {"precision": precision, "recall": recall},
                 message="" if ok else "not the expected items")


def _as_collection(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (list, tuple, set, frozenset)):
        return list(value)
    if isinstance(value, str):
        return [part for part in re.split(r"\s*[,;\n]\s*", value.strip()) if part]
    return [value]


def contains_limit(gold: str) -> int:
    """The longest submission (normalised characters) `contains` accepts for a normalised `gold`."""
    return max(3 * len(gold), len(gold) + 40)


@verifier("contains")
def contains(task: Task, submission: Any, state: Any) -> Score:
    """The submission is one short answer that names the gold.

    Compared with `answers.normalize_text`, the gold must appear as a whole word or phrase ("K" does not match
    "kidney"); the submission may be at most `contains_limit(gold)` characters (3x the gold, or the gold plus
    40, whichever is longer); and read as a list (`answers.parse_list`) it may hold no more items than the gold
    does. So "replace K+ now" names "K+", while a submission that pastes several candidates scores 0.
    """
    gold = normalize_text(task.answer) if task.answer is not None else ""
    text = normalize_text(submission) if submission is not None else ""
    if not gold or not text:
        return Score(0.0, message="empty answer")
    if len(text) > contains_limit(gold):
        return Score(0.0, message="the answer is too long: give one short answer")
    if len(answers.parse_list(submission)) > max(1, len(answers.parse_list(task.answer))):
        return Score(0.0, message="the answer lists several candidates: give one")
    pattern = (r"(?<!\w)" if gold[0].isalnum() else "") + re.escape(gold) + (r"(?!\w)" if gold[-1].isalnum() else "")
    ok = re.search(pattern, text) is not None
    return Score(float(ok), message="" if ok else "the answer does not name the expected one")


@verifier("yes_no")
def yes_no(task: Task, submission: Any, state: Any) -> Score:
    """A yes/no answer read with `answers.parse_yes_no`: booleans, "yes"/"no"/"true"/"false"/"y"/"n" and short
    sentences with one clear yes or no. An ambiguous answer ("yes or no", "yes/no", "maybe") scores 0."""
    got, gold = answers.parse_yes_no(submission), answers.parse_yes_no(task.answer)
    ok = got is not None and got == gold
    return Score(float(ok), message="" if ok else "not the expected yes/no answer")


# A shaped reward never reaches the value of solving: all shaping together is capped at this share of the
# answer's weight, so the worst-shaped correct answer still beats the best-shaped wrong one.
SHAPING_CAP = 0.5


def shaping_bonus(components: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """The weighted shaping of one submitted episode, in [0, SHAPING_CAP * answer weight].

    Each component is clipped to [0, 1] before weighting (a component missing from `components` counts 0);
    the weighted sum is then clipped to [0, SHAPING_CAP * answer weight]. Negative weights act as penalties on
    the shaping only; they never take anything from the answer's part.
    """
    answer_weight = _answer_weight(weights)
    total = 0.0
    for name, weight in weights.items():
        if name in ("answer", "submitted"):
            continue
        value = components.get(name, 0.0)
        value = float(value) if isinstance(value, (int, float)) and math.isfinite(value) else 0.0
        total += float(weight) * min(1.0, max(0.0, value))
    return min(SHAPING_CAP * answer_weight, max(0.0, total))


def _answer_weight(weights: Mapping[str, float]) -> float:
    answer_weight = float(weights.get("answer", 1.0))
    if not (math.isfinite(answer_weight) and answer_weight > 0):
        raise ValueError(f"the 'answer' reward weight must be a positive number, got {weights.get('answer')!r}")
    return answer_weight


def check_weights(weights: Mapping[str, float] | None) -> dict[str, float]:
    """`weights` as a plain dict, after checking every weight is a finite number and the answer's is positive.

    Raises ValueError with what is wrong (an unknown key, with the close known one), so a typo in a config fails
    at `gym.make`, not at the first reward.
    """
    checked: dict[str, float] = {}
    for name, weight in dict(weights or {}).items():
        if str(name) not in SHAPING_COMPONENTS and not str(name).startswith("process/"):
            import difflib

            close = difflib.get_close_matches(str(name), SHAPING_COMPONENTS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"unknown reward weight {name!r}{hint}; known: {', '.join(SHAPING_COMPONENTS)} and "
                             "process/<name>")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight):
            raise ValueError(f"reward weight {name!r} must be a finite number, got {weight!r}")
        checked[str(name)] = float(weight)
    if checked:
        _answer_weight(checked)
    return checked


def combine(score: float, components: Mapping[str, float], weights: Mapping[str, float] | None, *,
            submitted: bool | None = None) -> float:
    """The episode reward from the verifier's `score` in [0, 1] and the shaping `components`.

    Without weights the reward is the verifier's score. With weights, an episode that was not submitted
    (truncated or abandoned) earns 0 whatever the weights, and a submitted one earns
    `score * answer_weight + bonus`, where `bonus` is `shaping_bonus(components, weights)` further capped at
    `SHAPING_CAP * (1 - score) * answer_weight` when the score is below 1. So any episode that is not a success
    earns at most `(1 + score) / 2 * answer_weight`, strictly less than a correct answer (score 1) with the
    worst shaping: no amount of shaping, and no partial credit plus shaping, outscores solving the task.
    Shaping never changes success, which is the verifier's score alone.

    `submitted` defaults to `components["submitted"]` (as the env's breakdown reports it), else True.
    """
    if submitted is None:
        submitted = float(components.get("submitted", 1.0)) >= 1.0
    if not weights:
        return float(score) if submitted else 0.0
    if not submitted:
        return 0.0
    answer_weight = _answer_weight(weights)
    bonus = shaping_bonus(components, weights)
    if score < 1.0:
        bonus = min(bonus, SHAPING_CAP * (1.0 - float(score)) * answer_weight)
    return float(score) * answer_weight + bonus
