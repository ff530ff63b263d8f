"""The one answer-reading module: every rule a verifier relies on, stated by example."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from agentgym.answers import (
    ANSWER_SCHEMAS,
    answer_schema,
    fold_unicode,
    lists_match,
    normalize_code,
    normalize_text,
    normalize_unit,
    numbers_match,
    parse_date,
    parse_list,
    parse_number,
    parse_yes_no,
    read_option,
    same_unit,
    split_items,
    split_quantity,
)

# --- text -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, expected", [
    ("  Aspirin. ", "aspirin"),
    ("ASPIRIN", "aspirin"),
    ("\u201cAspirin\u201d", "aspirin"),                 # curly quotes around
    ("Acetyl\u00a0salicylic   acid", "acetyl salicylic acid"),  # non-breaking space, runs of spaces
    ("Asp\u200birin", "aspirin"),                      # zero-width space removed
    ("\ufeffAspirin\u200d", "aspirin"),                # byte-order mark, zero-width joiner
    ("\uff21\uff53\uff50\uff49\uff52\uff49\uff4e", "aspirin"),  # fullwidth letters
    ("Stra\u00dfe", "strasse"),                        # casefold, not lower
    ("K+", "k+"),                                      # inner / non-sentence punctuation stays
    ("O'Brien's", "o'brien's"),
])
def test_normalize_text(raw: str, expected: str) -> None:
    assert normalize_text(raw) == expected


def test_normalize_text_keeps_different_answers_apart() -> None:
    assert normalize_text("(none)") != normalize_text("none")
    assert normalize_text("C#") != normalize_text("C")
    assert normalize_text("\u0430spirin") != normalize_text("aspirin")  # a Cyrillic 'a' is another letter


def test_fold_unicode_digits_minus_and_controls() -> None:
    assert fold_unicode("\uff11\uff12\uff13") == "123"
    assert fold_unicode("\u22123") == "-3"
    assert fold_unicode("a\x00b\tc\n") == "ab\tc\n"
    assert fold_unicode(7) == "7"


# --- numbers --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, expected", [
    (7, 7.0), (7.5, 7.5), ("7", 7.0), ("1,234", 1234.0), ("1,234.5 mL", 1234.5), ("7.2 mmol/L", 7.2),
    ("-3", -3.0), ("\u22123", -3.0), ("+4", 4.0), ("1e-3", 0.001), ("2.5E2", 250.0), (".5", 0.5),
    ("12%", 12.0), ("about 5 patients", 5.0), ("\uff17\uff0e\uff12", 7.2), ("7\u00a0mmol/L", 7.0),
    ("7 (7)", 7.0), ("CO2 is 24 mmol/L", 24.0), ("1.9 m\u00b2", 1.9), ({"value": 5.1, "unit": "mg"}, 5.1),
])
def test_parse_number_reads_the_one_number(raw: object, expected: float) -> None:
    assert parse_number(raw) == pytest.approx(expected)


@pytest.mark.parametrize("raw", [
    "two numbers 3 and 4", "3 or 4", "3-4", "3, 4", "2020-01-02", "1/2", "seven", "", None, True, False,
    float("nan"), float("inf"), "nan", [7], {"unit": "mg"}, "1,2345",
])
def test_parse_number_refuses_ambiguous_or_missing(raw: object) -> None:
    assert parse_number(raw) is None


def test_numbers_match_is_relative_to_the_gold() -> None:
    assert numbers_match("0.004", 0.004)
    assert numbers_match(0.0040000001, 0.004)
    # A small gold: zero is not "close enough" (there is no absolute floor).
    assert not numbers_match(0, 0.004)
    assert not numbers_match("0.0", 0.004)
    assert not numbers_match(0.0041, 0.004, rel_tol=0.01)
    assert numbers_match(1001, 1000, rel_tol=0.001)
    assert not numbers_match(1002, 1000, rel_tol=0.001)
    assert numbers_match("1,234", 1234)
    # Zero gold: only zero, unless the caller asks for an absolute tolerance.
    assert numbers_match(0, 0)
    assert not numbers_match(1e-9, 0)
    assert numbers_match(0.01, 0, abs_tol=0.05)
    # Not a number, or two of them.
    assert not numbers_match("3 or 4", 3)
    assert not numbers_match(None, 3)
    assert not numbers_match(True, 1)


# --- yes / no -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, expected", [
    (True, True), (False, False), (1, True), (0, False), ("yes", True), ("Yes.", True), ("YES", True),
    ("y", True), ("true", True), ("no", False), ("No", False), ("n", False), ("FALSE", False), ("0", False),
    ("\uff59\uff45\uff53", True), ("Yes, the patient takes it.", True), ("No, there is none", False),
])
def test_parse_yes_no_clear_answers(raw: object, expected: bool) -> None:
    assert parse_yes_no(raw) is expected


@pytest.mark.parametrize("raw", [
    "yes or no", "yes/no", "Yes / No", "no... yes", "yes no", "not true", "maybe yes", "probably no",
    "either", "unknown", "", None, 2, "yes, no", "Yes. No.", "[\"yes\", \"no\"]",
])
def test_parse_yes_no_ambiguous_is_none(raw: object) -> None:
    assert parse_yes_no(raw) is None


# --- lists ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, expected", [
    (["Aspirin", " metformin "], ["aspirin", "metformin"]),
    (("a", "b"), ["a", "b"]),
    ('["Aspirin", "Metformin"]', ["aspirin", "metformin"]),
    ("aspirin\nmetformin\n", ["aspirin", "metformin"]),
    ("- aspirin\n- metformin", ["aspirin", "metformin"]),
    ("1. aspirin\n2. metformin", ["aspirin", "metformin"]),
    ("aspirin, metformin", ["aspirin", "metformin"]),
    ("aspirin; metformin", ["aspirin", "metformin"]),
    ("aspirin, metformin and insulin", ["aspirin", "metformin and insulin"]),
    ("aspirin, metformin, and insulin", ["aspirin", "metformin", "insulin"]),
    ("Smith, John\nDoe, Jane", ["smith, john", "doe, jane"]),
    ("aspirin", ["aspirin"]),
    ("", []), (None, []), ("[]", []), (7, ["7"]), ("a,,b", ["a", "b"]),
])
def test_parse_list(raw: object, expected: list[str]) -> None:
    assert parse_list(raw) == expected


def test_lists_match_same_items_any_order() -> None:
    assert lists_match("Metformin, aspirin", ["aspirin", "metformin"])
    assert lists_match('["metformin", "ASPIRIN"]', ["aspirin", "metformin"])
    assert lists_match("aspirin\nmetformin", ("metformin", "aspirin"))
    assert lists_match([], [])
    assert lists_match("1.0, 2", [1, 2])


def test_lists_match_rejects_extra_candidates_and_missing_items() -> None:
    gold = ["aspirin", "metformin"]
    assert not lists_match("aspirin, metformin, insulin, warfarin", gold)  # lists every candidate
    assert not lists_match("aspirin", gold)
    assert not lists_match("aspirin, aspirin, metformin", gold)          # a multiset, not a set
    assert not lists_match("", gold)
    assert not lists_match("a", [])


def test_lists_match_ordered() -> None:
    assert lists_match("a, b, c", ["a", "b", "c"], ordered=True)
    assert not lists_match("b, a, c", ["a", "b", "c"], ordered=True)


# --- dates and codes ------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw", [
    "2021-03-04", "2021-03-04T10:00:00Z", "2021/3/4", "on 2021-03-04.", "4 March 2021", "March 4, 2021",
    "Mar 4 2021", "4th March 2021", "\uff12\uff10\uff12\uff11-03-04", dt.date(2021, 3, 4),
    dt.datetime(2021, 3, 4, 10, 0),
])
def test_parse_date(raw: object) -> None:
    assert parse_date(raw) == dt.date(2021, 3, 4)


@pytest.mark.parametrize("raw", [
    "03/04/2021", "2021-02-30", "2021-03-04 or 2021-03-05", "yesterday", "", None, 20210304,
])
def test_parse_date_refuses_ambiguous_or_impossible(raw: object) -> None:
    assert parse_date(raw) is None


def test_parse_date_same_date_twice_is_that_date() -> None:
    assert parse_date("2021-03-04 (2021-03-04)") == dt.date(2021, 3, 4)


@pytest.mark.parametrize("raw, expected", [
    ("e11.9 ", "E11.9"), ("E11.9", "E11.9"), ("\uff25\uff11\uff11.9", "E11.9"), ("4548-4\u200b", "4548-4"),
    ('"E11.9".', "E11.9"), ("  8867-4  ", "8867-4"),
])
def test_normalize_code(raw: str, expected: str) -> None:
    assert normalize_code(raw) == expected


# --- units ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("spellings", [
    ["mL/min/{1.73_m2}", "mL/min/1.73m2", "mL/min/1.73 m\u00b2", "ml/min/1.73m^2", "mL/min per 1.73 m2",
     "ML/MIN/1.73M2"],
    ["Cel", "\u00b0C", "\u2103", "deg C", "degC", "celsius"],
    ["[degF]", "\u00b0F", "degF", "fahrenheit"],
    ["[lb_av]", "lb", "lbs", "pounds"],
    ["[in_i]", "in", "inches"],
    ["10*9/L", "10^9/L", "\u00d710\u2079/L", "x10e9/L", "x 10^9 / L", "10E9/L"],
    ["10*3/uL", "10^3/\u00b5L", "10\u00b3/\u03bcL", "K/uL"],
    ["kg/m2", "kg/m\u00b2", "kg/m^2", "KG/M2"],
    ["mm[Hg]", "mmHg", "mm Hg"],
    ["/min", "beats/min", "{beats}/min", "bpm", "1/min"],
    ["ug/L", "mcg/L", "\u00b5g/L", "\u03bcg/l"],
    ["mg/dL", "mg/dl", "MG / DL", "(mg/dL)"],
    ["%", "percent"],
    ["", None, "1", "{score}"],
])
def test_same_unit_accepts_every_spelling_of_one_unit(spellings: list[object]) -> None:
    first = normalize_unit(spellings[0])
    for spelling in spellings[1:]:
        assert normalize_unit(spelling) == first, spelling
        assert same_unit(spelling, spellings[0])


@pytest.mark.parametrize("one, other", [
    ("mEq/L", "mmol/L"), ("mg/dL", "mmol/L"), ("10*9/L", "10*3/L"), ("m2", "m"), ("mL/min", "mL/min/1.73m2"),
    ("mg", "ug"), ("Cel", "[degF]"), ("%", ""), ("kg", "g"), ("10*9/L", "10*12/L"), ("/min", "/h"),
])
def test_same_unit_keeps_different_units_apart(one: str, other: str) -> None:
    assert not same_unit(one, other)


@pytest.mark.parametrize("raw, expected", [
    ("93 mL/min/1.73m2", (93.0, "mL/min/1.73m2")), ("7.2%", (7.2, "%")), ("HbA1c is 6.5 %.", (6.5, "%")),
    (4, (4.0, "")), ({"value": 3, "code": "mg"}, (3.0, "mg")), ("1,234 mL", (1234.0, "mL")),
    ("3 or 4 mg", (3.0, "or 4 mg")),  # the hedge stays in the unit, which then matches no unit
])
def test_split_quantity(raw: object, expected: tuple[float, str]) -> None:
    assert split_quantity(raw) == expected


@pytest.mark.parametrize("raw", ["", "mg", None, True, float("nan"), [3]])
def test_split_quantity_needs_a_number(raw: object) -> None:
    assert split_quantity(raw) is None


# --- the one list reading -------------------------------------------------------------------------------

PATHS = ["docs/meeting notes.txt", "My File.md"]


@pytest.mark.parametrize("raw", [
    PATHS, tuple(PATHS), json.dumps(PATHS), json.dumps(json.dumps(PATHS)), "\n".join(PATHS), "\r\n".join(PATHS),
    "docs/meeting notes.txt, My File.md", "docs/meeting notes.txt; My File.md", "- docs/meeting notes.txt\n- My File.md",
    "1. docs/meeting notes.txt\n2. My File.md", "\n  docs/meeting notes.txt  \n\nMy File.md\n",
])
def test_split_items_reads_every_spelling_of_a_list_and_keeps_case(raw: object) -> None:
    assert split_items(raw) == PATHS


def test_split_items_options() -> None:
    assert split_items("a, b", separators=()) == ["a, b"]                  # a line that is one item
    assert split_items("a; b, c") == ["a", "b, c"]                         # ";" before ","
    assert split_items('["a", "b"]', json_arrays=False, separators=()) == ['["a", "b"]']  # output as printed
    assert split_items("- a\n- b", bullets=False) == ["- a", "- b"]
    assert split_items("- a\nb") == ["- a", "b"]                           # bullets go only when every item has one
    assert split_items([1, None, {"a": 1}]) == ["1", '{"a": 1}']
    assert split_items(None) == [] and split_items("") == [] and split_items("[]") == []
    assert split_items('"just text"') == ['"just text"']                  # a JSON string that is no array


def test_lists_match_splits_a_line_only_on_separators_no_gold_item_holds() -> None:
    assert lists_match("Smith, John", ["Smith, John"])
    assert lists_match("Smith, John", ["smith", "john"])                   # no gold item holds a comma: split
    assert not lists_match("Smith, John, Doe, Jane", ["Smith, John", "Doe, Jane"])  # ambiguous: use lines or JSON
    assert lists_match("Smith, John\nDoe, Jane", ["Smith, John", "Doe, Jane"])
    assert lists_match(json.dumps(["Smith, John", "Doe, Jane"]), ["Smith, John", "Doe, Jane"])


# --- options --------------------------------------------------------------------------------------------

CHILD_PUGH = ["Child-Pugh class B", "Child-Pugh class A", "Child-Pugh class C"]


@pytest.mark.parametrize("raw", [
    "A", "a", "(A)", "Answer: A", "the answer is a", "Child-Pugh class B", "CHILD-PUGH CLASS B", "Class B",
    "Child-Pugh B", "class b.", "A. Child-Pugh class B", "**Class B**", "The patient is Child-Pugh class B.",
    "\uff23lass B",
])
def test_read_option_by_letter_full_text_or_distinctive_part(raw: str) -> None:
    assert read_option(raw, CHILD_PUGH) == 0


@pytest.mark.parametrize("raw", [
    "A or B", "A, B", "Class A or B", "Class A/B", "Child-Pugh", "class", "Child-Pugh class", "B. Child-Pugh class B",
    "Class B or C", "D", "", None, True, ["A"], "class B and class C", "the class of the patient",
    "Child-Pugh class B or A", "Child-Pugh class B, not class A",  # one full text plus another option's part
])
def test_read_option_refuses_hedges_shared_parts_and_non_answers(raw: object) -> None:
    assert read_option(raw, CHILD_PUGH) is None


def test_read_option_distinctive_parts_of_other_families() -> None:
    risks = ["low risk", "moderate risk", "high risk"]
    assert read_option("low", risks) == 0 and read_option("High-risk", risks) == 2
    assert read_option("risk", risks) is None and read_option("low or high", risks) is None
    doses = ["5 mg", "10 mg"]
    assert read_option("5", doses) == 0 and read_option("mg", doses) is None
    assert read_option("of", ["disease of the liver", "kidney failure"]) is None  # filler words choose nothing


# --- answer contracts -----------------------------------------------------------------------------------

def test_answer_schemas_type_each_contract() -> None:
    assert answer_schema("list")["type"] == "array" and answer_schema("list")["items"] == {"type": "string"}
    assert answer_schema("number")["type"] == "number"
    assert {kind: ANSWER_SCHEMAS[kind]["type"] for kind in ("text", "option", "quantity")} == dict.fromkeys(
        ("text", "option", "quantity"), "string")
    copied = answer_schema("list")
    copied["items"]["type"] = "number"
    assert ANSWER_SCHEMAS["list"]["items"] == {"type": "string"}  # a copy: callers cannot change the table
    with pytest.raises(ValueError, match="unknown answer kind 'lst'; use one of list, number"):
        answer_schema("lst")


# --- hedges read the same way in every family ---------------------------------------------------------

def test_a_hedge_is_no_answer_in_every_reading() -> None:
    assert parse_number("3 or 4") is None
    assert parse_yes_no("yes or no") is None
    assert read_option("A or B", ["x", "y"]) is None
    assert not lists_match("a, b, c", ["a", "b"])
    quantity = split_quantity("3 or 4 mg")
    assert quantity is not None and not same_unit(quantity[1], "mg")
    assert parse_date("2021-03-04 or 2021-03-05") is None


def test_submit_schema_follows_each_tasks_contract_and_stays_lenient() -> None:
    from agentgym import Task, ToolEnv, VerifierSpec
    from agentgym.wrappers import Perturb

    tasks = [
        Task(id="files", domain="demo", family="lists", prompt="List the files as a JSON array of strings.",
             answer=["a b.txt", "c.txt"], verifier=VerifierSpec(name="set"), metadata={"answer_schema": "list"}),
        Task(id="count", domain="demo", family="numbers", prompt="How many? Submit just the number.", answer=2,
             verifier=VerifierSpec(name="numeric"), metadata={"answer_schema": "number"}),
        Task(id="free", domain="demo", family="text", prompt="Say hi.", answer="hi"),
    ]

    def answer_of(info: dict[str, object]) -> dict[str, object]:
        submit = next(schema for schema in info["tools"] if schema["function"]["name"] == "submit")  # type: ignore[attr-defined, index]
        return submit["function"]["parameters"]["properties"]["answer"]  # type: ignore[no-any-return]

    env = ToolEnv(tasks)
    _, info = env.reset(options={"task_id": "files"})
    assert answer_of(info)["type"] == "array" and answer_of(info)["items"] == {"type": "string"}
    # Lenient: the same list sent as a JSON-encoded string still scores.
    _, reward, *_ = env.step({"name": "submit", "arguments": {"answer": '["c.txt", "a b.txt"]'}})
    assert reward == 1.0
    _, info = env.reset(options={"task_id": "count"})
    assert answer_of(info)["type"] == "number"
    assert env.step({"name": "submit", "arguments": {"answer": "2"}})[1] == 1.0
    _, info = env.reset(options={"task_id": "free"})
    assert "type" not in answer_of(info)  # no contract declared: the tool's own schema
    # The typed schema goes through a wrapper that replaces the tools (here: renamed and reordered).
    wrapped = Perturb(ToolEnv(tasks), kinds=["tool_reorder"], seed=1)
    _, info = wrapped.reset(options={"task_id": "files"})
    assert answer_of(info)["type"] == "array"


@pytest.mark.parametrize("action", [
    {"name": "submit", "arguments": {"answer": ["a b.txt", "c.txt"]}},
    {"name": "submit", "arguments": '{"answer": ["a b.txt", "c.txt"]}'},
    {"function": {"name": "submit", "arguments": '{"answer": ["a b.txt", "c.txt"]}'}},
    [{"name": "submit", "arguments": {"answer": ["a b.txt", "c.txt"]}}],
    '{"name": "submit", "arguments": {"answer": ["a b.txt", "c.txt"]}}',
    '<tool_call>{"name": "submit", "arguments": {"answer": ["a b.txt", "c.txt"]}}</tool_call>',
    'Done.\n```json\n{"name": "submit", "arguments": {"answer": ["a b.txt", "c.txt"]}}\n```',
])
def test_the_action_parser_keeps_an_array_answer_as_it_is(action: object) -> None:
    from agentgym.actions import parse_action

    parsed = parse_action(action)
    assert parsed.error is None
    assert [(call.name, call.arguments) for call in parsed.calls] == [("submit", {"answer": ["a b.txt", "c.txt"]})]
