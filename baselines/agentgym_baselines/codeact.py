"""CodeAct for TRL: ```python blocks as calls of an `execute_code` tool, run in a sandbox, tools reached as data.

Parsing: TRL finds tool calls with the tokenizer's response parser, which knows `<tool_call>` JSON only.
`enable_codeact_parsing(tokenizer)` wraps the tokenizer's `parse_response` so that an assistant message with no
tool call but with ```python blocks becomes one `execute_code(code=...)` call per block (the same reading as
`agentgym.actions.parse_action(..., code=True)`).

Running: the model's code never runs in the trainer's process. `SandboxCodeRunner` runs each block in an
`agentgym.sandbox.Sandbox` (Docker where a daemon answers), in the sandbox's persistent Python namespace, where
every env tool is a stub function of the same name (also importable with `from tools import NAME`). A stub call
does not reach any host object: the block runs in a thread inside the sandbox, the stub hands its name and
JSON arguments to the sandbox's main thread, which prints them as one marked JSON line and returns; the host
reads that line as data, makes the call as one `env.step` (so validation, errors, the turn limit and the verifier
apply as for a tool call), and sends the result text back as a string literal in the next snippet, which wakes
the stub. A block that runs past its time limit, breaks the protocol or kills its interpreter gets the sandbox
reset (its variables and files are lost) and an error observation.
"""

from __future__ import annotations

import inspect
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentgym.actions import CODE_TOOL, parse_action
from agentgym.tools import DEFAULT_OUTPUT_LIMIT, cap_text

logger = logging.getLogger(__name__)

DEFAULT_CODE_TIMEOUT = 30.0  # seconds of sandbox time per block (host time spent in tool calls not counted)
DEFAULT_MAX_CALLS = 100  # tool calls per block; the env's turn limit usually ends the episode long before
MARK = "\x1eAGENTGYM-CODEACT "
SANDBOX_MAX_OUTPUT = 256 << 10
NO_OUTPUT = "(the code printed nothing; print what you want to see)"

# Runs inside the sandbox (its own `python3`, standard library only). `install` puts the stubs into the
# namespace and returns the driver; everything the driver needs is bound in its closure, so model code that
# rebinds `json` or `threading` in the namespace breaks nothing but its own later blocks.
DRIVER_SOURCE = r'''
def _agentgym_codeact_install(namespace, spec, mark):
    import ast, json, queue, sys, threading, traceback, types

    class ToolError(Exception):
        """The environment answered this tool call with an error; the message is its text."""

    requests, replies = queue.Queue(), queue.Queue()

    def make_stub(name, doc, parameters):
        def stub(*args, **kwargs):
            try:
                payload = json.dumps({"kind": "call", "name": name, "args": list(args), "kwargs": kwargs})
            except (TypeError, ValueError) as error:
                raise TypeError(f"{name}(): arguments must be JSON values (str, int, float, bool, None, list, "
                                f"dict): {error}") from None
            requests.put(payload)
            reply = replies.get()
            if reply.get("ok"):
                return reply.get("text", "")
            raise ToolError(reply.get("text", "Error: the tool call failed"))
        stub.__name__ = stub.__qualname__ = name
        stub.__doc__ = doc
        stub.__text_signature__ = "(" + ", ".join(parameters) + ")"
        return stub

    tools = types.ModuleType("tools", "The environment's tools.")
    for item in spec:
        function = make_stub(item["name"], item["doc"], item["parameters"])
        setattr(tools, item["name"], function)
        namespace[item["name"]] = function
    sys.modules["tools"] = tools
    namespace["ToolError"] = ToolError

    def run_block(code):
        result = {"kind": "done", "error": None}
        try:
            tree = ast.parse(code, "<codeact>", "exec")
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            exec(compile(tree, "<codeact>", "exec"), namespace)
            if last is not None:
                value = eval(compile(last, "<codeact>", "eval"), namespace)
                if value is not None:
                    print(repr(value))
        except SystemExit:
            pass
        except ToolError as error:
            result = {"kind": "done", "error": str(error), "tool_error": True}
        except SyntaxError as error:
            result = {"kind": "done", "error": f"SyntaxError: {error.msg} (line {error.lineno})"}
        except BaseException as error:
            lines = [frame.lineno for frame in traceback.extract_tb(error.__traceback__)
                     if frame.filename == "<codeact>"]
            where = f" (line {lines[-1]})" if lines else ""
            result = {"kind": "done", "error": f"{type(error).__name__}: {error}{where}"}
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
        requests.put(json.dumps(result))

    def wait(timeout):
        try:
            event = requests.get(timeout=timeout)
        except queue.Empty:
            event = json.dumps({"kind": "timeout"})
        sys.stdout.flush()
        sys.stdout.write(mark + event + "\n")
        sys.stdout.flush()

    class Driver:
        def start(self, code, timeout):
            threading.Thread(target=run_block, args=(code,), daemon=True, name="codeact").start()
            wait(timeout)

        def resume(self, reply, timeout):
            replies.put(json.loads(reply))
            wait(timeout)

    return Driver()
'''


class CodeRunFailed(Exception):
    """A block failed; the message is what the model sees (what it printed, then the error)."""


@dataclass(frozen=True)
class StubSpec:
    """One tool as a stub function in the sandbox: its name, docstring and parameter names in call order."""

    name: str
    doc: str
    parameters: tuple[str, ...]
    required: int  # how many of `parameters` (the first ones) are required

    def arguments(self, args: Sequence[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Keyword arguments from a stub call's positional and keyword ones; raises TypeError like Python."""
        if len(args) > len(self.parameters):
            raise TypeError(f"{self.name}() takes at most {len(self.parameters)} positional arguments "
                            f"({len(args)} given)")
        merged = dict(kwargs)
        for position, value in enumerate(args):
            if self.parameters[position] in merged:
                raise TypeError(f"{self.name}() got multiple values for argument '{self.parameters[position]}'")
            merged[self.parameters[position]] = value
        return merged


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


def create_sandbox(backend: str = "auto", *, allow_weak_isolation: bool = False) -> Any:
    """`Sandbox.create(backend, ...)`, forwarding `allow_weak_isolation` where this agentgym accepts it."""
    from agentgym.sandbox import Sandbox

    options: dict[str, Any] = {"max_output": SANDBOX_MAX_OUTPUT}
    if "allow_weak_isolation" in inspect.signature(Sandbox.create).parameters:
        options["allow_weak_isolation"] = allow_weak_isolation
    return Sandbox.create(backend, **options)


class SandboxCodeRunner:
    """Runs CodeAct blocks in a sandbox with the env's tools as stub functions (see the module docstring).

    The sandbox is created at the first block (not before: most rollouts of an untrained model never write
    one) and reset by `reset()`, so no variable or file crosses from one episode to the next.

    Args:
        stubs: The tools to expose.
        backend: Sandbox backend ("auto", "docker", "local").
        allow_weak_isolation: Let "auto" fall back to the local backend (weaker isolation) without Docker.
        timeout: Seconds of sandbox time per block.
        max_calls: Tool calls per block.
        output_limit: Most characters of a block's output the model sees.
    """

    def __init__(self, stubs: Sequence[StubSpec], *, backend: str = "auto", allow_weak_isolation: bool = False,
                 timeout: float = DEFAULT_CODE_TIMEOUT, max_calls: int = DEFAULT_MAX_CALLS,
                 output_limit: int = DEFAULT_OUTPUT_LIMIT) -> None:
        self.stubs = {stub.name: stub for stub in stubs}
        self.backend = backend
        self.allow_weak_isolation = allow_weak_isolation
        self.timeout = timeout
        self.max_calls = max_calls
        self.output_limit = output_limit
        self.sandbox: Any = None
        self._dirty = False

    # ------------------------------------------------------------------------------ lifecycle
    def reset(self) -> None:
        """Forget every variable and file of earlier blocks (a no-op when nothing ran since the last reset)."""
        if self.sandbox is not None and self._dirty:
            self.sandbox.reset()
        self._dirty = False

    def close(self) -> None:
        """Close the sandbox (idempotent)."""
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None

    def _sandbox(self) -> Any:
        if self.sandbox is None:
            self.sandbox = create_sandbox(self.backend, allow_weak_isolation=self.allow_weak_isolation)
        return self.sandbox

    # ------------------------------------------------------------------------------ one block
    def run(self, code: str, call_tool: Callable[[str, dict[str, Any]], str]) -> str:
        """Run `code`; each stub call becomes `call_tool(name, arguments)`, which returns the result text or
        raises `CodeRunFailed`-compatible errors carrying the env's message (any exception's text is sent back).

        Returns what the block printed (capped). Raises `CodeRunFailed` with the printed text and the error when
        the block raises, times out, makes too many calls or breaks the protocol.
        """
        from agentgym_baselines.adapter import ToolCallFailed

        sandbox = self._sandbox()
        self._dirty = True
        spec = [{"name": stub.name, "doc": stub.doc, "parameters": list(stub.parameters)}
                for stub in self.stubs.values()]
        snippet = (DRIVER_SOURCE
                   + "\nif '_agentgym_codeact' not in globals():\n"
                   + f"    _agentgym_codeact = _agentgym_codeact_install(globals(), {spec!r}, {MARK!r})\n"
                   + "del _agentgym_codeact_install\n")
        printed: list[str] = []
        budget = self.timeout
        calls = 0
        step = snippet + f"_agentgym_codeact.start({code!r}, {budget!r})\n"
        while True:
            started = time.monotonic()
            result = sandbox.run_python(step, timeout=budget + 5.0)
            budget -= time.monotonic() - started
            text, event = self._split(result.stdout)
            printed.append(text)
            if event is None:
                self._lost()
                detail = (result.stderr or "").strip()[-500:]
                raise CodeRunFailed(self._failure(printed, "Error: the code's Python process stopped or broke the "
                                                           "tool protocol; the sandbox was reset and its variables "
                                                           "and files are lost" + (f"\n{detail}" if detail else "")))
            kind = event.get("kind")
            if kind == "done":
                error = event.get("error")
                if error is None:
                    return cap_text("".join(printed).rstrip("\n") or NO_OUTPUT, self.output_limit)
                message = str(error) if event.get("tool_error") else f"Error: {error}"
                raise CodeRunFailed(self._failure(printed, message))
            if kind == "timeout" or budget <= 0:
                self._lost()
                raise CodeRunFailed(self._failure(printed, f"Error: the code ran past {self.timeout:g} s and was "
                                                           "stopped; the sandbox was reset and its variables and "
                                                           "files are lost"))
            if kind != "call":
                self._lost()
                raise CodeRunFailed(self._failure(printed, f"Error: unexpected message from the code: {kind!r}"))
            calls += 1
            if calls > self.max_calls:
                self._lost()
                raise CodeRunFailed(self._failure(printed, f"Error: the code made more than {self.max_calls} tool "
                                                           "calls in one block and was stopped"))
            reply = self._call(event, call_tool, ToolCallFailed)
            step = f"_agentgym_codeact.resume({json.dumps(reply)!r}, {budget!r})\n"

    def _call(self, event: dict[str, Any], call_tool: Callable[[str, dict[str, Any]], str],
              failure: type[Exception]) -> dict[str, Any]:
        """The reply to one stub call, read strictly as data: a known tool name, a list and a dict."""
        name, args, kwargs = event.get("name"), event.get("args"), event.get("kwargs")
        stub = self.stubs.get(name) if isinstance(name, str) else None
        if stub is None or not isinstance(args, list) or not isinstance(kwargs, dict):
            return {"ok": False, "text": f"Error: unknown tool {str(name)[:100]!r}; available: "
                                         f"{', '.join(self.stubs)}"}
        try:
            arguments = stub.arguments(args, kwargs)
        except TypeError as error:
            return {"ok": False, "text": f"Error: {error}"}
        try:
            return {"ok": True, "text": str(call_tool(stub.name, arguments))}
        except failure as error:
            return {"ok": False, "text": str(error)}

    @staticmethod
    def _split(stdout: str) -> tuple[str, dict[str, Any] | None]:
        """(what the block printed, the driver's event) from one snippet's stdout; event None if there is none."""
        before, found, after = stdout.rpartition(MARK)
        if not found:
            return stdout, None
        try:
            event = json.loads(after.splitlines()[0]) if after else None
        except json.JSONDecodeError:
            return stdout, None
        return (before, event) if isinstance(event, dict) else (stdout, None)

    def _lost(self) -> None:
        """Reset the sandbox: kills a block still running in its thread, and its interpreter."""
        if self.sandbox is not None:
            self.sandbox.reset()
        self._dirty = False

    def _failure(self, printed: list[str], error: str) -> str:
        text = "".join(printed)
        return cap_text((text + ("\n" if text and not text.endswith("\n") else "") + error).strip(),
                        self.output_limit)
