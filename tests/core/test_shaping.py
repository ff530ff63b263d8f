"""Shaping cannot beat solving: shaping is paid only to submitted episodes, bounded below the value of a
correct answer, and never counted as success (in trajectories, summaries, pass@k or exports)."""

from __future__ import annotations

import itertools

import pytest
from zoo import ZooEnv

from agentgym.metrics import record_success, summarize
from agentgym.rewards import SHAPING_CAP, combine, shaping_bonus
from agentgym.rollout import episode_success, run_episode

ALL_SHAPING = {"format": 1.0, "schema": 1.0, "execution": 1.0, "process": 1.0}


class ScriptedAgent:
    """Sends a fixed list of actions, then repeats the last one."""

    privileged = False
    name = "scripted"

    def __init__(self, actions: list[object]) -> None:
        self.actions = actions
        self.position = 0

    def reset(self, task: object = None, *, seed: int | None = None) -> None:
        self.position = 0

    def act(self, messages: list[dict[str, object]], tools: list[dict[str, object]]) -> object:
        action = self.actions[min(self.position, len(self.actions) - 1)]
        self.position += 1
        return action

    def close(self) -> None:
        pass


class SignalZoo(ZooEnv):
    """A zoo whose every call earns the best process signal, so shaping is as high as it can be."""

    def process_signals(self, call: object, outcome: object, state: object) -> dict[str, float]:
        return {"useful": 1.0}


COUNT = {"name": "count_animals", "arguments": {"kind": "lion"}}


def submit(answer: object) -> dict[str, object]:
    return {"name": "submit", "arguments": {"answer": answer}}


def test_farming_calls_without_submitting_earns_nothing() -> None:
    env = SignalZoo(reward_weights=ALL_SHAPING, max_turns=30)
    trajectory = run_episode(env, ScriptedAgent([COUNT]), seed=0, task_id="zoo-0")  # type: ignore[arg-type]
    assert trajectory.truncated and not trajectory.terminated
    assert trajectory.reward == 0.0 and not trajectory.success
    assert trajectory.reward_breakdown["process"] == 1.0  # the signals were there; none of it was paid


def test_wrong_answer_with_perfect_shaping_earns_less_than_a_correct_one_with_none() -> None:
    for weights in (ALL_SHAPING, {"format": 100.0, "process": 50.0}, {"answer": 2.0, "schema": 9.0}):
        wrong = run_episode(SignalZoo(reward_weights=weights), ScriptedAgent([COUNT, COUNT, submit(999)]),  # type: ignore[arg-type]
                            seed=0, task_id="zoo-0")
        # the worst shaping a correct answer can get: format errors, a failing call, no process signal
        right = run_episode(ZooEnv(reward_weights=weights),
                            ScriptedAgent(["garbage", {"name": "explode", "arguments": {}}, submit(3)]),  # type: ignore[arg-type]
                            seed=0, task_id="zoo-0")
        answer_weight = weights.get("answer", 1.0)
        assert wrong.reward_breakdown["answer"] == 0.0 and right.reward_breakdown["answer"] == 1.0
        assert 0 < wrong.reward <= SHAPING_CAP * answer_weight
        assert right.reward >= answer_weight > wrong.reward
        assert not wrong.success and right.success


def test_the_bound_holds_for_any_weights_and_components() -> None:
    values = (0.0, 0.5, 1.0, 7.0, -3.0)
    for format_value, process_value in itertools.product(values, repeat=2):
        components = {"format": format_value, "process": process_value, "schema": 1.0}
        for weights in ({"format": 10.0, "process": 10.0, "schema": 10.0}, {"answer": 0.1, "format": 1.0},
                        {"format": -5.0, "schema": 1.0}):
            answer_weight = weights.get("answer", 1.0)
            bonus = shaping_bonus(components, weights)
            assert 0.0 <= bonus <= SHAPING_CAP * answer_weight
            best_wrong = combine(0.0, {**components, "submitted": 1.0}, weights)
            worst_right = combine(1.0, {"submitted": 1.0}, weights)
            assert best_wrong < worst_right
            assert combine(1.0, {**components, "submitted": 0.0}, weights) == 0.0


def test_repeating_a_cheap_call_does_not_raise_shaping() -> None:
    weights = {"execution": 1.0, "schema": 1.0, "format": 1.0, "process": 1.0}
    rewards = []
    for repeats in (1, 5, 15):
        env = SignalZoo(reward_weights=weights, max_turns=40)
        actions = [COUNT] * repeats + [submit(999)]
        rewards.append(run_episode(env, ScriptedAgent(actions), seed=0, task_id="zoo-0").reward)  # type: ignore[arg-type]
    assert rewards[0] == rewards[1] == rewards[2] <= SHAPING_CAP


def test_answer_weight_must_be_positive() -> None:
    with pytest.raises(ValueError, match="answer"):
        ZooEnv(reward_weights={"answer": 0.0, "format": 1.0})
    with pytest.raises(ValueError, match="finite"):
        ZooEnv(reward_weights={"format": float("nan")})


def test_success_is_the_verifier_score_not_the_shaped_reward() -> None:
    # A shaped reward of 1.2 on a wrong answer (answer weight 0.5 would not allow it, so build the record by
    # hand, as an old or foreign run file might hold it) is still a failure.
    farmed = {"env_id": "Zoo", "task_id": "t", "family": "f", "difficulty": "d", "sample": 0, "turns": 3,
              "reward": 1.2, "success": True, "terminated": True, "error": None,
              "reward_breakdown": {"answer": 0.0, "format": 1.0, "submitted": 1.0}}
    solved = {**farmed, "task_id": "u", "reward": 1.0, "success": True,
              "reward_breakdown": {"answer": 1.0, "submitted": 1.0}}
    unsubmitted = {**solved, "task_id": "v", "terminated": False}
    assert not record_success(farmed) and record_success(solved) and not record_success(unsubmitted)
    summary = summarize([farmed, solved, unsubmitted], [1], resamples=0)
    assert summary["success_rate"] == pytest.approx(1 / 3)
    assert summary["pass_at_k"]["1"] == pytest.approx(1 / 3)
    assert summary["by_family"]["f"]["success_rate"] == pytest.approx(1 / 3)
    assert record_success({**solved, "reward_breakdown": {"answer": 0.6}}, 0.5)
    assert episode_success({"answer": 1.0}, terminated=True)
    assert not episode_success({"answer": 1.0}, terminated=True, error="agent: context overflow")
    assert not episode_success({"answer": 0.0, "format": 1.0}, terminated=True, threshold=0.0 + 1e-9)


def test_partial_credit_plus_shaping_never_reaches_a_correct_answer() -> None:
    from agentgym.rewards import combine

    weights = {"answer": 1.0, "format": 1.0, "schema": 1.0, "execution": 1.0, "process": 1.0}
    perfect = {"format": 1.0, "schema": 1.0, "execution": 1.0, "process": 1.0, "submitted": 1.0}
    worst = {"format": 0.0, "schema": 0.0, "execution": 0.0, "process": 0.0, "submitted": 1.0}
    correct_worst = combine(1.0, worst, weights)
    for partial in (0.0, 0.5, 0.9, 0.99, 0.999999):
        assert combine(partial, perfect, weights) < correct_worst, partial


def test_a_blind_submit_earns_no_schema_or_execution_shaping() -> None:
    """Found by an external red-team pass: one `submit` call scored full schema and execution shaping."""
    import gymnasium as gym

    import agentgym  # noqa: F401

    env = gym.make("SQL-v0", reward_weights={"answer": 1.0, "schema": 1.0, "execution": 1.0})
    task = next(task for task in env.unwrapped.task_set if task.solution[-1].get("name") == "submit")
    env.reset(seed=0, options={"task_id": task.id})
    _, reward, terminated, _, info = env.step({"name": "submit", "arguments": {"sql": "SELECT 1"}})
    env.close()
    assert terminated
    assert info["reward_breakdown"]["schema"] == 0.0 and info["reward_breakdown"]["execution"] == 0.0
    assert reward == 0.0
