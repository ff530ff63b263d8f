"""ToolEnv: the episode contract of DESIGN.md, bad input, determinism, lifecycle."""

from __future__ import annotations

import json

import pytest
from gymnasium.utils.env_checker import check_env
from zoo import ZooEnv

from agentgym import Task, ToolEnv
from agentgym.agents import OracleAgent, RandomAgent
from agentgym.rollout import run_episode


def test_full_episode_with_three_text_formats() -> None:
    env = ZooEnv()
    prompt, info = env.reset(options={"task_id": "zoo-1"})
    assert prompt == "How many zebras are in the zoo?"
    assert info["task_id"] == "zoo-1" and info["family"] == "count-twice"
    assert [t["function"]["name"] for t in info["tools"]] == ["count_animals", "feed", "explode", "big_output",
                                                               "submit"]
    assert "answer" not in info and "solution" not in info and "7" not in json.dumps(info)
    observation, reward, terminated, truncated, info = env.step(
        'Let me count. <tool_call>{"name": "count_animals", "arguments": {"kind": "zebra"}}</tool_call>')
    assert (observation, reward, terminated, truncated) == ("7", 0.0, False, False)
    observation, *_ = env.step('{"name": "count_animals", "arguments": "{\\"kind\\": \\"lion\\"}"}')
    assert observation == "3"
    observation, reward, terminated, truncated, info = env.step({"name": "submit", "arguments": {"answer": "7"}})
    assert reward == 1.0 and terminated and not truncated
    assert info["reward_breakdown"]["answer"] == 1.0 and info["reward_breakdown"]["format"] == 1.0
    roles = [m["role"] for m in info["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant", "tool"]
    assert info["messages"][2]["tool_calls"][0]["function"]["name"] == "count_animals"


def test_several_calls_in_one_turn_run_in_order_and_submit_stops() -> None:
    env = ZooEnv()
    env.reset(options={"task_id": "zoo-0"})
    observation, reward, terminated, _, info = env.step([
        {"name": "feed", "arguments": {"kind": "lion"}},
        {"name": "count_animals", "arguments": {"kind": "lion"}},
        {"name": "submit", "arguments": {"answer": 3}},
        {"name": "feed", "arguments": {"kind": "lion", "kilograms": 9}},
    ])
    assert terminated and reward == 1.0
    assert observation.splitlines()[0] == "[feed] fed 1.0 kg to the lions"
    assert env.state is not None and env.state["fed"] == [("lion", 1.0)]  # the call after submit never ran


def test_max_turns_truncates_with_zero_reward() -> None:
    env = ZooEnv(max_turns=2)
    env.reset(seed=1)
    assert env.step("hello")[3] is False
    _, reward, terminated, truncated, info = env.step("still no tool")
    assert truncated and not terminated and reward == 0.0
    assert info["reward_breakdown"]["submitted"] == 0.0
    with pytest.raises(RuntimeError, match="reset"):
        env.step("after the end")


@pytest.mark.parametrize("action", [
    "", "x" * 1_000_000, "\ud800 lone surrogate", "[" * 10_000, "{" * 10_000 + "}" * 10_000,
    '{"name": "count_animals", "arguments": {"kind": ', {"name": "unknown_tool", "arguments": {}},
    {"name": "count_animals", "arguments": {}}, {"name": "count_animals", "arguments": {"kind": "cat"}},
    {"name": "count_animals", "arguments": {"kind": "lion", "extra": 1}},
    {"name": "count_animals", "arguments": {"kind": ["lion"]}}, {"name": "explode", "arguments": {}},
    [], [1, 2], 42, None, b"bytes", {"arguments": {}},
])
def test_bad_actions_become_error_observations(action: object) -> None:
    env = ZooEnv()
    env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step(action)
    assert "Error" in observation
    assert reward == 0.0 and not terminated and info["turn"] == 1
    json.dumps(info).encode("utf-8")  # info stays serialisable, even with surrogates in the action
    assert env.observation_space.contains(observation)
    # the env keeps working
    assert env.step({"name": "count_animals", "arguments": {"kind": "lion"}})[0] == "3"


def test_error_messages_tell_the_model_how_to_fix_the_call() -> None:
    env = ZooEnv()
    env.reset(seed=0)
    assert env.step({"name": "sql_exec"})[0] == (
        "Error: unknown tool 'sql_exec'; available: count_animals, feed, explode, big_output, submit.")
    assert "Example call: {\"name\": \"count_animals\"" in env.step({"name": "count_animals"})[0]
    assert "RuntimeError: boom" in env.step({"name": "explode"})[0]


def test_tool_output_is_capped_by_the_env() -> None:
    env = ZooEnv(output_limit=1000)
    env.reset(seed=0)
    observation = env.step({"name": "big_output", "arguments": {"size": 5000}})[0]
    assert len(observation) < 1100 and observation.endswith("[truncated 4000 chars]")


def test_gymnasium_check_env_passes() -> None:
    check_env(ZooEnv(), skip_render_check=True)


def test_same_seed_same_episode_and_info_has_no_timings() -> None:
    def play(seed: int) -> list:
        env = ZooEnv()
        observation, info = env.reset(seed=seed)
        steps = [(observation, info)]
        agent = RandomAgent(seed=seed)
        agent.reset(seed=seed)
        done = False
        while not done:
            result = env.step(agent.act(info["messages"], info["tools"]))
            info = result[4]
            steps.append(result)
            done = result[2] or result[3]
        return steps

    assert play(5) == play(5)
    assert play(5) != play(6)


def test_reset_options_select_tasks_and_splits() -> None:
    env = ZooEnv()
    assert env.reset(options={"index": 2})[1]["task_id"] == "zoo-2"
    assert {env.reset(seed=s, options={"split": "test"})[1]["split"] for s in range(10)} == {"test"}
    with pytest.raises(KeyError, match="no task with id"):
        env.reset(options={"task_id": "missing"})
    filtered = ZooEnv(split="test", families=["count"])
    assert [t.id for t in filtered.task_set] == ["zoo-4"]
    with pytest.raises(ValueError, match="splits: \\['test', 'train'\\]"):
        ZooEnv(split="validation")


def test_lifecycle_and_idempotent_close() -> None:
    env = ZooEnv()
    env.reset(options={"task_id": "zoo-0"})
    env.reset(options={"task_id": "zoo-1"})
    env.close()
    env.close()
    assert env.lifecycle == ["begin zoo-0", "end zoo-0", "begin zoo-1", "end zoo-1"]


def test_oracle_solves_and_random_fails() -> None:
    env = ZooEnv()
    oracle = [run_episode(env, OracleAgent(), seed=0, task_id=t.id).reward for t in env.task_set]
    assert oracle == [1.0] * len(env.task_set)
    random_rewards = [run_episode(env, RandomAgent(seed=s), seed=s).reward for s in range(20)]
    assert sum(random_rewards) <= 2


def test_reward_weights_add_shaping_only_when_configured() -> None:
    for weights, expected in ((None, 1.0), ({"format": 0.5}, 1.0 + 0.5 * 0.5)):
        env = ZooEnv(reward_weights=weights)
        env.reset(options={"task_id": "zoo-0"})
        env.step("no call here")
        reward = env.step({"name": "submit", "arguments": {"answer": 3}})[1]
        assert reward == pytest.approx(expected)


def test_code_blocks_are_parsed_only_when_code_is_enabled() -> None:
    class CodeZoo(ZooEnv):
        def execute_code(self, code: str, state: object) -> str:
            return f"ran {len(code)} chars"

    text = "```python\nprint(1)\n```"
    plain = ZooEnv()
    plain.reset(seed=0)
    assert plain.step(text)[0].startswith("Error: no tool call found")
    coded = CodeZoo(code=True)
    coded.reset(seed=0)
    assert coded.step(text)[0] == "ran 9 chars"
    assert "python code block" in coded.system_prompt


def test_default_submit_is_added_and_tasks_load_from_file(tmp_path) -> None:
    from agentgym import save_tasks

    path = tmp_path / "tasks.jsonl"
    save_tasks([Task(id="a", domain="d", family="f", prompt="Say hi", answer="hi")], path)
    env = ToolEnv(tasks=str(path), tools=[])
    env.reset(seed=0)
    assert env.step({"name": "submit", "arguments": {"answer": " HI "}})[1] == 1.0


def test_a_failed_call_is_flagged_in_info_and_a_tool_printing_error_is_not() -> None:
    """Failure is a flag (`info["call_error"]`), not a text prefix: a log line that starts with "Error:" is a
    successful call, and servers, the MCP bridge and trainers read the flag."""
    from agentgym import tool

    @tool
    def show_log(name: str) -> str:
        """Print a log file.

        Args:
            name: The log's name.
        """
        return "Error: disk full at 03:12 (an old log line)"

    env = ToolEnv([Task(id="t", domain="d", family="f", prompt="p", answer=1)], tools=[show_log])
    env.reset(seed=0)
    *_, info = env.step({"name": "show_log", "arguments": {"name": "app"}})
    assert "call_error" not in info
    *_, info = env.step({"name": "show_log", "arguments": {}})
    assert info["call_error"] == "arguments"
    *_, info = env.step({"name": "no_such_tool", "arguments": {}})
    assert info["call_error"] == "unknown_tool"
    *_, info = env.step("no tool call here")
    assert info["call_error"] == "format"
