"""CodeAct for TRL: ```python blocks as calls of an `execute_code` tool, and where those blocks run.

Parsing: TRL finds tool calls with the tokenizer's response parser, which knows `<tool_call>` JSON only.
`enable_codeact_parsing(tokenizer)` wraps the tokenizer's `parse_response` so that an assistant message with no
tool call but with ```python blocks becomes one `execute_code(code=...)` call per block (the same reading as
`agentgym.actions.parse_action(..., code=True)`).

Running: envs that implement `ToolEnv.execute_code` run the block themselves (their sandbox). For the others,
`run_code_block` runs it on the host, in-process, in a restricted namespace:
- the only functions are the env's tools (each call is one `env.step`, so validation, errors and the turn limit
  apply), a short list of harmless builtins, and imports of a few pure standard-library modules plus `tools`;
- names containing a double underscore are refused, which closes the usual introspection escapes;
- a budget of executed lines stops runaway Python loops.
This is NOT a security boundary: the code runs in the training process with its privileges, a long C-level call
(`sum(range(10**12))`) is not interrupted, and memory is not limited. Use it for models you are training on
envs whose tools are the only thing of value, and use an env with its own sandboxed `execute_code` otherwise.
"""

from __future__ import annotations

import builtins
import io
import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentgym.actions import CODE_TOOL, parse_action
from agentgym.tools import DEFAULT_OUTPUT_LIMIT, cap_text

if TYPE_CHECKING:
    from agentgym_baselines.adapter import AgentGymEnvironment, FlatSignature

CODE_FILENAME = "<codeact>"
DEFAULT_LINE_BUDGET = 200_000
ALLOWED_MODULES = frozenset({
    "math", "json", "re", "statistics", "itertools", "collections", "functools", "datetime", "string",
    "decimal", "fractions", "operator", "heapq", "bisect",
})
SAFE_BUILTINS = (
    "abs", "all", "any", "bool", "chr", "dict", "divmod", "enumerate", "filter", "float", "format", "frozenset",
    "hash", "int", "isinstance", "issubclass", "iter", "len", "list", "map", "max", "min", "next", "ord", "pow",
    "range", "repr", "reversed", "round", "set", "slice", "sorted", "str", "sum", "tuple", "zip", "True", "False",
    "None", "Exception", "ValueError", "TypeError", "KeyError", "IndexError", "ZeroDivisionError",
    "RuntimeError", "StopIteration", "ArithmeticError", "LookupError", "AssertionError",
)


class CodeBudgetExceeded(Exception):
    """The block executed more lines than its budget allows."""


def enable_codeact_parsing(tokenizer: Any) -> Any:
    """Make `tokenizer.parse_response` read ```python blocks as `execute_code` calls. Returns the tokenizer.

    Messages that already hold `<tool_call>` calls are left as the original parser read them.
    """
    if getattr(tokenizer, "_agentgym_codeact", False):
        return tokenizer
    original = tokenizer.parse_response

    def parse_response(*args: Any, **kwargs: Any) -> Any:
        parsed = original(*args, **kwargs)
        if isinstance(parsed, dict) and not parsed.get("tool_calls"):
            action = parse_action(str(parsed.get("content") or ""), code=True)
            if action.calls and all(call.name == CODE_TOOL for call in action.calls):
                parsed["tool_calls"] = [{"type": "function", "function": {"name": CODE_TOOL,
                                                                          "arguments": dict(call.arguments)}}
                                        for call in action.calls]
        return parsed

    tokenizer.parse_response = parse_response
    tokenizer._agentgym_codeact = True
    return tokenizer


def _tool_function(environment: AgentGymEnvironment, signature: FlatSignature) -> Callable[..., str]:
    from agentgym_baselines.adapter import ToolCallFailed

    names = [p.name for p in signature.parameters if p.required] + [
        p.name for p in signature.parameters if not p.required]
    name = signature.tool.name

    def call(*args: Any, **kwargs: Any) -> str:
        if len(args) > len(names):
            raise TypeError(f"{name}() takes at most {len(names)} positional arguments ({len(args)} given)")
        for position, value in enumerate(args):
            if names[position] in kwargs:
                raise TypeError(f"{name}() got two values for argument '{names[position]}'")
            kwargs[names[position]] = value
        try:
            return environment._step(name, signature.nest(kwargs))
        except ToolCallFailed as error:
            raise ToolCallFailed(str(error)) from None

    call.__name__ = name
    call.__doc__ = signature.docstring()
    return call


def run_code_block(environment: AgentGymEnvironment, code: str, *, line_budget: int = DEFAULT_LINE_BUDGET,
                   output_limit: int = DEFAULT_OUTPUT_LIMIT) -> str:
    """Run `code` on the host with the env's tools as functions; return what it printed.

    Raises `ToolCallFailed` (the text the model sees: what was printed, then the error) when the block does not
    compile, uses a double-underscore name, raises, or exceeds its line budget.
    """
    from agentgym_baselines.adapter import ToolCallFailed

    if "__" in code:
        raise ToolCallFailed("Error: names with a double underscore are not allowed in code blocks; "
                             "call the tools as plain functions")
    try:
        compiled = compile(code, CODE_FILENAME, "exec")
    except SyntaxError as error:
        raise ToolCallFailed(f"Error: SyntaxError: {error.msg} (line {error.lineno})") from None

    output = io.StringIO()
    functions = {name: _tool_function(environment, signature)
                 for name, signature in environment._signatures.items()}
    tools_module = types.ModuleType("tools", "The environment's tools.")
    for name, function in functions.items():
        setattr(tools_module, name, function)

    def restricted_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (),
                          level: int = 0) -> Any:
        if name == "tools":
            return tools_module
        if name.split(".")[0] not in ALLOWED_MODULES or level:
            allowed = ", ".join(sorted(ALLOWED_MODULES | {"tools"}))
            raise ImportError(f"import of {name!r} is not allowed here; allowed: {allowed}")
        return __import__(name, globals, locals, fromlist, level)

    def printer(*values: Any, sep: str | None = " ", end: str | None = "\n", **_: Any) -> None:
        output.write((" " if sep is None else sep).join(str(value) for value in values)
                     + ("\n" if end is None else end))

    allowed_builtins: dict[str, Any] = {name: getattr(builtins, name) for name in SAFE_BUILTINS}
    allowed_builtins.update({"print": printer, "__import__": restricted_import})
    namespace: dict[str, Any] = {"__builtins__": allowed_builtins, "__name__": "codeact", **functions}

    executed = 0

    def count_lines(frame: types.FrameType, event: str, argument: Any) -> Any:
        nonlocal executed
        if event == "line":
            executed += 1
            if executed > line_budget:
                raise CodeBudgetExceeded(f"the code ran more than {line_budget} lines; simplify it")
        return count_lines

    def trace_calls(frame: types.FrameType, event: str, argument: Any) -> Any:
        return count_lines if frame.f_code.co_filename == CODE_FILENAME else None

    previous_trace = sys.gettrace()
    error_text: str | None = None
    sys.settrace(trace_calls)
    try:
        exec(compiled, namespace)  # noqa: S102 (restricted namespace; see the module docstring)
    except ToolCallFailed as error:
        error_text = str(error)
    except CodeBudgetExceeded as error:
        error_text = f"Error: {error}"
    except Exception as error:  # noqa: BLE001 (the model's code failing is an observation for the model, not a crash)
        error_text = f"Error: {type(error).__name__}: {error}"
    finally:
        sys.settrace(previous_trace)
    printed = output.getvalue()
    if error_text is not None:
        raise ToolCallFailed(cap_text((printed + error_text).strip(), output_limit))
    return cap_text(printed.rstrip("\n") or "(the code printed nothing; print what you want to see)", output_limit)
