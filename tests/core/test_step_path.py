"""The fast step path gives what the general one gives.

`Tool.invoke` passes plainly typed arguments on without pydantic, `parse_action` reads a single structured
call directly, the tool-call JSON comes from one shared encoder, and `info` is built from a per-episode head.
These tests hold each shortcut to the result of the general path, and check that an info handed out earlier
does not change when the episode goes on.
"""

from __future__ import annotations

import json
import random
from typing import Annotated, Any

import pydantic

from agentgym import Task, ToolEnv, tool
from agentgym.actions import _calls_from_json, arguments_json, parse_action
from agentgym.tools import ToolOutcome


@tool
def mixed(text: str, count: int = 3, ratio: float = 0.5, flag: bool = False, anything: Any = None,
          maybe: str | None = None) -> dict[str, Any]:
    """Echo the validated arguments with their types.

    Args:
        text: Some text.
        count: A count.
        ratio: A ratio.
        flag: A flag.
        anything: Any value.
        maybe: Optional text.
    """
    values = {"text": text, "count": count, "ratio": ratio, "flag": flag, "anything": anything, "maybe": maybe}
    return {key: [repr(value), type(value).__name__] for key, value in values.items()}


@tool
def constrained(text: Annotated[str, pydantic.Field(max_length=3)], items: list[int] | None = None) -> str:
    """A tool whose fields are not plain (a length limit, a list): always validated by pydantic.

    Args:
        text: At most three characters.
        items: Whole numbers.
    """
    return f"{text}:{items}"


def pydantic_outcome(target: Any, arguments: Any) -> ToolOutcome:
    """What invoke gives when every call goes through pydantic (the fast path switched off)."""
    saved = target._plain
    target._plain = None
    try:
        return target.invoke(None, arguments)
    finally:
        target._plain = saved


VALUES: list[Any] = ["", "x", "\ud800 lone surrogate", "7", 0, 1, -5, 10**40, True, False, 0.0, 2.5, float("nan"),
                     float("inf"), None, [1, "a"], {"k": 1}, (1, 2), b"bytes", 1 + 2j]


def test_plain_arguments_give_what_pydantic_gives() -> None:
    """Random argument dicts (right and wrong types, missing, extra and non-text keys): same outcome both ways."""
    rng = random.Random(15)
    keys = ["text", "count", "ratio", "flag", "anything", "maybe", "other", 3]
    for _ in range(3000):
        arguments = {rng.choice(keys): rng.choice(VALUES) for _ in range(rng.randint(0, 5))}
        for target in (mixed, constrained):
            fast, slow = target.invoke(None, arguments), pydantic_outcome(target, arguments)
            assert (fast.ok, fast.error_kind) == (slow.ok, slow.error_kind), arguments
            # NaN != NaN, so compare the rendered text (which names every value's repr and type).
            assert fast.text == slow.text, arguments


def test_plain_values_are_passed_unchanged_and_defaults_filled() -> None:
    shared = [1, 2]
    outcome = mixed.invoke(None, {"text": "hi", "anything": shared, "maybe": None})
    assert outcome.ok
    assert outcome.value["count"] == ["3", "int"] and outcome.value["ratio"] == ["0.5", "float"]
    assert outcome.value["anything"] == ["[1, 2]", "list"]
    # A value of another type than the annotation goes through pydantic, which converts or refuses it.
    assert mixed.invoke(None, {"text": "hi", "count": 2.0}).value["count"] == ["2", "int"]
    refused = mixed.invoke(None, {"text": "hi", "count": "many"})
    assert not refused.ok and refused.error_kind == "arguments" and "count" in refused.text
    missing = mixed.invoke(None, {"count": 1})
    assert not missing.ok and "missing required argument 'text'" in missing.text
    extra = mixed.invoke(None, {"text": "a", "colour": "red"})
    assert not extra.ok and "unexpected argument 'colour'" in extra.text
    assert not constrained.invoke(None, {"text": "four"}).ok


def test_single_structured_call_parses_as_the_general_path_does() -> None:
    actions: list[Any] = [
        {"name": "t", "arguments": {"a": 1}}, {"name": "t", "arguments": {"a": 1}, "id": "c9"},
        {"name": "t", "arguments": {"a": 1}, "id": 5}, {"name": "t", "parameters": {"b": 2}},
        {"name": "t"}, {"name": "t", "arguments": None}, {"name": "t", "arguments": '{"a": 2}'},
        {"name": "t", "arguments": "not json"}, {"name": "", "arguments": {}}, {"name": 3, "arguments": {}},
        {"function": {"name": "t", "arguments": "{}"}, "id": "x"}, {"name": "t", "function": "odd"},
        {"tool_calls": [{"name": "t", "arguments": {}}]}, {"name": "t", "tool_calls": "odd"},
        {"name": "t", "arguments": {"a": 1}, "parameters": {"b": 2}},
    ]
    for action in actions:
        general = _calls_from_json(action)
        parsed = parse_action(action)
        if isinstance(general, str):
            assert parsed.error == f"Error: {general}" and parsed.calls == [], action
        else:
            assert parsed.error is None and parsed.calls == general and parsed.text == "", action


def test_arguments_json_matches_json_dumps_and_never_raises() -> None:
    for arguments in ({"sql": "SELECT 'é'"}, {"n": 1.5, "x": [None, True]}, {}, {"s": "\ud800"}, "text", None):
        assert arguments_json(arguments) == json.dumps(arguments, ensure_ascii=False)
    looped: dict[str, Any] = {}
    looped["self"] = looped
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]

    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("no")

        __repr__ = __str__

    for odd in ({"value": {1, 2}}, looped, deep, {(1, 2): "tuple key"}, {"x": Unprintable()}, Unprintable()):
        text = arguments_json(odd)
        assert isinstance(text, str)
        json.loads(text)  # always valid JSON


@tool
def echo(value: Any = None) -> str:
    """Echo a value.

    Args:
        value: Anything.
    """
    return f"got {value!r}"[:200]


def make_env() -> ToolEnv:
    tasks = [Task(id=f"t{i}", domain="test", family="f", prompt=f"task {i}", answer=i,
                  solution=[{"name": "submit", "arguments": {"answer": i}}]) for i in range(3)]
    return ToolEnv(tasks=tasks, tools=[echo], max_turns=50)


def test_structured_action_json_cannot_hold_is_an_observation_not_a_crash() -> None:
    env = make_env()
    env.reset(seed=0)
    looped: dict[str, Any] = {}
    looped["again"] = looped
    for arguments in ({"value": {1, 2}}, {"value": looped}, {"value": object()}):
        observation, _, terminated, _, info = env.step({"name": "echo", "arguments": arguments})
        assert observation.startswith("got ") and not terminated
        recorded = info["messages"][-2]["tool_calls"][0]["function"]["arguments"]
        json.loads(recorded)


def test_info_handed_out_earlier_keeps_its_step() -> None:
    env = make_env()
    _, first = env.reset(seed=0)
    _, _, _, _, second = env.step({"name": "echo", "arguments": {"value": 1}})
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert len(second["messages"]) == 4 and second["turn"] == 1
    # Changing a returned info (its lists and dicts) leaves the env and later infos as they were.
    second["messages"].append({"role": "user", "content": "injected"})
    second["reward_breakdown"]["answer"] = 1.0
    second["task_id"] = "other"
    _, _, terminated, _, third = env.step({"name": "submit", "arguments": {"answer": 0}})
    assert terminated and len(third["messages"]) == 6 and third["messages"][4]["role"] == "assistant"
    assert third["task_id"] == first["task_id"] and third["reward_breakdown"]["answer"] == 0.0
    assert len(second["messages"]) == 5  # the earlier info did not grow with the episode
    assert list(third) == ["task_id", "family", "split", "difficulty", "turn", "tools", "messages",
                           "reward_breakdown", "diagnosis"]  # a finished episode carries its diagnosis
    _, fourth = env.reset(options={"task_id": "t2"})
    assert fourth["task_id"] == "t2" and fourth["reward_breakdown"] == {} and fourth["turn"] == 0


class SignalEnv(ToolEnv):
    """Reports a fixed sequence of raw signal values, one per call."""

    raw: list[Any] = []  # noqa: RUF012

    def process_signals(self, call: Any, outcome: ToolOutcome, state: Any) -> dict[str, float]:
        return {"s": self.raw[self._calls - 1]} if call.name == "echo" else {}


def test_process_signals_are_clipped_whatever_their_type() -> None:
    raw = [0.5, 1.0, 0.0, -0.0, 2.0, -1.0, float("nan"), float("inf"), True, 1, 3, "high", None, 0.25]
    clipped = [0.5, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.25]
    tasks = [Task(id="t", domain="test", family="f", prompt="p", answer=0, solution=[])]
    env = SignalEnv(tasks=tasks, tools=[echo], max_turns=50)
    env.raw = raw
    env.reset(seed=0)
    for _ in raw:
        env.step({"name": "echo", "arguments": {"value": 1}})
    _, _, terminated, _, info = env.step({"name": "submit", "arguments": {"answer": 0}})
    assert terminated
    assert info["reward_breakdown"]["process/s"] == sum(clipped) / len(clipped)
    assert all(type(value) is float for value in env._process["s"])
    assert [str(value) for value in env._process["s"]] == [str(value) for value in clipped]  # no -0.0
