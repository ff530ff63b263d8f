"""Failure diagnosis: every label of docs/diagnosis.md comes out of a real episode that produces it."""

from __future__ import annotations

import json
from typing import Any

from zoo import ZooEnv

from agentgym import Task
from agentgym.agents import OracleAgent
from agentgym.diagnosis import EPISODE_LABELS, TURN_LABELS, CallRecord, TurnRecord, diagnose
from agentgym.rollout import run_episode


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def play(actions: list[Any], *, task_id: str = "zoo-0", **env_kwargs: Any) -> tuple[list[dict[str, Any]], float]:
    """Play `actions` on the zoo env; return each step's info and the final reward."""
    env = ZooEnv(**env_kwargs)
    env.reset(options={"task_id": task_id})
    infos, reward = [], 0.0
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
        infos.append(info)
        if terminated or truncated:
            break
    env.close()
    return infos, reward


def diagnosis_of(actions: list[Any], **kwargs: Any) -> dict[str, Any]:
    infos, _ = play(actions, **kwargs)
    return infos[-1]["diagnosis"]


def test_solved_episode_labels_each_turn_and_leaves_the_reward_alone() -> None:
    infos, reward = play([call("count_animals", kind="lion"), call("submit", answer=3)])
    assert reward == 1.0 and infos[-1]["reward_breakdown"]["answer"] == 1.0
    assert "diagnosis" not in infos[0]  # only a finished episode carries one
    diagnosis = infos[-1]["diagnosis"]
    assert diagnosis["episode"] == "solved"
    assert diagnosis["turns"] == ["ok", "submitted"]
    assert diagnosis["counts"] == {"ok": 1, "submitted": 1}
    json.dumps(diagnosis)  # serialisable for summaries and served envs


def test_oracle_episode_is_solved() -> None:
    env = ZooEnv()
    assert run_episode(env, OracleAgent(), task_id="zoo-3").reward == 1.0
    solution = env.task_set.get("zoo-3").solution
    assert diagnosis_of(list(solution), task_id="zoo-3")["episode"] == "solved"


def test_wrong_answer_after_looking() -> None:
    diagnosis = diagnosis_of([call("count_animals", kind="lion"), call("submit", answer=4)])
    assert diagnosis["episode"] == "wrong_answer"
    assert diagnosis["turns"] == ["ok", "submitted"]


def test_submit_on_the_first_turn_without_a_tool_call() -> None:
    diagnosis = diagnosis_of([call("submit", answer=4)])
    assert diagnosis["episode"] == "submitted_without_evidence"
    # A blind submit that happens to be right is still solved: the label is about failures.
    assert diagnosis_of([call("submit", answer=3)])["episode"] == "solved"


def test_wrong_type_when_the_verifier_cannot_read_the_answer() -> None:
    task = Task(id="n-1", domain="zoo", family="count", split="train", prompt="How many lions?", answer=3,
                verifier={"name": "numeric"}, solution=[call("submit", answer=3)])
    actions = [call("count_animals", kind="lion"), call("submit", answer="a few lions")]
    assert diagnosis_of(actions, task_id="n-1", tasks=[task])["episode"] == "wrong_type"
    # A readable number that is wrong is a wrong answer, not a wrong type.
    actions = [call("count_animals", kind="lion"), call("submit", answer="4 lions")]
    assert diagnosis_of(actions, task_id="n-1", tasks=[task])["episode"] == "wrong_answer"


def test_format_errors_until_truncation() -> None:
    diagnosis = diagnosis_of(["hello", "<tool_call>{not json</tool_call>"], max_turns=2)
    assert diagnosis["turns"] == ["format_error", "format_error"]
    assert diagnosis["episode"] == "format_error" and diagnosis["truncated"] is True


def test_unknown_tool_and_bad_arguments_and_tool_error_per_turn() -> None:
    actions = [call("fly", to="moon"), call("count_animals", legs=4), call("explode"),
               call("count_animals", kind="unicorn")]
    diagnosis = diagnosis_of(actions, max_turns=4)
    assert diagnosis["turns"] == ["unknown_tool", "bad_arguments", "tool_error", "tool_error"]
    assert diagnosis["episode"] == "tool_error"  # the most frequent failure names an episode where nothing worked
    assert diagnosis_of([call("fly")] * 3, max_turns=3)["episode"] == "unknown_tool"


def test_repeated_identical_calls_end_in_no_progress() -> None:
    lion = call("count_animals", kind="lion")
    diagnosis = diagnosis_of([lion, lion, lion, lion], max_turns=4)
    assert diagnosis["turns"] == ["ok", "repeated_call", "repeated_call", "repeated_call"]
    assert diagnosis["episode"] == "no_progress"
    # The same tool with other arguments is new work.
    turns = diagnosis_of([lion, call("count_animals", kind="zebra")], max_turns=2)["turns"]
    assert turns == ["ok", "ok"]


def test_truncated_while_still_working() -> None:
    actions = [call("count_animals", kind="lion"), call("count_animals", kind="zebra"),
               call("count_animals", kind="giraffe")]
    diagnosis = diagnosis_of(actions, max_turns=3)
    assert diagnosis["episode"] == "truncated" and diagnosis["truncated"] is True


def test_a_working_call_beside_a_failing_one_is_progress() -> None:
    turns = diagnosis_of([[call("fly"), call("count_animals", kind="lion")]], max_turns=1)["turns"]
    assert turns == ["ok"]


def test_diagnosis_is_deterministic_and_carries_no_gold() -> None:
    actions = [call("fly"), call("count_animals", kind="lion"), call("submit", answer=4)]
    first, second = diagnosis_of(actions), diagnosis_of(actions)
    assert first == second
    text = json.dumps(first)
    assert "3" not in text and "expected" not in text


def test_every_label_is_documented() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "diagnosis.md").read_text(encoding="utf-8")
    for label in {*TURN_LABELS, *EPISODE_LABELS}:
        assert f"`{label}`" in doc, label


def test_diagnose_directly_and_domain_labels() -> None:
    turns = [TurnRecord(calls=[CallRecord("query", {"sql": "SELEC"}, "tool_error")]),
             TurnRecord(calls=[CallRecord("submit", {"answer": 1}, None, terminal=True)])]
    diagnosis = diagnose(turns, submitted=True, score=0.0, message="no single number", extra=["query_does_not_parse"])
    assert diagnosis["episode"] == "wrong_type"
    assert diagnosis["turns"] == ["tool_error", "submitted"]
    assert diagnosis["domain"] == ["query_does_not_parse"]
    assert diagnose([], submitted=False, score=0.0)["episode"] == "truncated"


def test_wrong_tool_for_the_question() -> None:
    """A task whose reference solution ends with `submit` answered with another terminal tool the env offers."""
    from zoo import count_animals, zoo_tasks

    from agentgym import ToolEnv, tool
    from agentgym.tools import submit

    @tool(terminal=True)
    def report_incident(summary: str) -> str:
        """File an incident report and end the shift.

        Args:
            summary: What happened.
        """
        return summary

    env = ToolEnv(zoo_tasks(), [count_animals, report_incident, submit])
    env.reset(options={"task_id": "zoo-0"})
    env.step(call("count_animals", kind="lion"))
    *_, terminated, _, info = env.step(call("report_incident", summary="the lions are fine"))
    assert terminated and info["reward_breakdown"]["answer"] == 0.0
    assert info["diagnosis"]["turns"] == ["ok", "wrong_tool"]
    assert info["diagnosis"]["episode"] == "wrong_tool"
    # The tool the task takes is not wrong, whatever the answer.
    env.reset(options={"task_id": "zoo-0"})
    env.step(call("count_animals", kind="lion"))
    *_, info = env.step(call("submit", answer=4))
    assert info["diagnosis"]["turns"] == ["ok", "submitted"] and info["diagnosis"]["episode"] == "wrong_answer"
    env.close()
