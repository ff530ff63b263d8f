"""Verifiers and reward composition.

A verifier turns a submission into a `Score` in [0, 1]. Tasks name their verifier (`Task.verifier.name`);
domains register theirs with `@verifier("name")`. The episode's reward is the verifier's score; shaping
components (format, schema, execution, answer, per-turn process signals) are reported in the breakdown and
only added when the user gives weights.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentgym.tasks import Task

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


def normalize_text(value: Any) -> str:
    """Case-, space- and punctuation-insensitive form of an answer, for lenient string comparison."""
    text = str(value).strip().lower()
    text = re.sub(r"\s+", " ", text)
    return text.strip(" .;:!\"'")


def to_number(value: Any) -> float | None:
    """A number from an int, float or text such as '7.2 mmol/L' or '1,234'; None if there is none."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, Mapping) and "value" in value:
        return to_number(value["value"])
    match = re.search(r"[-+]?\d[\d,]*\.?\d*(?:[eE][-+]?\d+)?|[-+]?\.\d+", str(value))
    if not match:
        return None
    try:
        return float(match.group(0).replace(",", ""))
    except ValueError:
        return None


@verifier("exact")
def exact(task: Task, submission: Any, state: Any, *, normalize: bool = True) -> Score:
    """Equal to the gold answer; numbers compare numerically, text case- and space-insensitively."""
    gold = task.answer
    if isinstance(gold, (int, float)) and not isinstance(gold, bool):
        number = to_number(submission)
        ok = number is not None and math.isclose(number, float(gold), rel_tol=1e-9, abs_tol=1e-9)
        return Score(float(ok), message="" if ok else f"expected {gold}")
    if submission == gold:
        return Score(1.0)
    if normalize and normalize_text(submission) == normalize_text(gold):
        return Score(1.0)
    return Score(0.0, message="answer differs from the expected one")


@verifier("numeric")
def numeric(task: Task, submission: Any, state: Any, *, tolerance: float = 1e-6, relative: bool = False) -> Score:
    """A number within `tolerance` of the gold (absolute, or relative when `relative`)."""
    number, gold = to_number(submission), to_number(task.answer)
    if number is None or gold is None:
        return Score(0.0, message="no number in the submission")
    allowed = tolerance * abs(gold) if relative else tolerance
    return Score(float(abs(number - gold) <= allowed + 1e-12))


def _as_collection(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (list, tuple, set, frozenset)):
        return list(value)
    if isinstance(value, str):
        return [part for part in re.split(r"\s*[,;\n]\s*", value.strip()) if part]
    return [value]


@verifier("set")
def set_equal(task: Task, submission: Any, state: Any, *, normalize: bool = True) -> Score:
    """Same items in any order; the breakdown reports precision and recall for partial credit."""
    norm = normalize_text if normalize else str
    got = {norm(item) for item in _as_collection(submission)}
    gold = {norm(item) for item in _as_collection(task.answer)}
    if not got and not gold:
        return Score(1.0, {"precision": 1.0, "recall": 1.0})
    overlap = len(got & gold)
    precision = overlap / len(got) if got else 0.0
    recall = overlap / len(gold) if gold else 0.0
    return Score(float(got == gold), {"precision": precision, "recall": recall})


@verifier("contains")
def contains(task: Task, submission: Any, state: Any) -> Score:
    """The submission's text contains the gold answer (case-insensitive)."""
    return Score(float(normalize_text(task.answer) in normalize_text(submission)))


_YES = {"yes", "y", "true", "1"}
_NO = {"no", "n", "false", "0"}


@verifier("yes_no")
def yes_no(task: Task, submission: Any, state: Any) -> Score:
    """A yes/no answer; booleans and 'yes'/'no'/'true'/'false' in any case are accepted."""

    def polarity(value: Any) -> bool | None:
        if isinstance(value, bool):
            return value
        text = normalize_text(value)
        return True if text in _YES else False if text in _NO else None

    got, gold = polarity(submission), polarity(task.answer)
    return Score(float(got is not None and got == gold))


def combine(score: float, components: Mapping[str, float], weights: Mapping[str, float] | None) -> float:
    """The episode reward: the verifier's score plus weighted shaping components (none by default)."""
    if not weights:
        return score
    extra = sum(weight * float(components.get(name, 0.0)) for name, weight in weights.items() if name != "answer")
    return score * float(weights.get("answer", 1.0)) + extra
