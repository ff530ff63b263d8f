"""How CLI-v0 compares answers: numbers with a tolerance relative to the gold, ordered outputs in order, one
line with commas as one line, and list answers as exactly the gold's set, however a model spells the list (a JSON
array, a JSON-encoded array, lines, one line of comma-separated paths); a hedge or an extra candidate scores 0."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agentgym_cli.importers import output_is_ordered
from agentgym_cli.verify import score_answer

from agentgym import Task


def test_number_answers_use_a_tolerance_relative_to_the_gold() -> None:
    assert score_answer("number", "42", 42)[0]
    assert score_answer("number", "42 files", 42)[0]
    assert score_answer("number", 1234.0000001, "1,234")[0]
    assert not score_answer("number", 0, 0.0000004)[0]  # no absolute floor that accepts 0 for a small gold
    assert not score_answer("number", "41 or 42", 42)[0]  # two numbers: ambiguous


def test_an_ordered_output_must_come_in_order() -> None:
    gold = "b 3\na 2\nc 1\n"
    assert score_answer("output", "b 3\na  2\nc 1", gold)[0]
    assert not score_answer("output", "a 2\nb 3\nc 1", gold)[0]  # sorted is not the same output
    assert score_answer("output", "a 2\nb 3\nc 1", gold, ordered=False)[0]  # find-like output: any order


def test_a_line_with_commas_is_one_line_of_output() -> None:
    assert not score_answer("output", "x\ny", "x,y")[0]
    assert not score_answer("output", "x,y", "x\ny")[0]
    assert score_answer("output", "x,y", "x,y\n")[0]


def test_a_list_answer_is_exactly_the_gold_set() -> None:
    gold = ["logs/a.log", "logs/b.log"]
    assert score_answer("lines", ["./logs/b.log", "logs/a.log"], gold)[0]
    assert score_answer("lines", "logs/b.log\nlogs/a.log\n", gold)[0]
    assert score_answer("lines", "a.log,b.log", ["a.log", "b.log"])[0]  # a list kind reads a comma list
    every_file = [*gold, "logs/c.log", "README.md", "data/sales.csv"]
    ok, parts = score_answer("lines", every_file, gold)
    assert not ok and parts["answer"] == 0.0 and 0 < parts["answer_f1"] < 1
    assert not score_answer("lines", ["logs/a.log"], gold)[0]


def test_imported_outputs_are_ordered_unless_the_file_system_decides_the_order() -> None:
    assert output_is_ordered("sort -k2 data.txt | head -3")
    assert not output_is_ordered("find . -name '*.log'")
    assert output_is_ordered("find . -name '*.log' | sort")


SPACED = ["docs/meeting notes.txt", "my file.md", "reports/Q1 summary.csv"]


@pytest.mark.parametrize("spelling", [
    SPACED, list(reversed(SPACED)), json.dumps(SPACED), json.dumps(json.dumps(SPACED)),
    "\n".join(SPACED), "\n".join(f"./{path}" for path in SPACED), ", ".join(SPACED), "; ".join(SPACED),
    "\n".join(f"- {path}" for path in SPACED), "\n".join(f"'{path}'" for path in SPACED),
    ",".join(SPACED), "docs/meeting notes.txt, my file.md, and reports/Q1 summary.csv",
])
def test_every_spelling_of_a_list_of_paths_scores(spelling: Any) -> None:
    assert score_answer("lines", spelling, SPACED)[0], spelling


@pytest.mark.parametrize("hedge", [
    [*SPACED, "docs/other.txt"], SPACED[:2], ", ".join(SPACED[:2]), " or ".join(SPACED), json.dumps(SPACED[:2]),
    "docs/meeting notes.txt my file.md reports/Q1 summary.csv", "[" + ", ".join(SPACED),
    [path.upper() for path in SPACED],
])
def test_a_list_with_a_missing_or_extra_candidate_scores_zero(hedge: Any) -> None:
    assert not score_answer("lines", hedge, SPACED)[0], hedge


def test_a_comma_in_a_gold_path_turns_comma_splitting_off() -> None:
    gold = ["data/a, b.txt"]
    assert score_answer("lines", "data/a, b.txt", gold)[0]
    assert score_answer("lines", ["data/a, b.txt"], gold)[0]
    assert not score_answer("lines", "data/a, b.txt, data/c.txt", gold)[0]
    assert score_answer("lines", "data/a, b.txt\ndata/c.txt", [*gold, "data/c.txt"])[0]


def test_an_output_keeps_its_bullets_and_brackets() -> None:
    assert not score_answer("output", "a\nb", "- a\n- b")[0]
    assert not score_answer("output", "a\nb", '["a", "b"]')[0]
    assert score_answer("output", '["a", "b"]', '["a", "b"]\n')[0]


def _lines_task(small_tasks: list[Task]) -> Task:
    return next(task for task in small_tasks if task.verifier.params.get("answer_kind") == "lines"
                and len(task.answer) >= 2)


def _play(env: Any, task: Task, answer: Any) -> tuple[float, dict[str, Any]]:
    _, info = env.reset(options={"task_id": task.id})
    _, reward, terminated, _, info = env.step({"name": "submit", "arguments": {"answer": answer}})
    assert terminated
    return float(reward), info


def test_list_answers_score_in_every_spelling_through_the_env(make_cli_env: Any, small_tasks: list[Task]) -> None:
    task = _lines_task(small_tasks)
    gold: list[str] = list(task.answer)
    env = make_cli_env()
    # The case: the same list as a JSON array, as lines, as a JSON-encoded string, as one comma line.
    for spelling in [gold, "\n".join(gold), json.dumps(gold), ", ".join(gold), list(reversed(gold))]:
        assert _play(env, task, spelling)[0] == 1.0, spelling
    # The same list sent as a text action (the action parser keeps the array as it is).
    env.reset(options={"task_id": task.id})
    action = json.dumps({"name": "submit", "arguments": {"answer": gold}})
    assert env.step(f"<tool_call>{action}</tool_call>")[1] == 1.0
    for hedge in [gold[:-1], [*gold, "README.md"], " or ".join(gold), json.dumps(gold[:-1])]:
        assert _play(env, task, hedge)[0] == 0.0, hedge


def test_the_prompt_and_the_submit_schema_state_the_answer_shape(make_cli_env: Any, small_tasks: list[Task]) -> None:
    env = make_cli_env()
    task = _lines_task(small_tasks)
    prompt, info = env.reset(options={"task_id": task.id})
    assert "JSON array of strings" in prompt and "any order" in prompt
    schemas = {schema["function"]["name"]: schema["function"] for schema in info["tools"]}
    assert schemas["submit"]["parameters"]["properties"]["answer"]["type"] == "array"
    assert schemas["submit"]["parameters"]["properties"]["answer"]["items"] == {"type": "string"}
    # The schema holds for the whole episode, and follows the task at the next reset.
    _, _, _, _, step_info = env.step({"name": "list_dir", "arguments": {"path": "."}})
    assert step_info["tools"] == info["tools"]
    number_task = next(t for t in small_tasks if t.verifier.params.get("answer_kind") == "number")
    prompt, info = env.reset(options={"task_id": number_task.id})
    schemas = {schema["function"]["name"]: schema["function"] for schema in info["tools"]}
    assert schemas["submit"]["parameters"]["properties"]["answer"]["type"] == "number"
    assert "Submit just the number" in prompt
    assert _play(env, number_task, str(number_task.answer))[0] == 1.0  # a number sent as text still reads
    assert _play(env, number_task, f"{number_task.answer} or {number_task.answer + 1}")[0] == 0.0
