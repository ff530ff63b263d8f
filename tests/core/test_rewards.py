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


# --- the verifiers read answers through agentgym.answers --------------------------------------------------

@pytest.mark.parametrize("gold, submission, expected", [
    (7, "\uff17", 1.0),                 # fullwidth digit
    (7, "7\u200b", 1.0),                # zero-width space
    (7, "7 or 8", 0.0),                 # two numbers: ambiguous
    (7, "7, 8, 9", 0.0),
    (7, True, 0.0),                     # a bool is not the number 1
    (1, True, 0.0),
    ("42", "42.0", 1.0),                # a numeric gold text compares by value
    ("Aspirin", "A\u200bspirin", 1.0),
    ("Aspirin", "Aspirin, ibuprofen", 0.0),
    (["a", "b"], "a, b", 1.0),          # a list gold compares in order
    (["a", "b"], "b, a", 0.0),
])
def test_exact_reads_answers_strictly(gold: object, submission: object, expected: float) -> None:
    assert verify(task(gold), submission).value == expected


def test_numeric_default_tolerance_is_relative_to_the_gold() -> None:
    small = task(0.004, "numeric")
    assert verify(small, "0.004").value == 1.0
    assert verify(small, 0).value == 0.0            # the old absolute 1e-6 floor let nothing like this through,
    assert verify(small, "0.0").value == 0.0        # but a relative rule must not either
    assert verify(task(1_000_000.0, "numeric"), 1_000_000.5).value == 1.0
    assert verify(task(1_000_000.0, "numeric"), 1_000_002).value == 0.0
    assert verify(task(5.0, "numeric", tolerance=0.5), "5.4 or 6").value == 0.0
    assert verify(task("not a number", "numeric"), 3).value == 0.0


def test_set_rejects_listing_every_candidate() -> None:
    gold = task(["aspirin", "metformin"], "set")
    assert verify(gold, "metformin\naspirin").value == 1.0
    assert verify(gold, '["Aspirin", "Metformin"]').value == 1.0
    everything = verify(gold, "aspirin, metformin, insulin, warfarin, lisinopril")
    assert everything.value == 0.0
    assert everything.components["recall"] == 1.0 and everything.components["precision"] == pytest.approx(0.4)
    assert verify(task([], "set"), "").value == 1.0
    assert verify(task([], "set"), "aspirin").value == 0.0


@pytest.mark.parametrize("submission, expected", [
    ("yes", 1.0), ("Yes.", 1.0), (True, 1.0), ("yes or no", 0.0), ("yes/no", 0.0), ("no", 0.0),
    ("maybe yes", 0.0), ("not true", 0.0), ("\uff59\uff45\uff53", 1.0),
])
def test_yes_no_ambiguous_scores_zero(submission: object, expected: float) -> None:
    assert verify(task("yes", "yes_no"), submission).value == expected


@pytest.mark.parametrize("submission, expected", [
    ("replace K+ now", 1.0),
    ("K+", 1.0),
    ("the patient needs k+.", 1.0),
    ("K+, Na+, Cl-, Mg2+, Ca2+", 0.0),                # pastes every candidate
    ("K+\nNa+", 0.0),
    ("x" * 60 + " K+", 0.0),                          # too long to be one answer
    ("", 0.0),
])
def test_contains_names_one_short_answer(submission: str, expected: float) -> None:
    assert verify(task("K+", "contains"), submission).value == expected


def test_contains_matches_whole_words() -> None:
    assert verify(task("lisinopril", "contains"), "Start lisinopril 10 mg").value == 1.0
    assert verify(task("K", "contains"), "kidney").value == 0.0
    assert verify(task("pril", "contains"), "lisinopril").value == 0.0


def test_normalize_text_and_to_number_stay_importable_from_rewards() -> None:
    from agentgym import answers
    from agentgym.rewards import normalize_text, to_number

    assert normalize_text is answers.normalize_text
    assert to_number("7.2 mmol/L") == 7.2
    assert to_number("3 or 4") is None
