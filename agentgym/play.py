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
        try:
            tokens = shlex.split(rest)
        except ValueError as error:
            tokens = None
            # An unclosed quote where key=value or a quoted value starts is a typing slip, never a value to send;
            # an apostrophe inside free text for a one-argument tool ("Crohn's disease") is the text itself.
            keyed = rest.partition("=")[0] in spec.properties
            if keyed or rest[:1] in "'\"" or spec.single_argument is None:
                raise LocalMistake(f"an unclosed quote ({error}); close it, or type the call as JSON: {spec.usage()}") from None
        keyword = tokens is not None and all(
            token.partition("=")[1] and token.partition("=")[0] in (spec.properties or {token.partition("=")[0]})
            for token in tokens)
        if tokens is not None and keyword:
            arguments = {key: _value(value, spec.properties.get(key))
                         for key, _, value in (token.partition("=") for token in tokens)}
        elif rest and spec.single_argument is not None:
            # One argument: the rest of the line is its value (unquoted when it is a single quoted token).
            name = spec.single_argument
            arguments = {name: _value(tokens[0], spec.properties.get(name)) if tokens is not None and len(tokens) == 1
                         else rest}
        else:
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
