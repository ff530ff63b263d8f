"""feedback="none" | "hints" | "adaptive" on a real ToolEnv (the zoo): each generic hint kind, the levels, the
per-family statistics, and "none" leaving observations exactly as they were."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest
from zoo import ZooEnv

import agentgym  # noqa: F401  (registers SQL-v0 for the gym.make error test)
from agentgym.feedback import HINT_PREFIX, FeedbackStats

UNKNOWN_TOOL = {"name": "count_animal", "arguments": {"kind": "lion"}}
BAD_ARGUMENTS = {"name": "count_animals", "arguments": {"legs": 4}}
LION = {"name": "count_animals", "arguments": {"kind": "lion"}}


def _play(env: ZooEnv, actions: list[Any], task_id: str = "zoo-0") -> list[str]:
    env.reset(seed=0, options={"task_id": task_id})
    observations = []
    for action in actions:
        observation, _, terminated, truncated, _ = env.step(action)
        observations.append(observation)
        if terminated or truncated:
            break
    return observations


def test_a_bad_feedback_value_is_one_error_that_lists_the_choices() -> None:
    with pytest.raises(ValueError, match=r"feedback must be one of 'none', 'hints', 'adaptive', got 'loud'"):
        ZooEnv(feedback="loud")
    with pytest.raises(ValueError, match=r"feedback must be one of 'none', 'hints', 'adaptive', got 'hint'"):
        gym.make("SQL-v0", feedback="hint")
    with pytest.raises(ValueError, match="feedback_stats is read only with feedback='adaptive'"):
        ZooEnv(feedback="hints", feedback_stats=FeedbackStats())


def test_none_leaves_every_observation_as_it_was() -> None:
    actions = [UNKNOWN_TOOL, BAD_ARGUMENTS, LION, LION, "hello", "hello", {"name": "submit", "arguments": {"answer": 4}}]
    default = _play(ZooEnv(), actions)
    none = _play(ZooEnv(feedback="none"), actions)
    assert none == default
    assert default[0] == ("Error: unknown tool 'count_animal'; available: count_animals, feed, explode, big_output, "
                          "submit.")
    assert default[2] == default[3] == "3"
    assert not any("Hint:" in observation for observation in default)
    hinted = _play(ZooEnv(feedback="hints"), actions)
    # hints only ever append: each observation starts with what "none" shows
    assert all(with_hint.startswith(plain) for with_hint, plain in zip(hinted, default, strict=True))
    assert hinted != default
    assert ZooEnv().feedback_state() == {"mode": "none", "family": "", "level": 0}


def test_unknown_tool_gets_the_closest_tool_name_and_its_arguments() -> None:
    (observation,) = _play(ZooEnv(feedback="hints"), [UNKNOWN_TOOL])
    hint = observation.split(HINT_PREFIX, 1)[1]
    assert hint.startswith("Did you mean the tool 'count_animals'?")
    assert "kind (string, required)" in hint
    (far,) = _play(ZooEnv(feedback="hints"), [{"name": "fly_to_the_moon", "arguments": {}}])
    assert "Call one of the available tools by its exact name." in far


def test_bad_arguments_get_the_expected_schema() -> None:
    (observation,) = _play(ZooEnv(feedback="hints"), [BAD_ARGUMENTS])
    hint = observation.split(HINT_PREFIX, 1)[1]
    assert hint.startswith("'count_animals' expects kind (string, required).")
    assert 'Example: {"name": "count_animals", "arguments": {"kind": "..."}}' in hint


def test_a_repeated_identical_call_is_named_and_a_new_call_is_not() -> None:
    first, second, other = _play(ZooEnv(feedback="hints"), [LION, LION, {"name": "count_animals",
                                                                        "arguments": {"kind": "zebra"}}])
    assert first == "3"
    assert second == "3" + HINT_PREFIX + ("You already made this call; its result was the same. Change the "
                                          "arguments, try another tool, or submit what you have found.")
    assert other == "7"


def test_a_no_progress_streak_gets_a_nudge_every_three_turns() -> None:
    env = ZooEnv(feedback="hints", max_turns=10)
    observations = _play(env, [LION] + ["hello"] * 6)
    nudged = [index for index, text in enumerate(observations) if "turns in a row brought nothing new" in text]
    assert nudged == [3, 6]
    assert "3 turns in a row" in observations[3] and "6 turns in a row" in observations[6]
    # the conversation the model trains on shows the same text
    assert env.unwrapped._messages[-1]["content"] == observations[-1]


def test_a_working_call_gets_no_hint_and_hints_are_deterministic() -> None:
    actions = [UNKNOWN_TOOL, {"name": "count_animals", "arguments": {"kind": "unicorn"}}, LION]
    first = _play(ZooEnv(feedback="hints"), actions)
    assert first == _play(ZooEnv(feedback="hints"), actions)
    assert first[2] == "3"


def _finish(env: ZooEnv, task_id: str, *, solve: bool) -> None:
    env.reset(seed=0, options={"task_id": task_id})
    if solve:
        task = env.unwrapped.task_set.get(task_id)
        env.step(task.solution[0])
        env.step(task.solution[1])
    else:
        for _ in range(env.max_turns):
            _, _, terminated, truncated, _ = env.step(UNKNOWN_TOOL)
            if terminated or truncated:
                break


def test_adaptive_raises_the_level_of_a_failing_family_and_lowers_a_solved_one() -> None:
    env = ZooEnv(feedback="adaptive", max_turns=2)
    assert env.feedback_state()["level"] == 1  # before any episode: the start level
    for _ in range(3):
        _finish(env, "zoo-0", solve=False)   # family "count": tool-use failures
        _finish(env, "zoo-1", solve=True)    # family "count-twice": solved
    families = env.feedback_state()["families"]
    assert families["count"]["level"] == 2 and families["count"]["tool_failure_share"] == 1.0
    assert families["count-twice"]["level"] == 0 and families["count-twice"]["solved_share"] == 1.0
    assert families["count"]["episodes"] == 3
    # level 0: no hints at all; level 2: the full hint
    quiet = _play(env, [UNKNOWN_TOOL], task_id="zoo-1")[0]
    assert HINT_PREFIX not in quiet
    loud = _play(env, [UNKNOWN_TOOL], task_id="zoo-0")[0]
    assert "Did you mean the tool 'count_animals'? count_animals takes kind" in loud


def test_level_one_shows_the_short_hint_only() -> None:
    env = ZooEnv(feedback="adaptive", feedback_stats=FeedbackStats(start_level=1))
    (observation,) = _play(env, [UNKNOWN_TOOL])
    assert observation.endswith(HINT_PREFIX + "Did you mean the tool 'count_animals'?")
    assert env.feedback_state()["level"] == 1


def test_an_episodes_level_is_fixed_when_it_starts() -> None:
    stats = FeedbackStats(min_episodes=1)
    env = ZooEnv(feedback="adaptive", feedback_stats=stats, max_turns=3)
    env.reset(seed=0, options={"task_id": "zoo-0"})
    before = env.feedback_state()["level"]
    env.step(UNKNOWN_TOOL)
    env.step(UNKNOWN_TOOL)
    assert env.feedback_state()["level"] == before
    env.step(UNKNOWN_TOOL)  # truncated: the episode is counted once it is over
    assert stats.snapshot()["count"]["episodes"] == 1


def test_shared_stats_see_every_env_and_survive_a_save() -> None:
    stats = FeedbackStats(min_episodes=2)
    first = ZooEnv(feedback="adaptive", feedback_stats=stats)
    second = ZooEnv(feedback="adaptive", feedback_stats=stats)
    _finish(first, "zoo-1", solve=True)
    _finish(second, "zoo-3", solve=True)
    assert stats.snapshot()["count-twice"]["episodes"] == 2
    assert first.feedback_state()["families"] == second.feedback_state()["families"]
    restored = FeedbackStats.from_state_dict(stats.state_dict())
    assert restored.snapshot() == stats.snapshot()
    assert restored.level("count-twice") == stats.level("count-twice") == 0


def test_bad_statistics_settings_are_refused_with_the_valid_range() -> None:
    with pytest.raises(ValueError, match="start_level in"):
        FeedbackStats(start_level=3)
    with pytest.raises(ValueError, match=r"shares in \(0, 1\]"):
        FeedbackStats(lower_at=0.0)


@pytest.mark.parametrize("env_id", ["SQL-v0", "FHIR-v0", "ClinicalQA-v0"])
def test_garbage_actions_never_raise_with_hints_on(env_id: str) -> None:
    from test_fuzz import fuzz

    env = gym.make(env_id, feedback="hints", max_turns=4)
    try:
        fuzz(env, 60)
    finally:
        env.close()


def test_hostile_shapes_never_raise_with_hints_on() -> None:
    env = ZooEnv(feedback="hints", max_turns=50)
    deep: Any = "x"
    for _ in range(10_000):
        deep = [deep]
    env.reset(seed=0)
    for action in ({"name": "count_animals", "arguments": deep}, {"name": "\ud800" * 40, "arguments": {}},
                   {"name": "count_animals", "arguments": {"kind": "\ud800"}}, [UNKNOWN_TOOL] * 3, "x" * 1_000_000,
                   {"name": "count_animals", "arguments": [1, 2]}):
        observation, *_ = env.step(action)
        assert isinstance(observation, str)


def test_hints_change_no_reward_breakdown_or_diagnosis() -> None:
    actions = [UNKNOWN_TOOL, BAD_ARGUMENTS, LION, LION, "hello", {"name": "submit", "arguments": {"answer": 3}}]
    finals = []
    for mode in ("none", "hints", "adaptive"):
        env = ZooEnv(feedback=mode)
        env.reset(seed=0, options={"task_id": "zoo-0"})
        for action in actions:
            _, reward, terminated, _, info = env.step(action)
        assert terminated
        finals.append((reward, {key: value for key, value in info.items() if key != "messages"}))
    assert finals[0] == finals[1] == finals[2]
    assert finals[0][0] == 1.0
