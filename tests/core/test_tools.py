"""@tool: schemas from signatures and docstrings, validation messages the model can act on, output caps."""

from __future__ import annotations

from typing import Literal

from agentgym import ToolError, tool
from agentgym.tools import parse_docstring


@tool
def search(query: str, limit: int = 5, mode: Literal["dense", "bm25"] = "dense") -> list[str]:
    """Search the notes.

    Longer explanation the model also reads.

    Args:
        query: What to look for.
        limit: Most results. Values above 50
            are capped.
        mode: Retrieval mode.

    Returns:
        Matching notes.
    """
    return [query] * limit


def test_schema_comes_from_signature_and_docstring() -> None:
    function = search.schema["function"]
    assert function["name"] == "search"
    assert function["description"] == "Search the notes.\n\nLonger explanation the model also reads."
    parameters = function["parameters"]
    assert parameters["required"] == ["query"]
    assert parameters["properties"]["limit"] == {
        "default": 5, "description": "Most results. Values above 50 are capped.", "type": "integer"}
    assert parameters["properties"]["mode"]["enum"] == ["dense", "bm25"]


def test_an_argument_named_title_keeps_its_schema() -> None:
    @tool
    def add_note(title: str, body: str = "") -> str:
        """Add a note.

        Args:
            title: The note's title.
            body: The text.
        """
        return title

    parameters = add_note.schema["function"]["parameters"]
    assert parameters["required"] == ["title"]
    assert parameters["properties"]["title"] == {"description": "The note's title.", "type": "string"}
    assert "title" not in parameters  # pydantic's own label is still dropped


def test_state_parameter_is_injected_and_hidden() -> None:
    @tool(writes=True)
    def remember(state: dict, key: str) -> str:
        """Remember a key.

        Args:
            key: The key.
        """
        state[key] = True
        return "ok"

    assert list(remember.schema["function"]["parameters"]["properties"]) == ["key"]
    episode: dict = {}
    outcome = remember.invoke(episode, {"key": "a"})
    assert outcome.ok and episode == {"a": True} and remember.writes


def test_validation_errors_name_the_argument_and_show_an_example() -> None:
    wrong_type = search.invoke(None, {"query": "x", "limit": "many"})
    assert not wrong_type.ok and wrong_type.error_kind == "arguments"
    assert "argument 'limit'" in wrong_type.text and "Example call" in wrong_type.text
    missing = search.invoke(None, {})
    assert "missing required argument 'query'" in missing.text
    extra = search.invoke(None, {"query": "x", "colour": "red"})
    assert "unexpected argument 'colour'" in extra.text and "query, limit, mode" in extra.text
    not_object = search.invoke(None, ["x"])
    assert "must be a JSON object" in not_object.text


def test_tool_errors_and_bugs_become_error_outcomes() -> None:
    @tool
    def careful(name: str) -> str:
        """Look up a name.

        Args:
            name: The name.
        """
        if name == "bug":
            raise ZeroDivisionError("division by zero")
        raise ToolError(f"no such name {name!r}; try 'alice'")

    told = careful.invoke(None, {"name": "bob"})
    assert told.text == "Error: no such name 'bob'; try 'alice'" and told.error_kind == "tool_error"
    crashed = careful.invoke(None, {"name": "bug"})
    assert "ZeroDivisionError" in crashed.text and crashed.error_kind == "exception"


def test_output_is_capped_visibly() -> None:
    @tool(output_limit=100)
    def long() -> str:
        """Long output."""
        return "y" * 1000

    outcome = long.invoke(None, {})
    assert outcome.text.startswith("y" * 100) and outcome.text.endswith("[truncated 900 chars]")


def test_values_render_as_json() -> None:
    assert search.invoke(None, {"query": "é", "limit": 2}).text == '["é", "é"]'


def test_parse_docstring_without_sections() -> None:
    assert parse_docstring("Just one line.") == ("Just one line.", {})
