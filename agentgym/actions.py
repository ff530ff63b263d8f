"""Turning what a model produced into tool calls.

Accepted: structured calls (`dict` or `list[dict]` in the OpenAI shape), and text holding OpenAI-style JSON,
Hermes/Qwen `<tool_call>{...}</tool_call>` tags, or (when the env enables code) CodeAct ```python blocks.
Parsing never raises: a malformed action yields a `ParsedAction` with an `error` saying how to fix it.
"""

from __future__ import annotations

import json
import json.encoder
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

CODE_TOOL = "execute_code"
MAX_ACTION_CHARS = 200_000

_TOOL_CALL_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_CODE_BLOCK = re.compile(r"```(?:python|py)\s*\n(.*?)```", re.DOTALL)
_JSON_BLOCK = re.compile(r"```(?:json)?\s*\n(.*?)```", re.DOTALL)

FORMAT_HELP = (
    'Call a tool with JSON such as {"name": "TOOL", "arguments": {...}}, or wrap it in '
    "<tool_call>...</tool_call>."
)


def _refuse(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _make_json_encoder() -> Callable[[Any], str]:
    """One encoder for every step, giving exactly `json.dumps(value, ensure_ascii=False)`.

    `json.dumps` with a non-default option builds a `JSONEncoder`, and every `encode` builds the C encoder
    again; here the C encoder is built once (without the circular-reference check: a value that contains itself
    raises RecursionError, which `arguments_json` handles). Where the C encoder is missing or answers a probe
    differently, the shared `JSONEncoder` is used.
    """
    fallback = json.JSONEncoder(ensure_ascii=False).encode
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return fallback
    try:
        encoder = make(None, _refuse, json.encoder.encode_basestring, None, ": ", ", ", False, False, True)

        def encode(value: Any) -> str:
            return "".join(encoder(value, 0))

        probe = {"text": "é \ud800 \"q\"\n", "n": [1, -2.5, 1e300, float("nan"), float("-inf"), True, None],
                 "nested": {"": {}}, 3: [], 2.5: "", None: 0, False: ()}
        if encode(probe) != fallback(probe) or encode("x") != fallback("x"):
            return fallback
    except Exception:  # noqa: BLE001 - any surprise from a private constructor: use the public encoder
        return fallback
    return encode


_encode_json = _make_json_encoder()


def arguments_json(arguments: Any) -> str:
    """The arguments as the JSON text of an OpenAI tool call (what `json.dumps(..., ensure_ascii=False)` gives).

    Structured actions may carry what JSON cannot hold (a set, an object, a dict that contains itself); those
    are written with `str()` for the unknown parts (or as one JSON string), never an exception.
    """
    try:
        return _encode_json(arguments)
    except (TypeError, ValueError, RecursionError):
        pass
    try:
        return json.dumps(arguments, ensure_ascii=False, default=str)
    except Exception:  # noqa: BLE001, S110 - default=str runs the objects' own __str__, which may raise anything
        pass
    try:
        text = str(arguments)[:MAX_ACTION_CHARS]
    except Exception:  # noqa: BLE001 - an object whose str() fails (or recurses) is still recorded, as a type
        text = f"<{type(arguments).__name__}>"
    return json.dumps(text, ensure_ascii=False)


_NO_ARGUMENTS: Any = object()


@dataclass(frozen=True, init=False)
class ToolCall:
    """One requested call: a tool name and its (not yet validated) arguments."""

    name: str
    arguments: Any = field(default_factory=dict)
    id: str | None = None

    def __init__(self, name: str, arguments: Any = _NO_ARGUMENTS, id: str | None = None) -> None:
        # The dataclass's frozen __init__ without its per-field object.__setattr__ calls (made every step).
        fields = self.__dict__
        fields["name"] = name
        fields["arguments"] = {} if arguments is _NO_ARGUMENTS else arguments
        fields["id"] = id

    def to_openai(self, index: int) -> dict[str, Any]:
        return {
            "id": self.id or f"call_{index}",
            "type": "function",
            "function": {"name": self.name, "arguments": arguments_json(self.arguments)},
        }


@dataclass(frozen=True, init=False)
class ParsedAction:
    """The result of parsing one action: its calls, the assistant text, and an error if it had no valid call."""

    calls: list[ToolCall]
    text: str = ""
    error: str | None = None

    def __init__(self, calls: list[ToolCall], text: str = "", error: str | None = None) -> None:
        fields = self.__dict__  # as ToolCall: the frozen dataclass's fields, set once
        fields["calls"] = calls
        fields["text"] = text
        fields["error"] = error


def clean_text(text: str) -> str:
    """Replace lone surrogates and other unencodable code points so the text can always be stored as UTF-8."""
    if text.isascii():  # a flag CPython keeps on every str: no scan
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", errors="replace").decode("utf-8")


def _loads(text: str) -> tuple[Any, str | None]:
    try:
        return json.loads(text), None
    except RecursionError:
        return None, "the JSON is nested too deeply"
    except json.JSONDecodeError as error:
        return None, f"invalid JSON ({error.msg} at line {error.lineno} column {error.colno})"


def call_from_object(item: Any, position: int = 0) -> ToolCall | str:
    """Read one OpenAI-shaped call (`{"name", "arguments"}` or `{"function": {...}}`); a string on error."""
    if not isinstance(item, dict):
        return f"tool call #{position + 1} must be a JSON object, got {type(item).__name__}"
    call_id = item.get("id") if isinstance(item.get("id"), str) else None
    if isinstance(item.get("function"), dict):
        item = item["function"]
    name = item.get("name")
    if not isinstance(name, str) or not name:
        return f"tool call #{position + 1} has no 'name'. {FORMAT_HELP}"
    arguments = item.get("arguments", item.get("parameters", {}))
    if isinstance(arguments, str):
        decoded, error = _loads(arguments) if arguments.strip() else ({}, None)
        if error:
            return f"arguments of tool call '{name}' are not valid JSON: {error}"
        arguments = decoded
    return ToolCall(name=name, arguments=arguments, id=call_id)


def _calls_from_json(value: Any) -> list[ToolCall] | str:
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
        value = value["tool_calls"]
    items = value if isinstance(value, list) else [value]
    if not items:
        return "the list of tool calls is empty"
    calls: list[ToolCall] = []
    for position, item in enumerate(items):
        call = call_from_object(item, position)
        if isinstance(call, str):
            return call
        calls.append(call)
    return calls


def parse_action(action: Any, *, code: bool = False) -> ParsedAction:
    """Parse an action into tool calls. See the module docstring for accepted shapes. Never raises."""
    if isinstance(action, dict):
        # The common structured action, one {"name", "arguments": {...}} call, read without the general path
        # (same result as `_calls_from_json`, which handles every other shape).
        name = action.get("name")
        if type(name) is str and name and "function" not in action and "tool_calls" not in action:
            arguments = action["arguments"] if "arguments" in action else action.get("parameters", {})
            if type(arguments) is dict:
                call_id = action.get("id")
                return ParsedAction([ToolCall(name, arguments, call_id if isinstance(call_id, str) else None)])
    if isinstance(action, (dict, list)):
        calls = _calls_from_json(action)
        text = ""
        if isinstance(calls, str):
            return ParsedAction([], text, f"Error: {calls}")
        return ParsedAction(calls, text)
    if not isinstance(action, str):
        return ParsedAction([], "", f"Error: an action must be text or tool calls, got {type(action).__name__}. "
                                    + FORMAT_HELP)
    text = clean_text(action)
    if len(text) > MAX_ACTION_CHARS:
        return ParsedAction([], text[:MAX_ACTION_CHARS],
                            f"Error: the action is {len(text)} characters long; the limit is {MAX_ACTION_CHARS}. "
                            "Send one short tool call per turn.")
    tagged = _TOOL_CALL_TAG.findall(text)
    if tagged:
        calls = []
        for position, body in enumerate(tagged):
            value, error = _loads(body)
            if error:
                return ParsedAction([], text, f"Error: tool call #{position + 1} in <tool_call> tags: {error}. "
                                              + FORMAT_HELP)
            call = call_from_object(value, position)
            if isinstance(call, str):
                return ParsedAction([], text, f"Error: {call}")
            calls.append(call)
        return ParsedAction(calls, text)
    if code:
        blocks = _CODE_BLOCK.findall(text)
        if blocks:
            return ParsedAction([ToolCall(CODE_TOOL, {"code": block}) for block in blocks], text)
    stripped = text.strip()
    candidates = [stripped] + _JSON_BLOCK.findall(text)
    last_error = None
    for candidate in candidates:
        if not candidate.startswith(("{", "[")):
            continue
        value, error = _loads(candidate)
        if error:
            last_error = error
            continue
        calls = _calls_from_json(value)
        if isinstance(calls, str):
            return ParsedAction([], text, f"Error: {calls}")
        return ParsedAction(calls, text)
    hint = f" ({last_error})" if last_error else ""
    code_help = " or write a ```python code block" if code else ""
    return ParsedAction([], text, f"Error: no tool call found in your message{hint}. {FORMAT_HELP[:-1]}{code_help}.")


ActionParser = Callable[..., ParsedAction]
