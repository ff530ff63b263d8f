"""`agentgym play ENV`: a person plays an env at the terminal.

A person types tool calls (`describe_table customers`, `feed kind='big cat' kilograms=2`, or JSON), reads the
observations, and at the end sees the reward, what each breakdown term means, and the task's gold answer and
solution. Mistakes caught here (an empty or unparseable line, an unknown tool, a missing argument) are answered
locally and cost no turn: they never reach `env.step`. The gold answer is shown only once the episode is over;
this is a local harness for a person, not a model-facing surface.
"""

from __future__ import annotations

import difflib
import json
import re
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import click
from rich.console import Console

from agentgym.actions import CODE_TOOL
from agentgym.rewards import explain_term

HELP = """\
Type one tool call per line:
  NAME key=value ...        e.g. describe_table table=customers   (shell quoting: cmd='ls -la')
  NAME VALUE                for a tool with one argument, e.g. describe_table customers
  {"name": ..., "arguments": {...}}   a call as JSON (or any action a model could send)
A key=value value is what a model's JSON call would carry: the text as typed for a text parameter; for any
other parameter JSON when it reads as JSON (3, true, ["a", "b"] is a list), else the text. To send a list
as a JSON-encoded string instead, type the call as JSON: {"name": "submit", "arguments": {"answer": "[1, 2]"}}.
Commands:
  :tools   the tools and their arguments      :help   this text
  :quit    end the session (also Ctrl-D)
Mistakes caught before the call (unknown tool, missing argument, unparseable line such as an unclosed
quote) cost no turn and send nothing."""

# What each reward_breakdown key means, for a person reading the end of an episode.
def explain_key(key: str) -> str:
    """What the reward_breakdown key `key` measures, in one line."""
    return explain_term(key) or "a shaping term of this env"


@dataclass
class ToolSpec:
    """One tool as the player sees it: its name, parameters and which of them are required."""

    name: str
    description: str
    properties: dict[str, Any]
    required: list[str]

    @classmethod
    def from_schema(cls, schema: dict[str, Any]) -> ToolSpec:
        function = schema.get("function", schema)
        parameters = function.get("parameters") or {}
        return cls(name=str(function.get("name", "")), description=str(function.get("description") or ""),
                   properties=dict(parameters.get("properties") or {}),
                   required=[str(name) for name in parameters.get("required") or []])

    @property
    def single_argument(self) -> str | None:
        """The parameter a positional value fills: the only parameter, or the only required one."""
        if len(self.properties) == 1:
            return next(iter(self.properties))
        if len(self.required) == 1:
            return self.required[0]
        return None

    def usage(self) -> str:
        parts = [f"{name}=..." if name in self.required else f"[{name}=...]" for name in self.properties]
        return " ".join([self.name, *parts])


class LocalMistake(Exception):
    """A line the player typed that is wrong before any call is made; answered here, costs no turn."""


def _value(text: str, schema: Any = None) -> Any:
    """A typed value: the text itself for a string parameter, else JSON when it parses (3, true, [1, 2])."""
    if isinstance(schema, dict) and schema.get("type") == "string":
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _unknown_tool(name: str, tools: dict[str, ToolSpec]) -> LocalMistake:
    close = difflib.get_close_matches(name, list(tools), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return LocalMistake(f"unknown tool {name[:60]!r}{hint}; tools: {', '.join(tools)} (:tools shows arguments)")


_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")


def _read_value(text: str, start: int) -> tuple[str, int] | None:
    """The value that starts at `start` and the index after it: a quoted text without its quotes (backslash
    escapes a double quote's next character, as in a shell), a JSON array or object as typed (brackets balanced,
    their strings kept whole), or a bare word up to the next space. None for an unclosed quote or bracket."""
    if start >= len(text):
        return "", start
    opening = text[start]
    if opening in "'\"":
        chars: list[str] = []
        index = start + 1
        while index < len(text):
            char = text[index]
            if char == opening:
                return "".join(chars), index + 1
            if char == "\\" and opening == '"' and index + 1 < len(text):
                index += 1
                char = text[index]
            chars.append(char)
            index += 1
        return None
    if opening in "[{":
        depth, index, in_string = 0, start, False
        while index < len(text):
            char = text[index]
            if in_string:
                if char == "\\":
                    index += 1
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char in "[{":
                depth += 1
            elif char in "]}":
                depth -= 1
                if depth == 0:
                    return text[start:index + 1], index + 1
            index += 1
        return None
    end = start
    while end < len(text) and not text[end].isspace():
        end += 1
    return text[start:end], end


def _keyed_arguments(rest: str, spec: ToolSpec) -> dict[str, Any] | None:
    """`key=value key=value` for keys the tool takes, or None when the line is not in that form. A value may be
    quoted ('ls -la'), a JSON array or object with spaces in it (params={"patient": "x"}), or one word."""
    arguments: dict[str, Any] = {}
    index = 0
    while index < len(rest):
        match = _KEY.match(rest, index)
        if match is None or match.group(1) not in (spec.properties or {match.group(1)}):
            return None
        key = match.group(1)
        read = _read_value(rest, match.end())
        if read is None:
            raise LocalMistake(f"an unclosed quote or bracket in {key}=...; close it, or type the call as JSON: "
                               f"{spec.usage()}")
        arguments[key] = _value(read[0], spec.properties.get(key))
        index = read[1]
        if index < len(rest) and not rest[index].isspace():
            return None  # a value glued to more text (key=a'b): not this form
        while index < len(rest) and rest[index].isspace():
            index += 1
    return arguments or None


def parse_line(line: str, tools: dict[str, ToolSpec], *, code: bool = False) -> Any:
    """Turn one typed line into an action for `env.step`, or raise `LocalMistake`.

    `NAME key=value ...` and `NAME VALUE` (for a one-argument tool) become a structured call; any other line
    (JSON, a ```python block, tagged text) is checked with the env's own parser and passed on as typed.
    """
    from agentgym.actions import parse_action

    stripped = line.strip()
    if not stripped:
        raise LocalMistake("empty line; type a tool call, or :help")
    first, _, rest = stripped.partition(" ")
    rest = rest.strip()
    if first in tools:
        spec = tools[first]
        arguments = _keyed_arguments(rest, spec) if rest else {}
        if arguments is None and rest and spec.single_argument is not None:
            # One argument: the rest of the line is its value; a value that is one quoted text or one JSON array
            # or object (`submit ["a","b"]`) is read as such, anything else is sent as typed ("Crohn's disease").
            name = spec.single_argument
            read = _read_value(rest, 0)
            if read is None and rest[0] in "'\"":
                raise LocalMistake(f"an unclosed quote; close it, or type the call as JSON: {spec.usage()}")
            whole = read is not None and read[1] == len(rest)
            arguments = {name: _value(read[0], spec.properties.get(name)) if whole and read is not None else rest}
        elif arguments is None:
            raise LocalMistake(f"write the arguments as key=value: {spec.usage()}")
        missing = [name for name in spec.required if name not in arguments]
        if missing:
            raise LocalMistake(f"{spec.name} needs {', '.join(missing)}: {spec.usage()}")
        return {"name": spec.name, "arguments": arguments}
    parsed = parse_action(stripped, code=code)
    if parsed.error is not None:
        if first.isidentifier() and difflib.get_close_matches(first, list(tools), n=1):
            raise _unknown_tool(first, tools)
        raise LocalMistake(f"{parsed.error} (:help shows how to type a call)")
    for call in parsed.calls:
        if call.name not in tools and not (code and call.name == CODE_TOOL):
            raise _unknown_tool(call.name, tools)
    return line


def _aligned(rows: Sequence[tuple[str, ...]]) -> str:
    """Rows as plain aligned columns: read at a terminal, and never wrapped mid-token when piped."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]) - 1)]
    return "\n".join("  ".join([*(cell.ljust(width) for cell, width in zip(row, widths)), row[-1]]).rstrip()
                     for row in rows)


def tools_table(tools: dict[str, ToolSpec]) -> str:
    """The tools as a short table: name, arguments (optional ones bracketed), first line of the description."""
    rows = [("tool", "arguments", "what it does")]
    for spec in tools.values():
        arguments = " ".join(name if name in spec.required else f"[{name}]" for name in spec.properties)
        rows.append((spec.name, arguments or "-", (spec.description.strip().splitlines() or [""])[0]))
    return _aligned(rows)


def _format_call(call: dict[str, Any], tools: dict[str, ToolSpec] | None = None) -> str:
    """A solution step as the player would type it (`NAME VALUE` for a one-argument tool's text value)."""
    arguments = call.get("arguments") or {}
    spec = (tools or {}).get(str(call.get("name")))
    if spec is not None and len(arguments) == 1 and spec.single_argument in arguments:
        value = arguments[spec.single_argument]
        if isinstance(value, str) and "\n" not in value and value.strip() == value and " " in value:
            return f"{spec.name} {value}"
    parts = [call.get("name", "?")]
    for key, value in arguments.items():
        text = value if isinstance(value, str) else json.dumps(value)
        parts.append(f"{key}={shlex.quote(text)}")
    return " ".join(parts)


def _enable_line_editing() -> None:
    """Arrow keys, editing and history for the prompts (click.prompt reads with input()), on a terminal."""
    if not sys.stdin.isatty():
        return
    try:
        import readline  # noqa: F401  (importing it is what turns editing on for input())
    except ImportError:  # Windows without pyreadline: plain input still works
        return


def _show_end(console: Console, env: Any, reward: float, terminated: bool, truncated: bool,
              info: dict[str, Any]) -> None:
    tools = {spec.name: spec for spec in map(ToolSpec.from_schema, info.get("tools") or [])}
    breakdown = info.get("reward_breakdown") or {}
    console.print(f"[bold]episode over[/] reward={reward:.3f} terminated={terminated} truncated={truncated}")
    console.print("solved" if breakdown.get("answer", 0.0) >= 1.0 else "not solved", style="bold")
    console.print(json.dumps(breakdown, indent=1), markup=False)
    if breakdown:
        rows = [("term", "value", "meaning")]
        rows += [(key, f"{value:.3f}", explain_key(key)) for key, value in breakdown.items()]
        console.print(_aligned(rows), markup=False)
    weights = getattr(env.unwrapped, "reward_weights", None) or {}
    if weights:
        console.print(f"reward = answer + shaping with weights {json.dumps(weights)} (paid only when submitted, "
                      f"capped so a wrong answer never beats a right one)", markup=False)
    else:
        console.print("reward = answer (no shaping weights set; the other terms are diagnostics)")
    # The episode is over: the gold answer and solution are shown to the person who played it.
    task = env.unwrapped.task
    if task is not None:
        console.print("[bold]gold answer:[/]")
        console.print(json.dumps(task.answer, ensure_ascii=False, default=str), markup=False)
        if task.solution:
            console.print("[bold]solution:[/]")
            for call in task.solution:
                console.print("  " + _format_call(call, tools), markup=False)


def play_session(env: Any, *, seed: int, task_id: str | None) -> None:
    """Play episodes of `env` at the terminal until the player quits or declines the next task."""
    console = Console(highlight=False, soft_wrap=True)
    _enable_line_editing()
    inner = env.unwrapped
    code = bool(getattr(inner, "code", False))
    options: dict[str, Any] | None = {"task_id": task_id} if task_id else None
    observation, info = env.reset(seed=seed, options=options)
    while True:
        tools = {spec.name: spec for spec in map(ToolSpec.from_schema, info["tools"])}
        console.print(f"[bold]task {info['task_id']}[/] ({info['family']}, {info['difficulty']}, "
                      f"{info.get('split')})")
        console.print(observation, markup=False)
        console.print(f"[dim]tools: {', '.join(tools)}; :help for how to type a call[/]")
        finished = _play_episode(console, env, tools, code=code)
        if finished is None:
            return
        _show_end(console, env, *finished)
        try:
            again = click.confirm("play the next task?", default=True)
        except click.Abort:
            again = False
        if not again:
            return
        observation, info = env.reset()


def _play_episode(console: Console, env: Any, tools: dict[str, ToolSpec], *,
                  code: bool) -> tuple[float, bool, bool, dict[str, Any]] | None:
    """One episode's turns; the final (reward, terminated, truncated, info), or None when the player quits."""
    max_turns = env.unwrapped.max_turns
    turn = 0
    while True:
        try:
            line = click.prompt(f"turn {turn + 1}/{max_turns}", prompt_suffix="> ", default="",
                                show_default=False)
        except (EOFError, click.Abort):
            console.print()
            return None
        command = line.strip()
        if command in (":quit", ":q", ":exit"):
            return None
        if command in (":help", ":h", "?"):
            console.print(HELP, markup=False)
            continue
        if command == ":tools":
            console.print(tools_table(tools), markup=False)
            continue
        if command.startswith(":"):
            console.print(f"unknown command {command!r}; commands: :help, :tools, :quit (no turn used)",
                          style="red", markup=False)
            continue
        try:
            action = parse_line(line, tools, code=code)
        except LocalMistake as mistake:
            if command:
                console.print(f"{mistake} (no turn used)", style="red", markup=False)
            continue
        observation, reward, terminated, truncated, info = env.step(action)
        turn = int(info.get("turn", turn + 1))
        console.print(observation, markup=False)
        if terminated or truncated:
            return reward, terminated, truncated, info


def run_play(env_id: str, seed: int, task_id: str | None, env_args: tuple[str, ...]) -> None:
    """The `agentgym play` command: make the env, check `task_id`, and play."""
    from agentgym.cli import did_you_mean, make_env

    env = make_env(env_id, env_args)
    try:
        if task_id is not None:
            ids = [task.id for task in env.unwrapped.task_set]
            if task_id not in ids:
                raise click.BadParameter(f"{env_id} has no task {task_id!r}{did_you_mean(task_id, ids)} "
                                         f"({len(ids)} tasks, e.g. {', '.join(ids[:3])}; `agentgym info {env_id}` "
                                         f"lists families)", param_hint="--task-id")
        play_session(env, seed=seed, task_id=task_id)
    finally:
        env.close()
