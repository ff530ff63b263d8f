"""Typed tools: the `@tool` decorator, argument validation, OpenAI schemas and result rendering.

A tool is a plain Python function. Its signature becomes a pydantic model (validated before every call) and an
OpenAI function schema; its Google-style docstring becomes the description the model reads. A first parameter
named `state` receives the episode's state and is hidden from the model.
"""

from __future__ import annotations

import inspect
import json
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pydantic

from agentgym.errors import InfrastructureError

DEFAULT_OUTPUT_LIMIT = 8000
STATE_PARAMETER = "state"


class ToolError(Exception):
    """Raised by a tool for a failure the agent should read and can fix (bad table name, missing file...).

    The message becomes the error observation, so write it for the model: what went wrong and how to fix it.
    """


@dataclass(frozen=True, init=False)
class ToolOutcome:
    """What one tool call produced: the rendered text the agent sees, whether it succeeded, the raw value."""

    text: str
    ok: bool
    value: Any = None
    error_kind: str | None = None  # "unknown_tool", "arguments", "tool_error", "exception"

    def __init__(self, text: str, ok: bool, value: Any = None, error_kind: str | None = None) -> None:
        # The dataclass's own frozen __init__, without its per-field object.__setattr__ calls (made every step).
        fields = self.__dict__
        fields["text"] = text
        fields["ok"] = ok
        fields["value"] = value
        fields["error_kind"] = error_kind


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {argument: description}).

    The description is everything before the first section header (`Args:`, `Returns:`, `Raises:`...).
    """
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    arguments: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    header = re.compile(r"^(Args|Arguments|Parameters|Returns|Return|Raises|Yields|Examples?|Notes?):\s*$")
    for line in lines:
        match = header.match(line.strip())
        if match and not line.startswith(" "):
            section = match.group(1).lower()
            current = None
            continue
        if section is None:
            description.append(line)
        elif section in ("args", "arguments", "parameters"):
            entry = re.match(r"^\s{2,}(\*{0,2}\w+)\s*(?:\(.*?\))?\s*:\s*(.*)$", line)
            if entry and (current is None or len(line) - len(line.lstrip()) <= 4):
                current = entry.group(1).lstrip("*")
                arguments[current] = entry.group(2).strip()
            elif current is not None and line.strip():
                arguments[current] = (arguments[current] + " " + line.strip()).strip()
    return "\n".join(description).strip(), arguments


_NAME_MAPS = ("properties", "$defs", "definitions", "patternProperties")


def _clean_schema(node: Any) -> Any:
    """Drop pydantic's `title` labels so the schema the model reads stays short.

    Only the `title` keyword of a schema goes: an argument *named* `title` (a key of `properties`) stays.
    """
    if isinstance(node, list):
        return [_clean_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    cleaned: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in _NAME_MAPS and isinstance(value, dict):
            cleaned[key] = {name: _clean_schema(schema) for name, schema in value.items()}
        else:
            cleaned[key] = _clean_schema(value)
    return cleaned


def _placeholder(schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if "anyOf" in schema:
        return _placeholder(next((s for s in schema["anyOf"] if s.get("type") != "null"), {}))
    return {"integer": 1, "number": 1.5, "boolean": True, "array": [], "object": {}, "string": "..."}.get(
        str(kind), "..."
    )


_ANY_VALUE = object()  # a field that takes any value as it is
_REQUIRED = object()
_PLAIN_TYPES = (str, int, float, bool)
_IMMUTABLE_DEFAULTS = (type(None), str, int, float, bool)


def _plain_kinds(annotation: Any) -> Any:
    """The exact types pydantic passes through unchanged for `annotation`, `_ANY_VALUE`, or None (not plain).

    Plain: `str`, `int`, `float`, `bool`, `Any`, and `X | None` of the first four, with no constraints
    (`Annotated` metadata makes a field not plain). A value of exactly such a type validates to itself.
    """
    if annotation is Any:
        return _ANY_VALUE
    if annotation in _PLAIN_TYPES:
        return frozenset((annotation,))
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = typing.get_args(annotation)
        if len(members) == 2 and type(None) in members:
            other = next(member for member in members if member is not type(None))
            if other in _PLAIN_TYPES:
                return frozenset((other, type(None)))
    return None


# Built once: `json.dumps` with options builds a new encoder on every call.
_render_json = json.JSONEncoder(ensure_ascii=False, default=str).encode


def render_value(value: Any) -> str:
    """Render a tool's return value as text: strings as they are, JSON-able values as JSON, else `str()`."""
    if value is None:
        return "OK"
    if isinstance(value, str):
        return value
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump_json(indent=1)
    try:
        return _render_json(value)
    except (TypeError, ValueError):
        return str(value)


def cap_text(text: str, limit: int) -> str:
    """Cut `text` to `limit` characters, saying visibly how much was cut."""
    if limit <= 0 or len(text) <= limit:
        return text
    return text[:limit] + f"\n[truncated {len(text) - limit} chars]"


class Tool:
    """A callable the agent may use, with its validated argument model and OpenAI schema.

    Build one with the `@tool` decorator rather than directly.
    """

    def __init__(
        self,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        writes: bool = False,
        terminal: bool = False,
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
    ) -> None:
        self.function = function
        self.name = name or function.__name__
        self.writes = writes
        self.terminal = terminal
        self.output_limit = output_limit
        summary, argument_docs = parse_docstring(function.__doc__)
        self.description = description or summary or self.name
        signature = inspect.signature(function)
        hints = typing.get_type_hints(function, include_extras=True)
        parameters = list(signature.parameters.values())
        self.takes_state = bool(parameters) and parameters[0].name == STATE_PARAMETER
        if self.takes_state:
            parameters = parameters[1:]
        fields: dict[str, Any] = {}
        # Arguments whose every field is plain (see `_plain_kinds`) and whose values already have the exact
        # type are what pydantic would return unchanged: `invoke` passes them on without building a model.
        plain: dict[str, Any] | None = {}
        plain_defaults: list[tuple[str, Any]] = []
        for parameter in parameters:
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                raise TypeError(f"tool {self.name!r}: *args / **kwargs cannot be described to a model")
            annotation = hints.get(parameter.name, Any)
            default = ... if parameter.default is parameter.empty else parameter.default
            kinds = _plain_kinds(annotation)
            if plain is not None and kinds is not None and (default is ... or type(default) in _IMMUTABLE_DEFAULTS):
                plain[parameter.name] = kinds
                plain_defaults.append((parameter.name, _REQUIRED if default is ... else default))
            else:
                plain = None
            fields[parameter.name] = (
                annotation,
                pydantic.Field(default=default, description=argument_docs.get(parameter.name) or None),
            )
        self.arguments_model: type[pydantic.BaseModel] = pydantic.create_model(
            f"{self.name}_arguments", __config__=pydantic.ConfigDict(extra="forbid"), **fields
        )
        self._validate = self.arguments_model.__pydantic_validator__.validate_python
        self._plain = plain
        self._plain_defaults = tuple(plain_defaults)
        parameters_schema = _clean_schema(self.arguments_model.model_json_schema())
        parameters_schema.pop("additionalProperties", None)
        parameters_schema.setdefault("properties", {})
        parameters_schema.setdefault("required", [])
        self.parameters_schema: dict[str, Any] = parameters_schema
        self.schema: dict[str, Any] = {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": parameters_schema},
        }

    def example_call(self) -> str:
        """A syntactically valid call with placeholder values for the required arguments."""
        properties = self.parameters_schema.get("properties", {})
        arguments = {key: _placeholder(properties[key]) for key in self.parameters_schema.get("required", [])}
        return json.dumps({"name": self.name, "arguments": arguments}, ensure_ascii=False)

    def describe_validation_error(self, error: pydantic.ValidationError) -> str:
        problems = []
        for item in error.errors():
            where = ".".join(str(part) for part in item["loc"]) or "(arguments)"
            if item["type"] == "missing":
                problems.append(f"missing required argument '{where}'")
            elif item["type"] == "extra_forbidden":
                allowed = ", ".join(self.parameters_schema["properties"]) or "none"
                problems.append(f"unexpected argument '{where}' (accepted: {allowed})")
            else:
                given = repr(item.get("input"))
                problems.append(f"argument '{where}': {item['msg']} (got {given[:80]})")
        return (
            f"Error: invalid arguments for tool '{self.name}': " + "; ".join(problems)
            + f". Example call: {self.example_call()}"
        )

    def invoke(self, state: Any, arguments: Any) -> ToolOutcome:
        """Validate `arguments` and call the tool. Never raises: failures become an error outcome."""
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return ToolOutcome(
                f"Error: arguments for tool '{self.name}' must be a JSON object, got "
                f"{type(arguments).__name__}. Example call: {self.example_call()}",
                ok=False,
                error_kind="arguments",
            )
        values = self._plain_values(arguments)
        if values is None:
            try:
                validated = self._validate(arguments)
            except pydantic.ValidationError as error:
                return ToolOutcome(self.describe_validation_error(error), ok=False, error_kind="arguments")
            values = validated.__dict__  # the field values, in field order (extra arguments are forbidden)
        try:
            value = self.function(state, **values) if self.takes_state else self.function(**values)
        except ToolError as error:
            return ToolOutcome(cap_text(f"Error: {error}", self.output_limit), ok=False, error_kind="tool_error")
        except InfrastructureError:
            raise  # not the agent's doing: the env ends the episode as `infra_error` (agentgym.env)
        except RecursionError:
            return ToolOutcome(f"Error: tool '{self.name}' hit the recursion limit", ok=False,
                               error_kind="exception")
        except Exception as error:  # noqa: BLE001 - a tool bug must not end an RL run: the agent sees it
            message = f"Error: tool '{self.name}' failed: {type(error).__name__}: {error}"
            return ToolOutcome(cap_text(message, self.output_limit), ok=False, error_kind="exception")
        return ToolOutcome(cap_text(render_value(value), self.output_limit), ok=True, value=value)

    def _plain_values(self, arguments: dict[Any, Any]) -> dict[str, Any] | None:
        """The validated values when pydantic would return `arguments` unchanged (None: let pydantic decide)."""
        plain = self._plain
        if plain is None or len(arguments) > len(plain):
            return None
        for key, value in arguments.items():
            kinds = plain.get(key) if type(key) is str else None
            if kinds is None or (kinds is not _ANY_VALUE and type(value) not in kinds):
                return None
        values: dict[str, Any] = {}
        for name, default in self._plain_defaults:
            if name in arguments:
                values[name] = arguments[name]
            elif default is _REQUIRED:
                return None
            else:
                values[name] = default
        return values

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly (tests, code execution)."""
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool({self.name!r}, writes={self.writes}, terminal={self.terminal})"


@typing.overload
def tool(function: Callable[..., Any], /) -> Tool: ...
@typing.overload
def tool(
    *, name: str | None = None, description: str | None = None, writes: bool = False, terminal: bool = False,
    output_limit: int = DEFAULT_OUTPUT_LIMIT,
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    writes: bool = False,
    terminal: bool = False,
    output_limit: int = DEFAULT_OUTPUT_LIMIT,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed function into a `Tool`. Use bare (`@tool`) or with options (`@tool(terminal=True)`).

    Args:
        function: The function; its docstring's summary and `Args:` section are what the model reads.
        name: Tool name shown to the model (default: the function name).
        description: Override the docstring summary.
        writes: The tool changes the episode's state.
        terminal: Calling the tool ends the episode; its return value is the submission to verify.
        output_limit: Most characters of rendered output the agent sees.
    """

    def wrap(inner: Callable[..., Any]) -> Tool:
        return Tool(inner, name=name, description=description, writes=writes, terminal=terminal,
                    output_limit=output_limit)

    return wrap(function) if function is not None else wrap


def as_tool(candidate: Tool | Callable[..., Any]) -> Tool:
    """Accept a `Tool` or a plain typed function (decorated on the fly)."""
    return candidate if isinstance(candidate, Tool) else Tool(candidate)


def with_answer_schema(schema: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """A copy of a terminal tool's OpenAI `schema` whose `answer` argument has the JSON schema `answer` (one of
    `agentgym.answers.ANSWER_SCHEMAS`); a schema without an `answer` argument comes back unchanged."""
    properties = schema.get("function", {}).get("parameters", {}).get("properties", {})
    if "answer" not in properties:
        return schema
    typed = {**properties["answer"], **answer}
    typed.pop("anyOf", None)  # pydantic's "any value or null" gives way to the task's type
    if answer.get("type") != "null":
        typed.pop("default", None)  # a default of null is no answer of the task's type
    function = schema["function"]
    parameters = {**function["parameters"], "properties": {**properties, "answer": typed}}
    return {**schema, "function": {**function, "parameters": parameters}}


@tool(terminal=True)
def submit(answer: Any = None) -> Any:
    """Submit your final answer and end the episode. Call this exactly once, when you are done.

    Args:
        answer: The final answer to the task.
    """
    return answer
