"""ClinicalQA-v0's diagnosis labels (docs/diagnosis.md, "ClinicalQA-v0"): each comes out of a real episode, and
none carries an option's text or letter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agentgym_clinical.diagnosis import LABELS
from agentgym_clinical.env import ClinicalQaEnv

from agentgym import Task, TaskSet

QUESTION = "Does drug X lower mortality?"
TASK = Task(id="ctx-1", domain="clinical", family="pubmedqa", split="test", prompt=QUESTION, answer="no",
            solution=[{"name": "search_knowledge", "arguments": {"query": "mortality"}},
                      {"name": "submit", "arguments": {"answer": "no"}}],
            verifier={"name": "clinical_choice"},
            metadata={"question": QUESTION, "options": ["yes", "no", "maybe"],
                      "contexts": ["Mortality did not differ between the groups.",
                                   "Patients were enrolled in three hospitals."]})


@pytest.fixture(scope="module")
def env() -> Any:
    made = ClinicalQaEnv(tasks=TaskSet([TASK]), kb="task")
    yield made
    made.close()


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def play(env: ClinicalQaEnv, actions: list[dict[str, Any]]) -> dict[str, Any]:
    env.reset(seed=0)
    for action in actions:
        *_, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return info["diagnosis"]
    raise AssertionError("the episode did not end")


def test_no_retrieval_before_a_wrong_answer(env: ClinicalQaEnv) -> None:
    found = play(env, [call("submit", answer="yes")])
    assert found["episode"] == "submitted_without_evidence" and found["domain"] == ["no_retrieval"]
    # A right answer without retrieval is not labelled: the labels explain failures.
    assert play(env, [call("submit", answer="no")])["domain"] == []


def test_empty_retrieval(env: ClinicalQaEnv) -> None:
    found = play(env, [call("search_knowledge", query="zebrafish telomeres"), call("submit", answer="yes")])
    assert found["domain"] == ["empty_retrieval"]
    found = play(env, [call("search_knowledge", query="mortality groups"), call("submit", answer="yes")])
    assert found["domain"] == []


def test_several_options_or_none(env: ClinicalQaEnv) -> None:
    found = play(env, [call("search_knowledge", query="mortality"), call("submit", answer="yes or maybe")])
    assert found["episode"] == "wrong_type" and found["domain"] == ["several_options"]
    found = play(env, [call("search_knowledge", query="mortality"), call("submit", answer="it depends")])
    assert found["episode"] == "wrong_type" and found["domain"] == ["no_option"]


def test_labels_are_documented_and_carry_no_gold(env: ClinicalQaEnv) -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "diagnosis.md").read_text(encoding="utf-8")
    for label in LABELS:
        assert f"`{label}`" in doc, label
    text = json.dumps(play(env, [call("submit", answer="yes")]))
    assert '"no"' not in text and "maybe" not in text
