"""How CLI-v0 compares answers: numbers with a tolerance relative to the gold, ordered outputs in order, one
line with commas as one line, and list answers as exactly the gold's set."""

from __future__ import annotations

from agentgym_cli.importers import output_is_ordered
from agentgym_cli.verify import score_answer


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
