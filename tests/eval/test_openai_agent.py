"""The OpenAI agent against a real HTTP server on a local port with scripted replies (no mock objects)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from chat_server import ChatServer, Reply, message_reply, tool_call_reply
from click.testing import CliRunner
from eval_toyenv import SECRET_ANSWER

from agentgym.agents import make_agent
from agentgym.cli import main
from agentgym.rollout import AgentUnavailable, run_episode

FAST = {"backoff": 0.01, "max_backoff": 0.02, "timeout": 2.0}


def _agent(server: ChatServer, **options: Any) -> Any:
    return make_agent("openai:scripted", base_url=server.url, **{**FAST, **options})


def _play(server: ChatServer, task_id: str = "toy-1", **options: Any) -> Any:
    env = gym.make("EvalToy-v0")
    try:
        return run_episode(env, _agent(server, **options), env_id="EvalToy-v0", seed=0, task_id=task_id)
    finally:
        env.close()


def test_native_tool_calls_solve_a_task_and_send_schemas_and_key(zoo_server: ChatServer) -> None:
    trajectory = _play(zoo_server, api_key="sk-local-test")
    assert trajectory.success and trajectory.turns == 2
    first = zoo_server.requests[0]
    assert first["path"] == "/v1/chat/completions"
    assert first["authorization"] == "Bearer sk-local-test"
    assert {tool["function"]["name"] for tool in first["body"]["tools"]} == {"count_animals", "keeper_code",
                                                                             "submit"}
    # the second request carries the tool result back with the matching call id
    assert first["body"]["messages"][-1]["role"] == "user"
    second = zoo_server.requests[1]["body"]["messages"]
    assert second[-2]["tool_calls"][0]["id"] == second[-1]["tool_call_id"]


def test_text_mode_describes_tools_in_the_prompt_and_parses_tags(zoo_server: ChatServer) -> None:
    trajectory = _play(zoo_server, tool_mode="text")
    assert trajectory.success
    body = zoo_server.requests[0]["body"]
    assert "tools" not in body and "count_animals" in body["messages"][0]["content"]
    assert "<tool_response>" in zoo_server.requests[1]["body"]["messages"][-1]["content"]


def test_500s_and_429_are_retried_then_the_episode_goes_on() -> None:
    failures = [Reply(500, {"error": "boom"}), Reply(503, "not json at all"),
                Reply(429, {"error": "slow down"}, headers={"retry-after": "0"})]

    def script(body: dict[str, Any], number: int) -> Reply:
        if number < len(failures):
            return failures[number]
        return tool_call_reply("count_animals", {"kind": "zebra"}) if number == 3 else \
            tool_call_reply("submit", {"answer": 7})

    with ChatServer(script) as server:
        trajectory = _play(server)
    assert trajectory.success and trajectory.error is None
    assert len(server.requests) == 5


def test_malformed_tool_calls_become_error_observations_the_model_reads() -> None:
    replies = [
        tool_call_reply("count_animals", '{"kind": "zeb'),                     # arguments cut short
        message_reply(None, [{"id": "x", "type": "function", "function": None}]),  # no function at all
        tool_call_reply("count_animals", {"kind": 7}),                        # wrong type
        tool_call_reply("no_such_tool", {}),
        tool_call_reply("submit", {"answer": 7}),
    ]
    with ChatServer(lambda body, number: replies[number]) as server:
        trajectory = _play(server, task_id="toy-1")
    assert trajectory.success and trajectory.turns == 5
    observations = [message["content"] for message in trajectory.messages if message["role"] in ("user", "tool")]
    assert any("not valid JSON" in text for text in observations)
    assert any("unknown tool 'no_such_tool'" in text for text in observations)
    assert trajectory.format_errors == 2 and trajectory.tool_errors == 2
    # the model was shown each error: the last request holds all of them
    sent = json.dumps(server.requests[-1]["body"]["messages"])
    assert "no_such_tool" in sent and "not valid JSON" in sent


def test_empty_choices_are_retried_and_a_server_that_only_sends_them_is_unavailable() -> None:
    empty = Reply(200, {"id": "x", "choices": []})
    replies = [empty, tool_call_reply("submit", {"answer": 7})]
    with ChatServer(lambda body, number: replies[min(number, 1)]) as server:
        assert _play(server).success
    with ChatServer(lambda body, number: empty) as server, pytest.raises(AgentUnavailable, match="no choices"):
        _play(server, max_retries=2)
    assert len(server.requests) == 3


def test_a_server_that_never_answers_times_out_and_is_retried() -> None:
    with ChatServer(lambda body, number: Reply(delay=5.0, body={})) as server:
        with pytest.raises(AgentUnavailable, match="no reply within 0.2 s"):
            _play(server, timeout=0.2, max_retries=1)
        assert len(server.requests) == 2


def test_a_bad_request_ends_the_episode_as_a_failure() -> None:
    with ChatServer(lambda body, number: Reply(400, {"error": "context length exceeded"})) as server:
        trajectory = _play(server)
    assert not trajectory.success and trajectory.truncated
    assert trajectory.error is not None and "context length exceeded" in trajectory.error


def test_a_model_looping_on_the_same_call_is_cut_off() -> None:
    with ChatServer(lambda body, number: tool_call_reply("count_animals", {"kind": "lion"})) as server:
        env = gym.make("EvalToy-v0", max_turns=8)
        looping = run_episode(env, _agent(server), seed=0, task_id="toy-1", max_repeats=3)
        assert looping.turns == 3 and looping.truncated and "same action 3 times" in (looping.error or "")
        unlimited = run_episode(env, _agent(server), seed=0, task_id="toy-1")
        env.close()
    assert unlimited.turns == 8 and unlimited.truncated and not unlimited.success


def test_eval_with_a_model_never_sends_the_answer_or_solution(zoo_server: ChatServer, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, [
        "eval", "EvalToy-v0", "--agent", "openai:scripted", "--base-url", zoo_server.url,
        "--api-key", "sk-never-stored", "--k", "2", "--workers", "3", "--out", str(tmp_path / "run"),
        "--no-progress", "--no-plots",
    ])
    assert result.exit_code == 0, result.output
    sent = json.dumps([request["body"] for request in zoo_server.requests])
    assert SECRET_ANSWER not in sent and '"solution"' not in sent
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    # every counting task solved; the secret-code task cannot be solved without the answer
    assert summary["by_family"]["count"]["success_rate"] == 1.0
    assert summary["by_family"]["code"]["success_rate"] == 0.0
    assert summary["run"]["backend"] == "thread"
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            assert b"sk-never-stored" not in path.read_bytes(), path


def test_eval_against_a_dead_server_keeps_nothing_and_says_so(tmp_path: Path) -> None:
    with ChatServer(lambda body, number: Reply(502, {"error": "bad gateway"})) as server:
        result = CliRunner().invoke(main, [
            "eval", "EvalToy-v0", "--agent", "openai:scripted", "--base-url", server.url, "--n", "2",
            "--agent-arg", "backoff=0.01", "--agent-arg", "max_retries=1", "--out", str(tmp_path / "run"),
            "--no-progress", "--no-plots",
        ])
    assert result.exit_code == 1
    assert "did not answer" in result.output and "HTTP 502" in result.output
    assert (tmp_path / "run" / "trajectories.jsonl").read_text() == ""
