"""The grader never crashes and never guesses: whatever a plugin's verifier raises or returns, `step` returns, the
episode ends with reward 0 and the `grader_error` diagnosis (`infra_error` when the verifier blames the
infrastructure), and the env goes on to the next episode."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest

from agentgym import Score, Task, ToolEnv, verifier
from agentgym.errors import InfrastructureError


def _raise(error: BaseException) -> Any:
    raise error


# What a plugin's verifier may do wrong: (case id, what it does). Each is registered as its own verifier.
FAULTS: dict[str, Any] = {
    "raises-runtime": lambda: _raise(RuntimeError("the hidden test runner crashed")),
    "raises-json": lambda: json.loads("{not json"),
    "raises-zero-division": lambda: 1 / len([]),
    "raises-key": lambda: {}["outcome"],
    "raises-recursion": lambda: _raise(RecursionError("maximum recursion depth exceeded")),
    "returns-nan": lambda: float("nan"),
    "returns-inf": lambda: float("inf"),
    "returns-minus-inf": lambda: -math.inf,
    "returns-text": lambda: "all tests passed",
    "returns-none": lambda: None,
    "returns-dict": lambda: {"value": 1.0},
    "returns-list": lambda: [1.0],
    "nan-component": lambda: Score(1.0, {"precision": float("nan")}),
    "text-component": lambda: Score(1.0, {"recall": "high"}),
}

for _name, _fault in FAULTS.items():
    verifier(f"test-fault-{_name}")(lambda task, submission, state, _fault=_fault: _fault())


def _task(verifier_name: str, task_id: str = "faulty") -> Task:
    return Task(id=task_id, domain="faults", family="faulty", split="test", prompt="What is 2 + 2?", answer=4,
                verifier={"name": verifier_name}, solution=[{"name": "submit", "arguments": {"answer": 4}}])


def _env(verifier_name: str, **kwargs: Any) -> ToolEnv:
    return ToolEnv(tasks=[_task(verifier_name), _task("exact", "sound")], **kwargs)


def _assert_failed_episode(step: tuple[Any, ...], label: str, *, infrastructure: bool) -> dict[str, Any]:
    _observation, reward, terminated, truncated, info = step
    assert reward == 0.0 and math.isfinite(reward)
    assert terminated is True and truncated is False
    assert info["diagnosis"]["episode"] == label
    assert info["infra_error"] is infrastructure
    assert isinstance(info["grader_error"], str) and 0 < len(info["grader_error"]) <= 300
    assert info["reward_breakdown"]["answer"] == 0.0
    json.dumps(info, allow_nan=False)  # a trainer or eval can write it as it is
    return info


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_faulty_verifier_ends_the_episode_with_reward_zero(fault: str) -> None:
    # Shaping weights on: an episode nobody could judge is paid nothing, not the format/schema terms either.
    env = _env(f"test-fault-{fault}", reward_weights={"format": 0.2, "schema": 0.2})
    env.reset(options={"task_id": "faulty"})
    info = _assert_failed_episode(env.step({"name": "submit", "arguments": {"answer": 4}}), "grader_error",
                                  infrastructure=False)
    assert re.match(r"[A-Za-z]+Error: \S", info["grader_error"]), info["grader_error"]  # the error's type, then why
    # the env is still usable: the next episode is graded normally
    env.reset(options={"task_id": "sound"})
    _, reward, terminated, _, info = env.step({"name": "submit", "arguments": {"answer": 4}})
    assert reward >= 1.0 and terminated and info["diagnosis"]["episode"] == "solved"  # 1 plus the shaping terms
    assert "grader_error" not in info and "infra_error" not in info
    env.close()


def test_the_reason_names_the_error_and_is_cut() -> None:
    verifier("test-fault-long-message")(lambda task, submission, state: _raise(ValueError("x" * 5000)))
    env = _env("test-fault-long-message")
    env.reset(options={"task_id": "faulty"})
    info = _assert_failed_episode(env.step({"name": "submit", "arguments": {"answer": 4}}), "grader_error",
                                  infrastructure=False)
    assert info["grader_error"].startswith("ValueError: xxx") and info["grader_error"].endswith("...")


class LostBackendEnv(ToolEnv):
    """A domain env whose grader loses its backend (a database connection, a sandbox that died under it)."""

    def verify(self, task: Task, submission: Any, state: Any) -> Score:
        raise InfrastructureError("the grading database connection was lost")


def test_an_infrastructure_failure_is_flagged_apart_from_an_ordinary_zero() -> None:
    env = LostBackendEnv(tasks=[_task("exact")])
    env.reset()
    info = _assert_failed_episode(env.step({"name": "submit", "arguments": {"answer": 4}}), "infra_error",
                                  infrastructure=True)
    assert info["grader_error"] == "InfrastructureError: the grading database connection was lost"
    env.close()


class BrokenDiagnosisEnv(ToolEnv):
    """A domain whose diagnosis code (part of the grading, run after the verifier) has a bug."""

    def diagnose_extra(self, turns: Any, score: Score) -> list[str]:
        raise AttributeError("'NoneType' object has no attribute 'rows'")


def test_a_failing_domain_diagnosis_is_a_grader_error_too() -> None:
    env = BrokenDiagnosisEnv(tasks=[_task("exact")])
    env.reset()
    _assert_failed_episode(env.step({"name": "submit", "arguments": {"answer": 4}}), "grader_error",
                           infrastructure=False)
    env.close()


def test_a_truncated_episode_is_not_graded_so_never_a_grader_error() -> None:
    env = _env("test-fault-raises-runtime", max_turns=1)
    env.reset(options={"task_id": "faulty"})
    _, reward, terminated, truncated, info = env.step("no tool call here")
    assert (reward, terminated, truncated) == (0.0, False, True)
    assert info["diagnosis"]["episode"] != "grader_error" and "grader_error" not in info
    env.close()


def test_a_tool_losing_its_backend_ends_the_episode_as_an_infra_error() -> None:
    from agentgym import tool

    @tool
    def lookup(key: str) -> str:
        """Look a key up in the backend.

        Args:
            key: The key.
        """
        raise InfrastructureError("the database connection was lost")

    env = ToolEnv(tasks=[_task("exact")], tools=[lookup], reward_weights={"format": 0.5})
    env.reset()
    observation, reward, terminated, truncated, info = env.step({"name": "lookup", "arguments": {"key": "a"}})
    assert (reward, terminated, truncated) == (0.0, False, True)
    assert "not because of your actions" in observation and "database" not in observation
    assert info["diagnosis"]["episode"] == "infra_error" and info["infra_error"] is True
    assert info["grader_error"] == "InfrastructureError: the database connection was lost"
    json.dumps(info, allow_nan=False)
    with pytest.raises(RuntimeError, match="call reset"):
        env.step({"name": "submit", "arguments": {"answer": 4}})
    env.close()
