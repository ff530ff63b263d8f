"""Built-in verifiers and reward composition."""

from __future__ import annotations

import pytest

from agentgym import Score, Task, verifier
from agentgym.rewards import combine, verify


def task(answer: object, name: str = "exact", **params: object) -> Task:
    return Task(id="t", domain="d", family="f", prompt="p", answer=answer,
                verifier={"name": name, "params": params})


@pytest.mark.parametrize("gold, submission, expected", [
    (7, 7, 1.0), (7, "7", 1.0), (7, "7.0 patients", 1.0), (7, 8, 0.0), (7, None, 0.0), (7, "seven", 0.0),
    ("Aspirin", " aspirin. ", 1.0), ("Aspirin", "ibuprofen", 0.0),
])
def test_exact(gold: object, submission: object, expected: float) -> None:
    assert verify(task(gold), submission).value == expected


def test_numeric_tolerance_absolute_and_relative() -> None:
    assert verify(task(100.0, "numeric", tolerance=0.5), "100.4 mg").value == 1.0
    assert verify(task(100.0, "numeric", tolerance=0.5), 100.6).value == 0.0
    assert verify(task(100.0, "numeric", tolerance=0.01, relative=True), 100.9).value == 1.0


def test_set_with_partial_credit_components() -> None:
    score = verify(task(["a", "b", "c"], "set"), "b, a, d")
    assert score.value == 0.0
    assert score.components == {"precision": pytest.approx(2 / 3), "recall": pytest.approx(2 / 3)}
    assert verify(task(["a", "b"], "set"), ["B", "a"]).value == 1.0


def test_yes_no_and_contains() -> None:
    assert verify(task("yes", "yes_no"), True).value == 1.0
    assert verify(task("no", "yes_no"), "Yes").value == 0.0
    assert verify(task("no", "yes_no"), "maybe").value == 0.0
    assert verify(task("K+", "contains"), "replace k+ now").value == 1.0


def test_custom_verifier_and_unknown_verifier() -> None:
    @verifier("length-at-least")
    def long_enough(task: Task, submission: object, state: object, *, minimum: int) -> float:
        return float(len(str(submission)) >= minimum)

    assert verify(task(None, "length-at-least", minimum=3), "abcd").value == 1.0
    with pytest.raises(KeyError, match="not registered"):
        verify(task(1, "nope"), 1)


def test_scores_are_clamped_and_must_be_finite() -> None:
    assert Score(1.7).value == 1.0
    with pytest.raises(ValueError):
        Score(float("nan"))


def test_combine_defaults_to_verifier_score() -> None:
    assert combine(0.5, {"format": 1.0}, None) == 0.5
    assert combine(1.0, {"format": 0.5, "schema": 1.0}, {"format": 0.2, "schema": 0.1}) == pytest.approx(1.2)
