"""The TRL adapter: an agentgym env as a `GRPOTrainer(environment_factory=...)` class, and its task dataset.

```python
from trl import GRPOConfig, GRPOTrainer
from agentgym_baselines.adapter import environment_factory, task_dataset

trainer = GRPOTrainer(model, args=GRPOConfig(...), train_dataset=task_dataset("SQL-v0", split="train"),
                      environment_factory=environment_factory("SQL-v0"))
```

TRL makes one instance per rollout and turns every public method into a tool, building its JSON schema from the
method's signature and Google-style docstring. So the class made here has exactly one public method per env
tool, with the tool's parameters (pydantic-model parameters flattened into primitive ones), plus `reset(**row)`
and `get_reward()`. Each call is one `env.step`, so the env's own validation, error messages, turn limit and
verifier apply unchanged. A call the env reports as an error raises `ToolCallFailed` carrying the env's message,
which TRL shows to the model and counts in `tools/failure_frequency`.

The prompt trained on is the prompt graded: `reset(**row)` resets the env to the row's task with the row's seed
(`episode_seed`: the `seed` column, else one derived from the task id, so two resets of one row give one prompt)
and returns the env's own prompt for that episode, which TRL appends to the row's (empty) user message. An env
that renders its prompt per episode (ClinicalQA-v0 shuffles the answer options with the seed) is thus trained on
exactly what it grades. TRL repeats a row once per rollout of its group, so a group shares one prompt. A dataset
row whose user message already holds text must hold exactly the env's prompt (nothing is appended then); any
other text is refused, since the model would be trained on a prompt the env does not grade.

CodeAct (`codeact=True`): the only tool is `execute_code(code)`, and the model may also write a ```python block
(see `agentgym_baselines.codeact`). The block runs in a sandbox (never in the trainer's process) where each env
tool is a stub function; the stubs reach the host only as JSON data, and each call is one `env.step`. The same
holds for every env, including envs with their own code mode: the prompt names exactly the functions that
exist in the block's namespace.
"""

from __future__ import annotations

import copyreg
import enum
import inspect
import json
import re
import types
import typing
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Union

import gymnasium as gym
import pydantic

from agentgym.actions import CODE_TOOL
from agentgym.diagnosis import CallRecord, TurnRecord, label_turns
from agentgym.env import CODE_SYSTEM_SUFFIX, ToolEnv
from agentgym.rollout import episode_success
from agentgym.tools import Tool
from agentgym_baselines.credit import Invocation


class ToolCallFailed(Exception):
    """A tool call the env answered with an error observation; the message is the env's text."""


class EpisodeOver(ToolCallFailed):
    """A tool was called after the episode ended (the answer was submitted or the turn limit was reached)."""


# ----------------------------------------------------------------------------------------- type flattening
_JSON_SCALARS = (int, float, str, bool, type(None))


def primitive_annotation(annotation: Any) -> Any:
    """The nearest type hint that `transformers.utils.get_json_schema` can describe.

    Basic types, `Any`, `Literal`, `Enum`, unions, `list`, `tuple` and `dict` of those are kept; a pydantic model
    nested inside a container becomes `dict`; any other class becomes `str`.
    """
    if annotation is Any or annotation in (int, float, str, bool, type(None), list, dict):
        return annotation
    if annotation is tuple:
        return list
    origin = typing.get_origin(annotation)
    arguments = typing.get_args(annotation)
    if origin is typing.Annotated:
        return primitive_annotation(arguments[0])
    if origin is Literal:
        return annotation if all(type(value) in _JSON_SCALARS for value in arguments) else str
    if origin is Union or origin is types.UnionType:
        kept = tuple(dict.fromkeys(primitive_annotation(argument) for argument in arguments))
        return kept[0] if len(kept) == 1 else Union[kept]  # noqa: UP007 (a runtime-built union)
    if origin in (list, set, frozenset, Sequence):
        return list[primitive_annotation(arguments[0])] if arguments else list  # type: ignore[misc]
    if origin is tuple:
        items = [argument for argument in arguments if argument is not ...]
        if items and len(set(items)) == 1:
            return list[primitive_annotation(items[0])]  # type: ignore[misc]
        return list
    if origin in (dict, Mapping):
        if len(arguments) == 2:
            return dict[str, primitive_annotation(arguments[1])]  # type: ignore[misc]
        return dict
    if inspect.isclass(annotation) and issubclass(annotation, enum.Enum):
        if all(type(member.value) in _JSON_SCALARS for member in annotation):
            return annotation
        return str
    if inspect.isclass(annotation) and issubclass(annotation, pydantic.BaseModel):
        return dict
    return str


def _model_in(annotation: Any) -> tuple[type[pydantic.BaseModel] | None, bool]:
    """(the pydantic model `annotation` is, or is optionally, and whether None is allowed)."""
    if inspect.isclass(annotation) and issubclass(annotation, pydantic.BaseModel):
        return annotation, False
    if typing.get_origin(annotation) in (Union, types.UnionType):
        arguments = typing.get_args(annotation)
        others = [argument for argument in arguments if argument is not type(None)]
        if len(others) == 1 and inspect.isclass(others[0]) and issubclass(others[0], pydantic.BaseModel):
            return others[0], len(others) < len(arguments)
    return None, False


@dataclass(frozen=True)
class FlatParameter:
    """One primitive parameter of an adapter method, and where its value goes in the tool's arguments."""

    name: str
    annotation: Any
    description: str
    required: bool
    default: Any = None
    path: tuple[str, ...] = ()  # (tool parameter,) or (tool parameter, model field)


@dataclass(frozen=True)
class FlatSignature:
    """A tool's parameters flattened to primitives, with the way back to the nested arguments the tool takes."""

    tool: Tool
    parameters: list[FlatParameter] = field(default_factory=list)

    def nest(self, flat: Mapping[str, Any]) -> dict[str, Any]:
        """Rebuild the tool's arguments from flat keyword arguments. Unknown names pass through (the env reports
        them as unexpected arguments, naming the accepted ones)."""
        by_name = {parameter.name: parameter for parameter in self.parameters}
        arguments: dict[str, Any] = {}
        for name, value in flat.items():
            parameter = by_name.get(name)
            if parameter is None or len(parameter.path) == 1:
                arguments[name if parameter is None else parameter.path[0]] = value
                continue
            outer, inner = parameter.path
            if value is None and not parameter.required:
                continue
            nested = arguments.setdefault(outer, {})
            if isinstance(nested, dict):
                nested[inner] = value
        return arguments

    def flatten(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The flat keyword arguments of a call given as the tool's (nested) arguments: the inverse of `nest`."""
        flat: dict[str, Any] = {}
        for parameter in self.parameters:
            outer = arguments.get(parameter.path[0])
            if len(parameter.path) == 1:
                if parameter.path[0] in arguments:
                    flat[parameter.name] = outer
            elif isinstance(outer, Mapping) and parameter.path[1] in outer:
                flat[parameter.name] = outer[parameter.path[1]]
        return flat

    def docstring(self) -> str:
        """Google-style docstring: the tool's description and one `Args:` line per flat parameter."""
        lines = [self.tool.description.strip() or self.tool.name]
        if self.parameters:
            lines += ["", "Args:"]
            for parameter in self.parameters:
                text = re.sub(r"\s+", " ", parameter.description).strip() or f"The {parameter.name}."
                lines.append(f"    {parameter.name}: {text}")
        return "\n".join(lines)

    def signature(self) -> inspect.Signature:
        parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        ordered = [p for p in self.parameters if p.required] + [p for p in self.parameters if not p.required]
        for parameter in ordered:
            parameters.append(inspect.Parameter(
                parameter.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=parameter.annotation,
                default=inspect.Parameter.empty if parameter.required else parameter.default,
            ))
        return inspect.Signature(parameters, return_annotation=str)


def _json_default(value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return None
    return value


def flatten_tool(tool: Tool) -> FlatSignature:
    """The primitive parameters an adapter method exposes for `tool`.

    A parameter whose type is a pydantic model becomes one parameter per model field, named after the field
    (or `PARAMETER_FIELD` when that name is taken); its description is the field's.
    """
    fields = tool.arguments_model.model_fields
    taken = set(fields)
    flat: list[FlatParameter] = []
    for name, info in fields.items():
        model, nullable = _model_in(info.annotation)
        required = info.is_required()
        if model is None:
            flat.append(FlatParameter(name, primitive_annotation(info.annotation), info.description or "",
                                      required, None if required else _json_default(info.default), (name,)))
            continue
        for inner_name, inner in model.model_fields.items():
            flat_name = inner_name if inner_name not in taken else f"{name}_{inner_name}"
            taken.add(flat_name)
            inner_required = required and not nullable and inner.is_required()
            description = inner.description or f"The {inner_name} of {name}."
            flat.append(FlatParameter(flat_name, primitive_annotation(inner.annotation), description,
                                      inner_required, None if inner_required else _json_default(inner.default),
                                      (name, inner_name)))
    return FlatSignature(tool, flat)


def flat_schema(tool: Tool) -> dict[str, Any]:
    """The env's OpenAI schema of `tool` with model parameters flattened, as the adapter exposes it."""
    properties: dict[str, Any] = {}
    signature = flatten_tool(tool)
    schema_properties = tool.parameters_schema.get("properties", {})
    definitions = tool.parameters_schema.get("$defs", {})
    for parameter in signature.parameters:
        if len(parameter.path) == 1:
            properties[parameter.name] = schema_properties.get(parameter.name, {})
        else:
            outer = schema_properties.get(parameter.path[0], {})
            reference = outer.get("$ref") or next(
                (item.get("$ref") for item in outer.get("anyOf", []) if "$ref" in item), None)
            model_schema = definitions.get(str(reference).rsplit("/", 1)[-1], {}) if reference else {}
            properties[parameter.name] = model_schema.get("properties", {}).get(parameter.path[1], {})
    required = [parameter.name for parameter in signature.parameters if parameter.required]
    return {"name": tool.name, "description": tool.description,
            "parameters": {"type": "object", "properties": properties, "required": required}}


# ----------------------------------------------------------------------------------------- episode seeds
SEED_COLUMN = "seed"  # the dataset column holding a row's episode seed


def episode_seed(task_id: str, seed: Any = None) -> int:
    """The env seed of a row's episode: the row's `seed` when it has one, else a stable one from its task id
    (the same in every process and run, unlike `hash`)."""
    if seed is not None:
        return int(seed)
    import zlib

    return zlib.crc32(task_id.encode("utf-8"))


def row_seed(base: int, task_id: str) -> int:
    """The `seed` column `task_dataset` writes for a task: fixed by the run's seed and the task."""
    import zlib

    return zlib.crc32(f"{base}:{task_id}".encode())


def shown_prompt(row: Mapping[str, Any], returned: str | None) -> list[dict[str, Any]]:
    """The chat prompt a rollout of `row` is generated from, as TRL builds it: the row's prompt with the text
    `reset(**row)` returned appended to its last message (rollouts outside TRL use this to stay identical)."""
    prompt = [dict(message) for message in row["prompt"]]
    if returned:
        prompt[-1]["content"] = str(prompt[-1].get("content") or "") + returned
    return prompt


def _row_user_text(row: Mapping[str, Any]) -> str:
    """The text of a dataset row's last user message ("" when it has none)."""
    prompt = row.get("prompt")
    if not isinstance(prompt, list) or not prompt or not isinstance(prompt[-1], Mapping):
        return ""
    content = prompt[-1].get("content")
    return content if isinstance(content, str) else ""


# ----------------------------------------------------------------------------------------- the env class
class _EnvironmentClassMeta(type):
    """Metaclass of adapter classes, so that a class made at run time pickles (by how to rebuild it)."""


class AgentGymEnvironment(metaclass=_EnvironmentClassMeta):
    """Base of the classes `environment_factory` makes. One instance runs one episode at a time.

    Only `reset`, `get_reward` and the generated tool methods are public: TRL exposes every other public
    method as a tool. Instances pickle as a fresh, not yet reset environment.
    """

    _env_id: ClassVar[str] = ""
    _env_kwargs: ClassVar[dict[str, Any]] = {}
    _codeact: ClassVar[bool] = False
    _code_options: ClassVar[dict[str, Any]] = {}
    _signatures: ClassVar[dict[str, FlatSignature]] = {}
    _remote: ClassVar[str | None] = None        # an `agentgym serve` URL: the episodes run there
    _remote_token: ClassVar[str | None] = None
    _catalog: ClassVar[Any] = None              # the local TaskSet (remote only: the env itself is not here)
    _output_limit: ClassVar[int] = 8000

    def __init__(self) -> None:
        if not self._env_id:
            raise TypeError("make an adapter class with agentgym_baselines.adapter.environment_factory(ENV_ID)")
        self._tool_env: ToolEnv | None = None  # the local env; None when the episodes run on a server
        if self._remote is not None:
            self._env: gym.Env[Any, Any] = gym.make(self._env_id, remote=self._remote,
                                                    remote_token=self._remote_token)
        else:
            self._env = gym.make(self._env_id, **self._env_kwargs)
            if not isinstance(self._env.unwrapped, ToolEnv):
                raise TypeError(f"{self._env_id} is not an agentgym ToolEnv (got {type(self._env.unwrapped).__name__})")
            self._tool_env = self._env.unwrapped
        self._code_runner: Any = None
        if self._codeact:
            from agentgym_baselines.codeact import SandboxCodeRunner

            self._code_runner = SandboxCodeRunner(code_stubs(self._signatures), **self._code_options,
                                                  output_limit=self._output_limit)
        # The env and the code sandbox are released when this instance goes away (TRL never closes them). The list
        # holds the env in use: a remote one is replaced when the server has closed its session.
        self._open_envs: list[gym.Env[Any, Any]] = [self._env]
        weakref.finalize(self, _close_episode_resources, self._open_envs, self._code_runner)
        self._task_id: str | None = None
        self._seed: int | None = None
        self._prompt = ""  # the env's prompt of the current episode (what the model is shown and trained on)
        self._started = False
        self._done = False
        self._submitted = False
        self._reward = 0.0
        self._calls: dict[str, int] = {}
        self._failures: dict[str, int] = {}
        self._invocations = 0  # calls of the public tool methods (what TRL made), for the trainer's cut counts
        self._invocation_log: list[Invocation] = []  # the same calls with their env steps, for turn labels
        self._step_records: list[TurnRecord] = []   # what this side saw of each env step (remote fallback)
        self._diagnosis: dict[str, Any] | None = None  # the final info's diagnosis
        self._env_turns = 0
        self._success = False  # the episode ended with a submission the verifier accepted (`episode_success`)
        self._curriculum: Any = None  # the CurriculumStream the row was drawn from, until the outcome is reported

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return type(self), ()

    # --------------------------------------------------------------------------------- TRL's interface
    def reset(self, **row: Any) -> str | None:
        """Start the episode of the row's task and return the env's prompt for it (TRL appends it to the row's
        user message; None when that message already is this prompt). `row` is a dataset row with a `task_id`."""
        if "task_id" not in row:
            raise KeyError("the dataset row has no 'task_id' column; build the dataset with "
                           "agentgym_baselines.adapter.task_dataset(ENV_ID, split=...)")
        task_id = str(row["task_id"])
        self._tasks().get(task_id)  # an unknown id fails here, not at the first tool call
        self._task_id = task_id
        self._seed = episode_seed(task_id, row.get(SEED_COLUMN))
        self._started, self._done, self._submitted, self._reward = False, False, False, 0.0
        self._calls, self._failures, self._invocations = {}, {}, 0
        self._invocation_log, self._step_records, self._diagnosis, self._env_turns = [], [], None, 0
        self._success, self._curriculum, self._infra_error = False, None, False
        if "curriculum" in row:  # a row drawn by a curriculum (task_dataset(..., sampler=...)): report back to it
            from agentgym_baselines.task_stream import DRAW_COLUMN, stream_of

            self._curriculum = stream_of(row)
            if self._curriculum is not None:
                self._curriculum.started(int(row[DRAW_COLUMN]))
        if self._code_runner is not None:
            self._code_runner.reset()
        self._prompt = self._begin()
        shown = _row_user_text(row)
        if not shown:
            return self._prompt
        if shown != self._prompt:
            raise ValueError(f"the dataset row of task {task_id!r} carries a prompt that differs from the one "
                             f"{self._env_id} gives this episode (seed {self._seed}); the model would be trained "
                             "on a prompt the env does not grade. Build the dataset with "
                             "agentgym_baselines.adapter.task_dataset, whose user message is left for reset() "
                             "to fill")
        return None

    def get_reward(self) -> float:
        """The verifier's score of the episode (with the env's reward weights); 0.0 if nothing was submitted.

        TRL calls it once per finished rollout; for a row drawn by a curriculum, the first call also reports the
        episode's success and diagnosis to the curriculum (an episode the trainer ended counts as a failure)."""
        if self._curriculum is not None and self._task_id is not None:
            curriculum, self._curriculum = self._curriculum, None
            curriculum.finished(self._task_id, self._success, self._diagnosis)
        return self._reward if self._done else 0.0

    # --------------------------------------------------------------------------------- helpers (private)
    def _step(self, name: str, arguments: dict[str, Any]) -> str:
        """One env step for one tool call; raises `ToolCallFailed` with the env's message on an error."""
        self._begin()
        if self._done:
            raise EpisodeOver("the episode is over (the answer was submitted or the turn limit was reached); "
                              "do not call more tools")
        self._calls[name] = self._calls.get(name, 0) + 1
        if self._invocation_log:
            self._invocation_log[-1].steps.append(len(self._step_records))
        observation, reward, terminated, truncated, info = self._env.step({"name": name, "arguments": arguments})
        self._env_turns = int(info.get("turn", self._env_turns + 1))
        failed = "call_error" in info
        self._step_records.append(TurnRecord(calls=[CallRecord(name, arguments, "tool_error" if failed else None,
                                                               bool(terminated))]))
        if terminated or truncated:
            self._done, self._submitted, self._reward = True, bool(terminated), float(reward)
            self._diagnosis = info.get("diagnosis")
            self._infra_error = bool(info.get("infra_error"))  # not the policy's doing: a trainer may drop it
            self._success = episode_success(info.get("reward_breakdown", {}), terminated=bool(terminated))
            if self._invocation_log:
                self._invocation_log[-1].ended = True
        if failed:
            self._failures[name] = self._failures.get(name, 0) + 1
            raise ToolCallFailed(observation)
        return str(observation)

    def _record_invocation(self, name: str, arguments: dict[str, Any]) -> Invocation:
        """Log one call of a public tool method (as TRL made it) before it runs."""
        self._invocations += 1
        invocation = Invocation(name, dict(arguments), after_end=self._done)
        self._invocation_log.append(invocation)
        return invocation

    def _step_labels(self) -> list[str]:
        """One diagnosis label per env step of the episode so far: the final info's when the episode ended, else
        the env's own record (local) or this side's record of each call's error (remote, unfinished)."""
        if self._diagnosis is not None:
            return list(self._diagnosis.get("turns", []))
        if self._tool_env is not None and self._started:
            env = self._tool_env
            return label_turns(env._turn_records, env.answer_tools())
        return label_turns(self._step_records)

    def _code_call(self, name: str, arguments: dict[str, Any]) -> str:
        """One tool call made from a CodeAct block (read from the sandbox as data: a name and JSON values)."""
        return self._step(name, self._signatures[name].nest(arguments))

    def _begin(self) -> str:
        """Reset the env to the recorded task with the episode's seed (at `reset`); returns the env's prompt."""
        if self._task_id is None:
            raise RuntimeError("reset(task_id=...) must be called before any tool")
        if not self._started:
            options = {"task_id": self._task_id}
            try:
                prompt, _ = self._env.reset(seed=self._seed, options=options)
            except (ConnectionError, RuntimeError):
                if self._remote is None:
                    raise
                # The server closes a session left idle (its idle timeout; an instance of a rarely drawn env of a
                # mix can wait that long between episodes): start a new session, once, and reset there.
                self._reconnect()
                prompt, _ = self._env.reset(seed=self._seed, options=options)
            self._prompt = str(prompt)
            self._started = True
        return self._prompt

    def _reconnect(self) -> None:
        """Replace the remote env by a new session on the same server."""
        old = self._env
        self._env = gym.make(self._env_id, remote=self._remote, remote_token=self._remote_token)
        self._open_envs[:] = [self._env]
        old.close()

    def _tasks(self) -> Any:
        """The env's TaskSet (for a remote env, the local copy the dataset was built from)."""
        return self._tool_env.task_set if self._tool_env is not None else self._catalog

    def _task(self) -> Any:
        """The current row's task (gold answer included): for trainers only, never shown to the student."""
        return None if self._task_id is None else self._tasks().get(self._task_id)

    def _episode_stats(self) -> dict[str, Any]:
        return {"calls": dict(self._calls), "failures": dict(self._failures), "submitted": self._submitted,
                "reward": self._reward if self._done else 0.0, "success": self._success,
                "env_turns": self._env_turns if self._started else 0,
                "infra_error": getattr(self, "_infra_error", False)}


def _close_episode_resources(envs: list[gym.Env[Any, Any]], code_runner: Any) -> None:
    for env in envs:
        env.close()
    if code_runner is not None:
        code_runner.close()


def code_stubs(signatures: Mapping[str, FlatSignature]) -> list[Any]:
    """The env's tools as CodeAct stub specs: flat parameters, required ones first (the call order)."""
    from agentgym_baselines.codeact import StubSpec

    stubs = []
    for name, signature in signatures.items():
        required = [p.name for p in signature.parameters if p.required]
        optional = [p.name for p in signature.parameters if not p.required]
        stubs.append(StubSpec(name=name, doc=signature.docstring(), parameters=tuple(required + optional),
                              required=len(required)))
    return stubs


def _make_tool_method(signature: FlatSignature) -> Callable[..., str]:
    name = signature.tool.name

    def call_tool(self: AgentGymEnvironment, **arguments: Any) -> str:
        invocation = self._record_invocation(name, arguments)
        try:
            return self._step(name, signature.nest(arguments))
        except ToolCallFailed:
            invocation.failed = True
            raise

    call_tool.__name__ = name
    call_tool.__qualname__ = name
    call_tool.__doc__ = signature.docstring()
    call_tool.__signature__ = signature.signature()  # type: ignore[attr-defined]
    call_tool.__annotations__ = {p.name: p.annotation for p in signature.parameters} | {"return": str}
    return call_tool


def _execute_code_method() -> Callable[..., str]:
    # `self` stays unannotated: transformers reads every annotated parameter into the tool schema.
    def execute_code(self, code: str) -> str:  # type: ignore[no-untyped-def]
        """Run a Python code block in a sandbox. The environment's tools are available in it as functions; print
        what you want to see.

        Args:
            code: Python source to run.
        """
        from agentgym_baselines.codeact import CodeRunFailed

        invocation = self._record_invocation(CODE_TOOL, {"code": code})
        self._begin()
        if self._done:
            invocation.failed = True
            raise EpisodeOver("the episode is over (the answer was submitted or the turn limit was reached); "
                              "do not run more code")
        self._calls[CODE_TOOL] = self._calls.get(CODE_TOOL, 0) + 1
        try:
            return str(self._code_runner.run(code, self._code_call))
        except CodeRunFailed as error:
            invocation.failed = True
            self._failures[CODE_TOOL] = self._failures.get(CODE_TOOL, 0) + 1
            raise ToolCallFailed(str(error)) from None

    return execute_code


_CLASSES: dict[tuple[str, bool, str, str, str | None, str | None], type[AgentGymEnvironment]] = {}


def _class_name(env_id: str) -> str:
    return re.sub(r"\W", "", env_id.split(":")[-1].replace("-", "_").title()) + "Environment"


def environment_factory(env_id: str, *, codeact: bool = False, code_sandbox: str = "auto",
                        allow_weak_isolation: bool = False, code_timeout: float | None = None,
                        remote: str | None = None, remote_token: str | None = None,
                        **env_kwargs: Any) -> type[AgentGymEnvironment]:
    """A class for `trl.GRPOTrainer(environment_factory=...)` that runs `env_id`'s episodes.

    Args:
        env_id: A registered agentgym env ("SQL-v0").
        codeact: Expose one `execute_code(code)` tool (CodeAct) instead of the env's tools.
        code_sandbox: CodeAct only: the sandbox backend the blocks run in ("auto", "docker", "local").
        allow_weak_isolation: CodeAct only: let "auto" use the local backend when no Docker daemon answers.
        code_timeout: CodeAct only: seconds of sandbox time per block (default 30).
        remote: An `agentgym serve` URL ("ws://host:port"): every episode runs on that server
            (`gymnasium.make(env_id, remote=remote)`), grading included. The tools and the task catalogue are read
            from the env made here with `env_kwargs`, which must then be the server's `--env-arg` values; the
            server's tools are checked against them.
        remote_token: The server's bearer token (default: `$AGENTGYM_SERVE_TOKEN`).
        **env_kwargs: Passed to `gymnasium.make(env_id, ...)` (tasks=, max_turns=, ...). Must be JSON-able, so
            the class can be rebuilt when unpickled.

    Returns:
        A class whose public methods are the env's tools (real signatures, Google-style docstrings),
        `reset(**row)` and `get_reward()`. The same arguments return the same class.
    """
    code_options: dict[str, Any] = {"backend": code_sandbox, "allow_weak_isolation": allow_weak_isolation}
    if code_timeout is not None:
        code_options["timeout"] = float(code_timeout)
    try:
        key = (env_id, codeact, json.dumps(env_kwargs, sort_keys=True), json.dumps(code_options, sort_keys=True),
               remote, remote_token)
    except TypeError as error:
        raise TypeError(f"environment_factory: env_kwargs must be JSON-able so the class can be pickled "
                        f"({error}); pass a task file path instead of Task objects") from None
    cached = _CLASSES.get(key)
    if cached is not None:
        return cached
    probe = gym.make(env_id, **env_kwargs)
    try:
        tool_env = probe.unwrapped
        if not isinstance(tool_env, ToolEnv):
            raise TypeError(f"{env_id} is not an agentgym ToolEnv (got {type(tool_env).__name__})")
        signatures = {name: flatten_tool(item) for name, item in tool_env.tools.items()}
        if remote is not None:
            check_remote_env(env_id, remote, remote_token, tool_env, env_kwargs)
    finally:
        probe.close()
    namespace: dict[str, Any] = {
        "_env_id": env_id, "_env_kwargs": dict(env_kwargs), "_codeact": codeact, "_signatures": signatures,
        "_code_options": code_options if codeact else {}, "_output_limit": tool_env.output_limit,
        "_remote": remote, "_remote_token": remote_token, "_catalog": tool_env.task_set if remote else None,
        "__module__": __name__,
        "__doc__": f"agentgym {env_id} as a TRL environment ({'CodeAct' if codeact else 'tool calls'}).",
    }
    reserved = {"reset", "get_reward"}
    if codeact:
        namespace[CODE_TOOL] = _execute_code_method()
    else:
        for name, signature in signatures.items():
            if name in reserved or name.startswith("_") or not name.isidentifier():
                raise ValueError(f"{env_id}: tool {name!r} cannot be a method name for TRL; rename the tool")
            namespace[name] = _make_tool_method(signature)
    cls = _EnvironmentClassMeta(_class_name(env_id) + ("CodeAct" if codeact else ""), (AgentGymEnvironment,),
                                namespace)
    _CLASSES[key] = cls  # type: ignore[assignment]
    return cls  # type: ignore[return-value]


def _rebuild_class(env_id: str, codeact: bool, env_kwargs: dict[str, Any],
                   code_options: dict[str, Any] | None = None, remote: str | None = None,
                   remote_token: str | None = None) -> type[AgentGymEnvironment]:
    options = dict(code_options or {})
    return environment_factory(env_id, codeact=codeact, code_sandbox=options.get("backend", "auto"),
                               allow_weak_isolation=bool(options.get("allow_weak_isolation", False)),
                               code_timeout=options.get("timeout"), remote=remote, remote_token=remote_token,
                               **env_kwargs)


def _reduce_class(cls: Any) -> Any:
    if not cls._env_id:
        return cls.__qualname__  # the base class pickles by name
    return _rebuild_class, (cls._env_id, cls._codeact, dict(cls._env_kwargs), dict(cls._code_options),
                            cls._remote, cls._remote_token)


copyreg.pickle(_EnvironmentClassMeta, _reduce_class)


# ----------------------------------------------------------------------------------------- remote envs
def _server_get(env_id: str, url: str, token: str | None, route: str) -> Any:
    """GET `route` of the `agentgym serve` server at `url` (checked to serve `env_id`), as JSON."""
    import os

    import httpx

    from agentgym.serving.remote import TOKEN_VARIABLE, RemoteEnvError, check_server

    health = check_server(url, token=token)  # one line naming the URL when it is not there or refuses the token
    served = str(health.get("env", ""))
    if served.split(":")[-1] != env_id.split(":")[-1]:
        raise RemoteEnvError(f"the server at {url} serves {served!r}, not {env_id!r}")
    if route == "/health":
        return health
    from agentgym.serving.remote import server_urls  # the serving module's one reading of a server address

    http_url = server_urls(url)[0]
    token = token if token is not None else os.environ.get(TOKEN_VARIABLE) or None
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        response = httpx.get(http_url + route, headers=headers, timeout=30)
    except httpx.HTTPError as error:
        raise RemoteEnvError(f"{http_url}{route} did not answer ({error})") from None
    if response.status_code != 200:
        raise RemoteEnvError(f"{http_url}{route} answered HTTP {response.status_code}; serve the env with an "
                             f"agentgym as recent as this one")
    return response.json()


def check_remote_env(env_id: str, url: str, token: str | None, local: ToolEnv, env_kwargs: Mapping[str, Any]) -> None:
    """Raise ValueError unless the server at `url` was started with `env_kwargs` as its env arguments (those it
    shows; secrets are hidden) and serves the tools (names and parameters) of `local`."""
    served_args = _server_get(env_id, url, token, "/health").get("data", {}).get("env_args", {})
    shown = {key: value for key, value in served_args.items() if value != "<hidden>"}
    ours = {key: value for key, value in json.loads(json.dumps(dict(env_kwargs))).items() if key in shown or
            key not in served_args}
    if ours != shown:
        given = " ".join(f"--env-arg {key}={json.dumps(value)}" for key, value in shown.items()) or "no --env-arg"
        raise ValueError(f"the server at {url} runs {env_id} with {given}, but the env arguments given here are "
                         f"{dict(env_kwargs) or 'none'}; pass the server's (--env-arg KEY=VALUE) so the tools and "
                         f"tasks read here are the server's")
    served = {item.get("function", item).get("name"): item.get("function", item)
              for item in _server_get(env_id, url, token, "/schema").get("tools", [])}

    def parameters(schema: Mapping[str, Any]) -> list[str]:
        return sorted(schema.get("parameters", {}).get("properties", {}))

    ours = {name: parameters(schema.get("function", schema)) for name, schema in
            ((tool_schema.get("function", tool_schema).get("name"), tool_schema) for tool_schema in local.tool_schemas)}
    theirs = {name: parameters(schema) for name, schema in served.items()}
    if ours != theirs:
        differ = sorted(name for name in set(ours) | set(theirs) if ours.get(name) != theirs.get(name))
        raise ValueError(f"the server at {url} serves {env_id} with other tools than the local one (they differ in "
                         f"{', '.join(map(str, differ))}); install the same agentgym version on both sides and pass "
                         f"the server's --env-arg values as the env arguments here")


def check_remote_tasks(env_id: str, url: str, token: str | None, local: ToolEnv) -> None:
    """Raise ValueError unless the server at `url` serves the tasks of `local` (ids, families and splits, from
    its `/tasks`) with the same prompt (the first task's, from a reset there)."""
    listing = _server_get(env_id, url, token, "/tasks").get("tasks", [])
    theirs = sorted((str(item.get("id")), str(item.get("family")), str(item.get("split"))) for item in listing)
    ours = sorted((task.id, task.family, task.split) for task in local.task_set)
    if ours != theirs:
        differ = len(set(ours) ^ set(theirs))
        raise ValueError(f"the server at {url} serves other {env_id} tasks than the local env ({len(theirs)} there, "
                         f"{len(ours)} here, {differ} differ); pass the server's --env-arg values as the env "
                         f"arguments here, or install the same agentgym version and data on both sides")
    first = next(iter(local.task_set), None)
    if first is None:
        return
    session = gym.make(env_id, remote=url, remote_token=token)
    seed = episode_seed(first.id)
    try:
        prompt, _ = session.reset(seed=seed, options={"task_id": first.id})
    finally:
        session.close()
    if prompt != local.reset(seed=seed, options={"task_id": first.id})[0]:
        raise ValueError(f"the server at {url} has another prompt for task {first.id!r} than the local env; install "
                         f"the same agentgym version and data on both sides")


# ----------------------------------------------------------------------------------------- prompts and dataset
def python_signature(tool: Tool) -> str:
    """`name(arg: type, opt: type = default)` with the tool's first description line, for CodeAct prompts."""
    parts = []
    for parameter in flatten_tool(tool).parameters:
        annotation = parameter.annotation
        shown = annotation.__name__ if isinstance(annotation, type) else repr(annotation).replace("typing.", "")
        parts.append(f"{parameter.name}: {shown}" + ("" if parameter.required else f" = {parameter.default!r}"))
    summary = (tool.description.strip().splitlines() or [""])[0]
    return f"{tool.name}({', '.join(parts)})  # {summary}"


CODEACT_NAMESPACE_NOTE = (
    " The code runs in a sandbox with a persistent Python namespace for the episode. In it, these functions "
    "exist (also as `from tools import NAME`) and nothing else of the environment does; each returns the "
    "tool's result as text and raises `ToolError` with the environment's message when the call fails:\n")


def system_prompt(env: ToolEnv, *, codeact: bool = False) -> str:
    """The system message of a training prompt: the env's, plus in CodeAct exactly the functions that exist in
    the code's namespace (the env's tools as stubs, `ToolError`)."""
    text = env.system_prompt
    if not codeact:
        return text
    if CODE_SYSTEM_SUFFIX not in text:
        text += CODE_SYSTEM_SUFFIX
    functions = "\n".join(python_signature(item) for item in env.tools.values())
    return text + CODEACT_NAMESPACE_NOTE + functions


def task_dataset(env_id: str, split: str | None = "train", *, codeact: bool = False, limit: int | None = None,
                 remote: str | None = None, remote_token: str | None = None, sampler: Any = None,
                 sampler_options: Mapping[str, Any] | None = None, episode_seeds: int = 0, **env_kwargs: Any) -> Any:
    """A `datasets.Dataset` of `env_id`'s tasks: `prompt` (the system message and an empty user message, which
    the adapter's `reset` fills with the env's prompt of the episode), `task_id` and `seed` (the episode's env
    seed, fixed by `episode_seeds` and the task).

    With `sampler`, an endless `datasets.IterableDataset` instead, whose rows a curriculum draws as the trainer
    reads them, and which the adapter's environments tell each rollout's outcome (`task_stream`; the trainer
    needs `max_steps`).

    Args:
        env_id: A registered agentgym env.
        split: Keep tasks of this split; None keeps all.
        codeact: Write the CodeAct system prompt (functions callable from ```python blocks).
        limit: Keep the first `limit` tasks.
        remote: An `agentgym serve` URL the episodes will run on: the rows are built here (with `env_kwargs`, the
            server's `--env-arg` values), after checking that the server holds the same tasks.
        remote_token: The server's bearer token (default: `$AGENTGYM_SERVE_TOKEN`).
        sampler: A curriculum name (`agentgym.curriculum.SAMPLERS`: "uniform", "mixed-outcome", ...) or a
            `TaskSampler` built over (some of) this split's tasks.
        sampler_options: `make_sampler` options when `sampler` is a name (`seed`, `group_size`, ...).
        episode_seeds: The run's seed, from which each row's episode seed is made (`seed=` is the env's own
            argument, passed on to `gymnasium.make`).
        **env_kwargs: Passed to `gymnasium.make` (use the same as for `environment_factory`).

    The gold answer is never in the dataset: the prompt is what the model may see.
    """
    from datasets import Dataset

    env = gym.make(env_id, **env_kwargs)
    try:
        tool_env = env.unwrapped
        if not isinstance(tool_env, ToolEnv):
            raise TypeError(f"{env_id} is not an agentgym ToolEnv (got {type(tool_env).__name__})")
        if remote is not None:
            check_remote_env(env_id, remote, remote_token, tool_env, env_kwargs)
            check_remote_tasks(env_id, remote, remote_token, tool_env)
        tasks = list(tool_env.task_set.filter(split=split))[:limit]
        system = system_prompt(tool_env, codeact=codeact)


        def row(task: Any) -> dict[str, Any]:
            return {"prompt": [{"role": "system", "content": system}, {"role": "user", "content": ""}],
                    "task_id": task.id, SEED_COLUMN: row_seed(episode_seeds, task.id)}

        if sampler is not None:
            from agentgym_baselines.task_stream import curriculum_dataset

            return curriculum_dataset(tasks, row, sampler, sampler_options)
        built = [row(task) for task in tasks]
        rows = {key: [item[key] for item in built] for key in ("prompt", "task_id", SEED_COLUMN)}
    finally:
        env.close()
    return Dataset.from_dict(rows)
