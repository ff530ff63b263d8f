"""`agentgym play` for a person, driven through the click command with typed input (the zoo env of zoo.py)."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from click.testing import CliRunner
from zoo import ZooEnv

import agentgym
from agentgym.cli import main
from agentgym.play import LocalMistake, ToolSpec, _enable_line_editing, explain_key, parse_line

agentgym.register(id="PlayZoo-v0", entry_point=ZooEnv)


def play(*lines: str, turns: int = 3, task_id: str = "zoo-0") -> Any:
    arguments = ["play", "PlayZoo-v0", "--task-id", task_id, "--env-arg", f"max_turns={turns}"]
    return CliRunner().invoke(main, arguments, input="".join(line + "\n" for line in lines))


def test_mistakes_are_answered_locally_and_cost_no_turn() -> None:
    result = play("", "count_animls lion", "what now?", ":help", ":tools", "feed", ":nope",
                  "count_animals lion", "submit 3", "n")
    assert result.exit_code == 0, result.output
    output = result.output
    assert "did you mean 'count_animals'?" in output
    assert "Error: no tool call found" in output and "feed needs kind: feed kind=... [kilograms=...]" in output
    assert output.count("(no turn used)") == 4  # a typo, prose, a missing argument, :nope; an empty line re-asks
    assert "NAME VALUE" in output  # :help
    assert "count_animals" in output and "[kilograms]" in output  # :tools as a table
    # Local mistakes and commands later the two real calls are still turns 1 and 2 of 3.
    assert "turn 1/3> " in output and "turn 2/3> " in output and "turn 3/3> " not in output
    assert "episode over reward=1.000 terminated=True" in output and "solved" in output


def test_the_end_shows_gold_answer_solution_and_each_breakdown_term_explained() -> None:
    result = play("count_animals kind=lion", "submit answer=2", "n")
    assert result.exit_code == 0, result.output
    output = result.output
    assert "not solved" in output and "episode over reward=0.000" in output
    gold = output.split("gold answer:")[1]
    assert gold.split()[0] == "3"
    assert "count_animals kind=lion" in gold and "submit answer=3" in gold
    for term in ("answer", "format", "schema", "execution", "submitted"):
        assert explain_key(term) in output


def test_the_gold_answer_is_never_shown_before_the_episode_ends() -> None:
    result = play("count_animals zebra", ":tools", ":help", ":quit")
    assert result.exit_code == 0, result.output
    assert "gold answer" not in result.output and "solution:" not in result.output
    assert "submit answer=3" not in result.output


def test_truncation_then_the_next_task_is_offered_and_played() -> None:
    result = play("count_animals zebra", "count_animals zebra", "y", "count_animals giraffe", ":quit", turns=2)
    assert result.exit_code == 0, result.output
    output = result.output
    assert "truncated=True" in output and "play the next task?" in output
    assert output.count("task zoo-") == 2 and output.count("turn 1/2> ") == 2


def test_positional_argument_keeps_json_types_and_shell_text() -> None:
    tools = {"submit": ToolSpec("submit", "", {"answer": {}}, ["answer"]),
             "run_shell": ToolSpec("run_shell", "", {"command": {}}, ["command"]),
             "feed": ToolSpec("feed", "", {"kind": {}, "kilograms": {}}, ["kind"])}
    assert parse_line("submit 3", tools) == {"name": "submit", "arguments": {"answer": 3}}
    assert parse_line("run_shell ls -la /tmp", tools) == {"name": "run_shell",
                                                          "arguments": {"command": "ls -la /tmp"}}
    assert parse_line("run_shell command='ls -la'", tools)["arguments"] == {"command": "ls -la"}
    assert parse_line("feed 'big cat'", tools)["arguments"] == {"kind": "big cat"}
    sql = {"submit": ToolSpec("submit", "", {"sql": {"type": "string"}}, ["sql"])}
    assert parse_line("submit 1", sql)["arguments"] == {"sql": "1"}  # a string parameter keeps the text
    assert parse_line("submit sql=1", sql)["arguments"] == {"sql": "1"}
    with pytest.raises(LocalMistake, match="unknown tool 'sbumit'"):
        parse_line('{"name": "sbumit", "arguments": {"answer": 1}}', tools)
    raw = '{"name": "submit", "arguments": {"answer": 1}}'
    assert parse_line(raw, tools) == raw  # JSON goes to the env as typed


def test_an_unknown_task_id_is_one_clear_line() -> None:
    result = CliRunner().invoke(main, ["play", "PlayZoo-v0", "--task-id", "zoo-9"])
    assert result.exit_code == 2
    assert "has no task 'zoo-9'" in result.output and "Traceback" not in result.output


def test_line_editing_is_turned_on_at_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("readline", reason="this Python was built without readline")

    # pytest's stdin is not a terminal, and a real one cannot be opened here: a stand-in that says it is.
    class Terminal:
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Terminal())
    monkeypatch.delitem(sys.modules, "readline", raising=False)
    _enable_line_editing()
    assert "readline" in sys.modules


def test_an_unclosed_quote_costs_no_turn_and_sends_nothing() -> None:
    result = play("count_animals kind='lion", "count_animals 'lion", "count_animals kind=lion", "submit answer=3", "n")
    assert result.exit_code == 0, result.output
    output = result.output
    assert output.count("an unclosed quote") == 2 and output.count("(no turn used)") == 2
    # The two slips never reached the env: the real calls are turns 1 and 2, and the episode is solved.
    assert "turn 1/3> " in output and "turn 2/3> " in output and "turn 3/3> " not in output
    assert "episode over reward=1.000" in output
    tools = {"execute_sql": ToolSpec("execute_sql", "", {"sql": {"type": "string"}}, ["sql"]),
             "search": ToolSpec("search", "", {"query": {"type": "string"}}, ["query"])}
    with pytest.raises(LocalMistake, match="an unclosed quote"):
        parse_line("execute_sql sql='SELECT 1", tools)
    # An apostrophe inside a one-argument tool's free text is the text itself.
    assert parse_line("search Crohn's disease", tools)["arguments"] == {"query": "Crohn's disease"}


def test_a_list_typed_as_key_value_is_what_a_model_would_send() -> None:
    # A model's JSON call carries a list as a JSON array, so `answer=["a", "b"]` sends an array (for a parameter
    # that is not text); a JSON-encoded string is sent by typing the call as JSON, as :help says.
    tools = {"submit": ToolSpec("submit", "", {"answer": {}}, ["answer"]),
             "note": ToolSpec("note", "", {"text": {"type": "string"}}, ["text"])}
    assert parse_line('submit answer=\'["a b", "c"]\'', tools)["arguments"] == {"answer": ["a b", "c"]}
    assert parse_line("note text=[1,2]", tools)["arguments"] == {"text": "[1,2]"}
    raw = '{"name": "submit", "arguments": {"answer": "[1, 2]"}}'
    assert parse_line(raw, tools) == raw
    result = play(":help", ":quit")
    assert 'JSON when it reads as JSON (3, true, ["a", "b"] is a list)' in result.output


def test_json_values_are_typed_as_a_model_would_send_them() -> None:
    """Playtest finding: `submit ["a","b"]` and `answer=["a","b"]` lost their quotes to shell-style splitting and
    sent the text "[a,b]"; a key=value whose value is JSON with spaces fell back to the one-argument form."""
    tools = {"submit": ToolSpec("submit", "", {"answer": {}}, ["answer"]),
             "fhir_search": ToolSpec("fhir_search", "", {"resource_type": {"type": "string"}, "params": {}},
                                     ["resource_type"])}
    assert parse_line('submit ["a","b"]', tools)["arguments"] == {"answer": ["a", "b"]}
    assert parse_line('submit answer=["a","b"]', tools)["arguments"] == {"answer": ["a", "b"]}
    assert parse_line('submit ["a b", "c"]', tools)["arguments"] == {"answer": ["a b", "c"]}
    assert parse_line('fhir_search resource_type=Observation params={"patient": "x", "code": "4548-4"}',
                      tools)["arguments"] == {"resource_type": "Observation",
                                              "params": {"patient": "x", "code": "4548-4"}}
    assert parse_line("submit 105 mg/dL", tools)["arguments"] == {"answer": "105 mg/dL"}
    with pytest.raises(LocalMistake, match="unclosed quote or bracket"):
        parse_line('fhir_search resource_type=Observation params={"patient": "x"', tools)
