"""`ToolEnv`: the Gymnasium environment every agentgym domain is built on.

One episode is one task. `reset` picks the task and returns its prompt; each `step` takes what the model
produced, runs the tool calls in it, and returns their rendered results. The episode ends when a terminal
tool (`submit`) is called; `max_turns` truncates it. Malformed actions never raise: they become error
observations and count as a turn. A grader that raises, or returns something other than a finite score, never
raises out of `step` either: the episode ends with reward 0 and the `grader_error` diagnosis (`infra_error` when
the grader raised `agentgym.errors.InfrastructureError`), and `info` says why (docs/diagnosis.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym

from agentgym.actions import CODE_TOOL, ActionParser, ParsedAction, ToolCall, parse_action
from agentgym.answers import answer_schema
from agentgym.diagnosis import GRADER_ERROR, INFRA_ERROR, CallRecord, TurnRecord, diagnose
from agentgym.errors import InfrastructureError
from agentgym.feedback import AgentView, Feedback, FeedbackStats, Hint, check_mode, no_feedback_state
from agentgym.rewards import Score, check_weights, combine, verify
from agentgym.spaces import UnicodeText
from agentgym.tasks import Task, TaskSet
from agentgym.tools import (
    DEFAULT_OUTPUT_LIMIT,
    Tool,
    ToolError,
    ToolOutcome,
    as_tool,
    cap_text,
    submit,
    with_answer_schema,
)

DEFAULT_SYSTEM_PROMPT = (
    "You are an agent that solves tasks by calling tools. Call one or more tools per turn; you will see their "
    "results. When you have the final answer, call `submit` with it."
)
CODE_SYSTEM_SUFFIX = " You may also write a ```python code block; it runs and you see its output."

GRADER_REASON_LIMIT = 300  # characters of a grader's error kept in `info["grader_error"]`


class GraderOutputError(Exception):
    """A grader returned something that is not a score: not a `Score`, or one whose components are not finite
    numbers. The episode is a `grader_error`, as if the grader had raised."""


@dataclass(frozen=True)
class GradingFailure:
    """Why an episode could not be graded: `reason` is "Type: message" (cut to `GRADER_REASON_LIMIT`), and
    `infrastructure` says whether the grader blamed the infrastructure (`agentgym.errors.InfrastructureError`)."""

    reason: str
    infrastructure: bool

    @classmethod
    def of(cls, error: BaseException) -> GradingFailure:
        reason = f"{type(error).__name__}: {error}"
        if len(reason) > GRADER_REASON_LIMIT:
            reason = reason[: GRADER_REASON_LIMIT - 3] + "..."
        return cls(reason, isinstance(error, InfrastructureError))

    @property
    def label(self) -> str:
        return INFRA_ERROR if self.infrastructure else GRADER_ERROR


def checked_score(result: Any) -> Score:
    """`result` when it is a `Score` whose components are all finite numbers; else `GraderOutputError`. A `Score`'s
    value is finite and in [0, 1] by construction (`agentgym.rewards.Score`)."""
    if not isinstance(result, Score):
        raise GraderOutputError(f"the verifier returned {type(result).__name__}, not a Score")
    for name, value in result.components.items():
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            raise GraderOutputError(f"the verifier's component {str(name)[:60]!r} is {str(value)[:60]!r}, "
                                    "not a finite number")
    return result


class ToolEnv(gym.Env[str, Any]):
    """A multi-turn tool-use environment over a set of verifiable tasks.

    Args:
        tasks: A list of `Task`, a `TaskSet`, or the path of a JSONL task file.
        tools: `Tool`s (or typed functions) the agent may call. A `submit(answer)` tool is added when none of
            them is terminal.
        split: Keep only tasks of this split ("train", "test", ...).
        families: Keep only tasks of these families (a list, or one comma-separated string).
        difficulty: Keep only tasks of these difficulty levels ("easy", "medium", "hard"; a list or a
            comma-separated string), e.g. `gym.make("SQL-v0", split="test", difficulty="hard")`.
        max_turns: Turns (actions) before the episode is truncated.
        code: Accept CodeAct ```python blocks, run by `execute_code`.
        reward_weights: Weights of shaping components added to the reward (default: none; reward = verifier).
            Shaping is paid only to submitted episodes and capped at half the answer's weight
            (`agentgym.rewards.combine`); success is always the verifier's score alone.
        system_prompt: The system message of the conversation.
        output_limit: Most characters of one tool result the agent sees.
        parser: Replaces `agentgym.actions.parse_action`.
        render_mode: "ansi" (returns the transcript) or "human" (prints it).
        feedback: "none" (default: observations as they are), "hints" (recovery hints appended to error
            observations) or "adaptive" (the amount of hints per family follows its finished episodes); see
            docs/feedback.md. Hints never carry gold data.
        feedback_stats: A `FeedbackStats` shared between envs (feedback="adaptive" only); default: the env's own.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"]}  # noqa: RUF012 (Gymnasium's convention)

    def __init__(
        self,
        tasks: TaskSet | Sequence[Task] | str | Path,
        tools: Sequence[Tool | Any] = (),
        *,
        split: str | None = None,
        families: Sequence[str] | None = None,
        difficulty: Sequence[str] | str | None = None,
        max_turns: int = 20,
        code: bool = False,
        reward_weights: Mapping[str, float] | None = None,
        system_prompt: str | None = None,
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
        parser: ActionParser | None = None,
        render_mode: str | None = None,
        feedback: str = "none",
        feedback_stats: FeedbackStats | None = None,
    ) -> None:
        if max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, got {max_turns}")
        if render_mode not in (None, "ansi", "human"):
            raise ValueError(f"render_mode must be None, 'ansi' or 'human', got {render_mode!r}")
        self.task_set = TaskSet.coerce(tasks).filter(split=split, families=families, difficulty=difficulty)
        self.tools: dict[str, Tool] = {}
        for candidate in tools:
            item = as_tool(candidate)
            if item.name in self.tools:
                raise ValueError(f"two tools are named {item.name!r}")
            self.tools[item.name] = item
        if not any(item.terminal for item in self.tools.values()):
            self.tools[submit.name] = submit
        self.max_turns = max_turns
        self.code = code
        self.reward_weights = check_weights(reward_weights)
        self.output_limit = output_limit
        self.parser = parser or parse_action
        self.render_mode = render_mode
        self.feedback = check_mode(feedback)
        if feedback_stats is not None and feedback != "adaptive":
            raise ValueError("feedback_stats is read only with feedback='adaptive'; drop it or set feedback='adaptive'")
        self._feedback = Feedback(feedback, feedback_stats) if feedback != "none" else None
        self.system_prompt = (system_prompt or DEFAULT_SYSTEM_PROMPT) + (CODE_SYSTEM_SUFFIX if code else "")
        self.tool_schemas: list[dict[str, Any]] = [item.schema for item in self.tools.values()]
        self.observation_space = UnicodeText()
        self.action_space = UnicodeText()
        self.task: Task | None = None
        self._info_task: Task | None = None
        self._info_head: dict[str, Any] = {}
        self.state: Any = None
        self._episode_open = False
        self._closed = False
        self._reset_counters()

    # ----------------------------------------------------------------- override points for domain envs
    def begin_episode(self, task: Task) -> Any:
        """Build the state tools receive for `task` (a connection, a copy of a store, a sandbox)."""
        return None

    def end_episode(self, state: Any) -> None:
        """Release what `begin_episode` made. Called on the next `reset` and on `close`."""

    def answer_schema(self, task: Task) -> dict[str, Any] | None:
        """The JSON schema of the terminal tool's `answer` for `task` (`agentgym.answers.ANSWER_SCHEMAS`), shown
        in `info["tools"]` from reset to the end of the episode; None keeps the tool's own schema. By default a
        task's `metadata["answer_schema"]` (a schema, or the name of one of `ANSWER_SCHEMAS`)."""
        declared = task.metadata.get("answer_schema")
        if isinstance(declared, str):
            return answer_schema(declared)
        return declared if isinstance(declared, dict) else None

    def verify(self, task: Task, submission: Any, state: Any) -> Score:
        """Score the submission; by default with the task's named verifier."""
        return verify(task, submission, state)

    def process_signals(self, call: ToolCall, outcome: ToolOutcome, state: Any) -> dict[str, float]:
        """Per-call process signals in [0, 1] for the breakdown (domain-specific; none by default)."""
        return {}

    def execute_code(self, code: str, state: Any) -> str:
        """Run one CodeAct block and return its output. Domains with `code=True` implement this."""
        raise ToolError("this environment does not run code; call its tools instead")

    # ----------------------------------------------------------------- the Gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self._finish_episode()
        options = dict(options or {})
        self.task = self._choose_task(options)
        self._type_answer(self.task)
        self._reset_counters()
        self.state = self.begin_episode(self.task)
        self._episode_open = True
        if self._feedback is not None:
            self._feedback.begin(self.task.family)
        self._messages = [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": self.task.prompt},
        ]
        return self.task.prompt, self._info()

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.task is None or not self._episode_open:
            raise RuntimeError("call reset() before step(); the episode is over or has not started")
        self._turn += 1
        parsed = self.parser(action, code=self.code)
        self._append_assistant(action, parsed)
        terminated = False
        submission: Any = None
        step_reward = 0.0
        lost: GradingFailure | None = None  # set when a tool raised InfrastructureError
        record = TurnRecord(format_error=parsed.error is not None)
        self._turn_records.append(record)
        error_kind: str | None = None  # the step's first failure, given as info["call_error"]: a flag, never a text prefix
        if parsed.error is not None:
            self._format_errors += 1
            error_kind = "format"
            observation = parsed.error + self._tool_hint()
            self._messages.append({"role": "user", "content": observation})
        else:
            rendered: list[str] = []
            for index, call in enumerate(parsed.calls):
                try:
                    outcome = self._dispatch(call)
                except InfrastructureError as error:  # a tool's backend went away: not the agent's doing
                    lost = GradingFailure.of(error)
                    error_kind = error_kind or "infrastructure"
                    rendered.append("Error: the environment failed (not because of your actions); the episode "
                                    "ends here.")
                    break
                tool = self.tools.get(call.name)
                if not outcome.ok:
                    error_kind = error_kind or outcome.error_kind or "tool_error"
                record.calls.append(CallRecord(call.name, call.arguments, outcome.error_kind,
                                               tool is not None and tool.terminal, outcome.text))
                text = outcome.text if self._feedback is None else self._feedback_text(call, outcome)
                tool_message: dict[str, Any] = {"role": "tool", "tool_call_id": call.id or f"call_{index}",
                                                "name": call.name, "content": text}
                self._messages.append(tool_message)
                rendered.append(text if len(parsed.calls) == 1 else f"[{call.name}] {text}")
                if outcome.ok and tool is not None and tool.terminal:
                    terminated, submission = True, outcome.value
                    break
            observation = "\n\n".join(rendered)
        if self._feedback is not None:
            observation = self._feedback_nudge(observation)
        truncated = not terminated and (self._turn >= self.max_turns or lost is not None)
        if lost is not None:
            self._episode_open = False
            step_reward, diagnosis = self._failed_grade(lost, submitted=False, truncated=True)
            info = self._info()
            info.update(diagnosis=diagnosis, grader_error=lost.reason, infra_error=True)
        elif terminated or truncated:
            self._episode_open = False
            try:
                step_reward, diagnosis = self._grade(submission, submitted=terminated, truncated=truncated)
                failure: GradingFailure | None = None
            except Exception as error:  # noqa: BLE001 - a grader's bug or a lost backend ends the episode, never the run
                failure = GradingFailure.of(error)
                step_reward, diagnosis = self._failed_grade(failure, submitted=terminated, truncated=truncated)
            info = self._info()
            info["diagnosis"] = diagnosis
            if failure is not None:
                info["grader_error"] = failure.reason
                info["infra_error"] = failure.infrastructure
            if self._feedback is not None:
                self._feedback.finish(info["diagnosis"])
        else:
            info = self._info()
        if error_kind is not None:
            info["call_error"] = error_kind
        if self.render_mode == "human":
            print(self.render())
        return observation, step_reward, terminated, truncated, info

    def _grade(self, submission: Any, *, submitted: bool, truncated: bool) -> tuple[float, dict[str, Any]]:
        """The episode's reward and diagnosis. Raises whatever the grader raised, and `GraderOutputError` for an
        outcome that is not a `Score` with finite components or a reward that is not finite."""
        assert self.task is not None
        score = checked_score(self.verify(self.task, submission, self.state)) if submitted else Score(
            0.0, message="truncated")
        self._breakdown = self._final_breakdown(score, submitted=submitted)
        reward = combine(score.value, self._breakdown, self.reward_weights, submitted=submitted)
        if not math.isfinite(reward):
            raise GraderOutputError(f"the reward came out as {reward!r}")
        diagnosis = diagnose(self._turn_records, submitted=submitted, score=score.value, message=score.message,
                             truncated=truncated, answer_tools=self.answer_tools(),
                             extra=self.diagnose_extra(self._turn_records, score))
        return reward, diagnosis

    def _failed_grade(self, failure: GradingFailure, *, submitted: bool, truncated: bool) -> tuple[float, dict[str, Any]]:
        """Reward 0 (no shaping either: nothing was judged) and the `grader_error` or `infra_error` diagnosis."""
        self._breakdown = self._final_breakdown(Score(0.0), submitted=submitted)
        diagnosis = diagnose(self._turn_records, submitted=submitted, score=0.0, truncated=truncated,
                             answer_tools=self.answer_tools(), grading_failed=failure.label)
        return 0.0, diagnosis

    def answer_tools(self) -> set[str]:
        """The terminal tools the current task's reference solution uses (a submit of another kind is `wrong_tool`
        in the diagnosis); empty before the first reset."""
        if self.task is None:
            return set()
        return {str(step.get("name")) for step in self.task.solution} & {
            name for name, item in self.tools.items() if item.terminal}

    def diagnose_extra(self, turns: Sequence[TurnRecord], score: Score) -> list[str]:
        """Domain diagnosis labels for a finished episode (docs/diagnosis.md); none by default. Called before
        `end_episode`, so `self.task` and `self.state` are still the episode's."""
        return []

    def feedback_hints(self, call: ToolCall, outcome: ToolOutcome, view: AgentView) -> list[Hint]:
        """Domain hints for a call whose outcome reports a failure (docs/feedback.md); none by default. Asked
        about every call when feedback is on. Read only what `view` holds that the agent could see or learn
        with its tools (a schema, the prompt), never the task or its gold."""
        return []

    def feedback_state(self) -> dict[str, Any]:
        """The feedback mode, the current episode's level, and (adaptive) the per-family statistics."""
        return self._feedback.snapshot() if self._feedback is not None else no_feedback_state()

    def render(self) -> str | None:
        if self.render_mode is None:
            return None
        lines = []
        for message in getattr(self, "_messages", []):
            content = message.get("content") or ""
            if message.get("tool_calls"):
                content += " " + " ".join(
                    f"{c['function']['name']}({c['function']['arguments']})" for c in message["tool_calls"]
                )
            lines.append(f"[{message['role']}] {content}")
        return "\n".join(lines)

    def close(self) -> None:
        """Release the episode's resources. Safe to call any number of times."""
        if self._closed:
            return
        self._finish_episode()
        self._closed = True
        super().close()

    # ----------------------------------------------------------------- internals
    def _choose_task(self, options: dict[str, Any]) -> Task:
        tasks = self.task_set
        if "task_id" in options:
            return tasks.get(str(options["task_id"]))
        if options.get("split") or options.get("families") or options.get("difficulty"):
            tasks = tasks.filter(split=options.get("split"), families=options.get("families"),
                                 difficulty=options.get("difficulty"))
        if "index" in options:
            return tasks[int(options["index"]) % len(tasks)]
        return tasks.sample(self.np_random)

    def _finish_episode(self) -> None:
        if self.task is not None and self.state is not None:
            state, self.state = self.state, None
            self.end_episode(state)
        self._episode_open = False

    def _type_answer(self, task: Task) -> None:
        """Show the terminal tools' `answer` typed for `task` (`answer_schema`). The schema list is rebuilt only
        when the type or the tools change, so an env whose tasks share one type hands out one list."""
        typed = self.answer_schema(task)
        key = (typed, id(self.tools))
        if key == getattr(self, "_typed_key", (None, id(self.tools))):
            return
        self._typed_key = key
        self.tool_schemas = [with_answer_schema(item.schema, typed) if typed is not None and item.terminal
                             else item.schema for item in self.tools.values()]

    _breakdown: dict[str, float]
    _messages: list[dict[str, Any]]

    def _reset_counters(self) -> None:
        self._turn = 0
        self._format_errors = 0
        self._calls = 0
        self._schema_errors = 0
        self._failed_calls = 0
        self._terminal_calls = 0
        self._process: dict[str, list[float]] = {}
        self._breakdown = {}
        self._messages = []
        self._turn_records: list[TurnRecord] = []

    def _dispatch(self, call: ToolCall) -> ToolOutcome:
        self._calls += 1
        called = self.tools.get(call.name)
        if called is None and call.name == CODE_TOOL and self.code:
            code = call.arguments.get("code") if isinstance(call.arguments, dict) else None
            if not isinstance(code, str):
                outcome = ToolOutcome("Error: a code call needs a 'code' string", ok=False, error_kind="arguments")
            else:
                try:
                    outcome = ToolOutcome(cap_text(self.execute_code(code, self.state), self.output_limit), ok=True)
                except ToolError as error:
                    outcome = ToolOutcome(f"Error: {error}", ok=False, error_kind="tool_error")
        elif called is None:
            available = ", ".join(self.tools)
            outcome = ToolOutcome(f"Error: unknown tool {call.name[:100]!r}; available: {available}.",
                                  ok=False, error_kind="unknown_tool")
        else:
            outcome = called.invoke(self.state, call.arguments)
            if len(outcome.text) > self.output_limit:
                outcome = ToolOutcome(cap_text(outcome.text, self.output_limit), outcome.ok, outcome.value,
                                      outcome.error_kind)
            called = self.tools.get(call.name)  # as `step` sees it after the call
        if called is not None and called.terminal:
            self._terminal_calls += 1
        if outcome.error_kind in ("unknown_tool", "arguments"):
            self._schema_errors += 1
        elif not outcome.ok:
            self._failed_calls += 1
        process = self._process
        for name, value in self.process_signals(call, outcome, self.state).items():
            # Clipped per call and averaged per episode (`_final_breakdown`): repeating a cheap call cannot
            # push a signal above what one such call earns.
            if type(value) is not float or not 0.0 < value <= 1.0:  # the common case, a float in (0, 1], as is
                number = float(value) if isinstance(value, (int, float)) and math.isfinite(value) else 0.0
                value = min(1.0, max(0.0, number))
            values = process.get(name)
            if values is None:
                process[name] = [value]
            else:
                values.append(value)
        return outcome

    def _append_assistant(self, action: Any, parsed: ParsedAction) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": parsed.text}
        if parsed.calls:
            message["tool_calls"] = [call.to_openai(index) for index, call in enumerate(parsed.calls)]
        self._messages.append(message)

    def _feedback_text(self, call: ToolCall, outcome: ToolOutcome) -> str:
        assert self._feedback is not None and self.task is not None
        view = AgentView(prompt=self.task.prompt, tools=self.tools, state=self.state)
        return self._feedback.annotate(call, outcome, view, self.feedback_hints)

    def _feedback_nudge(self, observation: str) -> str:
        assert self._feedback is not None
        nudge = self._feedback.end_turn(self._turn_records)
        if nudge:
            self._messages[-1] = {**self._messages[-1], "content": self._messages[-1]["content"] + nudge}
        return observation + nudge

    def _tool_hint(self) -> str:
        return " Available tools: " + ", ".join(self.tools) + "."

    def _final_breakdown(self, score: Score, *, submitted: bool) -> dict[str, float]:
        calls = max(self._calls, 1)
        # Schema and execution reward well-formed, working tool use: an episode whose only calls were to
        # `submit` did no tool work, so a blind submit earns neither.
        worked = self._calls > self._terminal_calls
        breakdown = {
            "answer": score.value,
            "format": 1.0 - self._format_errors / max(self._turn, 1),
            "schema": 1.0 - self._schema_errors / calls if worked else 0.0,
            "execution": 1.0 - (self._schema_errors + self._failed_calls) / calls if worked else 0.0,
            "submitted": float(submitted),
        }
        for name, values in sorted(self._process.items()):
            breakdown[f"process/{name}"] = sum(values) / len(values)
        if self._process:
            means = [breakdown[f"process/{name}"] for name in self._process]
            breakdown["process"] = sum(means) / len(means)
        for name, value in sorted(score.components.items()):
            breakdown[f"verifier/{name}"] = float(value)
        return breakdown

    def _info(self) -> dict[str, Any]:
        task = self.task
        assert task is not None
        if self._info_task is not task:  # the task's own fields, once per episode, in the info's key order
            self._info_task = task
            self._info_head = {"task_id": task.id, "family": task.family, "split": task.split,
                               "difficulty": task.difficulty}
        info = self._info_head.copy()
        info["turn"] = self._turn
        info["tools"] = self.tool_schemas
        # A new list each time: an info handed out earlier keeps the conversation as it was at its step.
        info["messages"] = self._messages.copy()
        info["reward_breakdown"] = self._breakdown.copy()
        return info
