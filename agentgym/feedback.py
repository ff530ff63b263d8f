"""Recovery-oriented feedback: hints appended to error observations, and an adaptive level per task family.

`gym.make(ENV, feedback="none" | "hints" | "adaptive")`. With "none" (the default) observations are exactly
what the env shows without this module. With "hints" every error observation gets full hints; with "adaptive"
the amount (level 0 none, 1 short, 2 full) follows the diagnosis statistics of the family's finished episodes,
kept in a `FeedbackStats` (the env's own, or one the user passes to share it between envs).

What a hint may contain: only what the agent could already see or learn through its tools: the tool list and
schemas, the task prompt, and (in domains) what a listing tool would show, such as a database's table and
column names. Never the task's answer, solution, expected state, hidden tests or verifier messages. The
hinters receive an `AgentView` (the prompt, the tools, the episode's state), never the `Task`. Hints are
deterministic: the same episode gets the same hints. The levels and every hint kind are documented in
docs/feedback.md.
"""

from __future__ import annotations

import difflib
import json
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentgym.actions import ToolCall
from agentgym.diagnosis import (
    FAILURE_TURN_LABELS,
    NO_PROGRESS,
    OK,
    SOLVED,
    SUBMITTED,
    TurnRecord,
    label_turns,
)
from agentgym.tools import Tool, ToolOutcome

FEEDBACK_MODES = ("none", "hints", "adaptive")
LEVELS = (0, 1, 2)  # 0: no hints, 1: the short sentence of each hint, 2: the sentence and its detail
NO_PROGRESS_STREAK = 3  # turns in a row without new working calls before the nudge
MAX_HINT_CHARS = 1200   # all hints of one call together
HINT_PREFIX = "\n\nHint: "

# Episode labels that say the episode failed at using the tools (rather than at the answer).
TOOL_USE_EPISODE_LABELS = frozenset((*FAILURE_TURN_LABELS, NO_PROGRESS))


@dataclass(frozen=True, slots=True)
class Hint:
    """One hint: `kind` names it (docs/feedback.md), `text` is shown from level 1, `detail` added at level 2."""

    kind: str
    text: str
    detail: str = ""

    def render(self, level: int) -> str:
        return f"{self.text} {self.detail}" if level >= 2 and self.detail else self.text


@dataclass(frozen=True, slots=True)
class AgentView:
    """What a hinter may read: what the agent saw or could learn. Never the task, its answer or its verifier.

    Attributes:
        prompt: The task prompt the agent was shown.
        tools: The env's tools by name (their schemas are in the agent's `info["tools"]`).
        state: The episode's state, as the tools receive it; a hinter reads from it only what a tool would
            show the agent (a schema, a listing), never gold.
    """

    prompt: str
    tools: Mapping[str, Tool]
    state: Any


def check_mode(feedback: Any) -> str:
    """`feedback` if it is one of FEEDBACK_MODES; otherwise one ValueError that lists the choices."""
    if not isinstance(feedback, str) or feedback not in FEEDBACK_MODES:
        raise ValueError(f"feedback must be one of {', '.join(repr(mode) for mode in FEEDBACK_MODES)}, "
                         f"got {feedback!r}")
    return feedback


def closest(name: str, candidates: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The candidate most similar to `name` (case-insensitive; ties go to the earlier candidate), or None."""
    choices = [candidate for candidate in candidates if candidate]
    if not name or not choices:
        return None
    lowered: dict[str, str] = {}
    for candidate in choices:
        lowered.setdefault(candidate.lower(), candidate)
    if name.lower() in lowered:
        return lowered[name.lower()]
    found = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=cutoff)
    if found:
        return lowered[str(found[0])]
    # an abbreviation ("egfr" for "egfr_ckd_epi_2021") is far by edit distance but starts only one name
    starting = [candidate for key, candidate in lowered.items() if len(name) >= 3 and key.startswith(name.lower())]
    return starting[0] if len(starting) == 1 else None


def describe_parameters(tool: Tool) -> str:
    """A tool's arguments as one line: name (type, required), with the schema's description of each."""
    schema = tool.parameters_schema
    required = set(schema.get("required", []))
    parts = []
    for name, spec in schema.get("properties", {}).items():
        kind = _type_name(spec)
        note = f"{name} ({kind}{', required' if name in required else ''})"
        description = str(spec.get("description", "")).strip().rstrip(".")
        parts.append(f"{note}: {description}" if description else note)
    return "; ".join(parts) if parts else "no arguments"


def _type_name(spec: Mapping[str, Any]) -> str:
    if "enum" in spec:
        values = [json.dumps(value) for value in spec["enum"]]
        return "one of " + ", ".join(values[:12]) + (f" ({len(values) - 12} more)" if len(values) > 12 else "")
    if "type" in spec:
        return str(spec["type"])
    options = spec.get("anyOf") or spec.get("oneOf") or []
    names = [_type_name(option) for option in options if isinstance(option, Mapping)]
    return " or ".join(dict.fromkeys(names)) or "any"


def call_key(call: ToolCall) -> tuple[str, str]:
    """A call's identity (tool name, arguments as canonical JSON) for spotting repeated calls."""
    try:
        try:
            arguments = json.dumps(call.arguments, sort_keys=True, default=repr)
        except (TypeError, ValueError):  # keys of mixed types: the repr tells calls apart
            arguments = repr(call.arguments)
    except RecursionError:  # nested past the recursion limit: no text of it can be made, so never "repeated"
        arguments = f"<unrepresentable {id(call)}>"
    return call.name, arguments


def generic_hints(call: ToolCall, outcome: ToolOutcome, tools: Mapping[str, Tool]) -> list[Hint]:
    """The hints every env gives: closest tool name for an unknown tool, the expected schema for bad arguments."""
    if outcome.error_kind == "unknown_tool":
        match = closest(call.name, tools)
        if match is None:
            return [Hint("closest_tool", "Call one of the available tools by its exact name.",
                         "Their argument schemas are in the tool list you were given.")]
        return [Hint("closest_tool", f"Did you mean the tool '{match}'?",
                     f"{match} takes {describe_parameters(tools[match])}.")]
    if outcome.error_kind == "arguments":
        tool = tools.get(call.name)
        if tool is not None:
            described = _descriptions(tool)
            return [Hint("expected_schema", f"'{tool.name}' expects {_short_parameters(tool)}.",
                         (f"{described}. " if described else "") + f"Example: {tool.example_call()}")]
    return []


def _descriptions(tool: Tool) -> str:
    """`name: description` for each argument the schema describes."""
    properties = tool.parameters_schema.get("properties", {})
    return "; ".join(f"{name}: {str(spec['description']).strip().rstrip('.')}" for name, spec in properties.items()
                     if str(spec.get("description", "")).strip())


def _short_parameters(tool: Tool) -> str:
    schema = tool.parameters_schema
    required = set(schema.get("required", []))
    parts = [f"{name} ({_type_name(spec)}{', required' if name in required else ''})"
             for name, spec in schema.get("properties", {}).items()]
    return ", ".join(parts) if parts else "no arguments"


# ---------------------------------------------------------------------------------------------- statistics
def tool_use_failure(diagnosis: Mapping[str, Any]) -> bool:
    """Whether a finished episode failed at using the tools: not solved, and either its label is a tool-use
    failure (format error, unknown tool, bad arguments, tool error, repeated call, no progress) or at least
    half its turns carry a failure label."""
    if diagnosis.get("episode") == SOLVED:
        return False
    if diagnosis.get("episode") in TOOL_USE_EPISODE_LABELS:
        return True
    turns = list(diagnosis.get("turns", []))
    failing = sum(1 for label in turns if label in FAILURE_TURN_LABELS)
    return bool(turns) and failing * 2 >= len(turns)


@dataclass
class _FamilyRecord:
    level: int
    episodes: int
    recent: deque[tuple[bool, bool]]  # (solved, failed at tool use), newest last


class FeedbackStats:
    """Per-family statistics of finished episodes and the feedback level they call for (`adaptive` mode).

    After each finished episode of a family the level moves one step toward a target read from the family's
    last `window` episodes (once it has `min_episodes`): 0 when at least `lower_at` of them were solved, 2 when
    at least `raise_at` of them failed at tool use, else 1. A family starts at `start_level`. An episode's
    level is fixed when it starts, so nothing the episode does changes its own hints.

    Pass one object to several envs (`gym.make(ENV, feedback="adaptive", feedback_stats=stats)`) to share it;
    it is thread-safe. `snapshot()` shows it; `state_dict()` / `load_state_dict()` save and restore it.
    """

    def __init__(self, *, window: int = 20, min_episodes: int = 3, start_level: int = 1, lower_at: float = 0.75,
                 raise_at: float = 0.5) -> None:
        if window < 1 or min_episodes < 1 or start_level not in LEVELS:
            raise ValueError(f"FeedbackStats needs window >= 1, min_episodes >= 1 and start_level in {LEVELS}; "
                             f"got window={window}, min_episodes={min_episodes}, start_level={start_level}")
        if not (0.0 < lower_at <= 1.0 and 0.0 < raise_at <= 1.0):
            raise ValueError(f"lower_at and raise_at are shares in (0, 1]; got {lower_at} and {raise_at}")
        self.window = window
        self.min_episodes = min_episodes
        self.start_level = start_level
        self.lower_at = lower_at
        self.raise_at = raise_at
        self._families: dict[str, _FamilyRecord] = {}
        self._lock = threading.Lock()

    def level(self, family: str) -> int:
        """The level the family's next episode gets."""
        with self._lock:
            record = self._families.get(family)
            return self.start_level if record is None else record.level

    def record(self, family: str, diagnosis: Mapping[str, Any]) -> int:
        """Count one finished episode (its `info["diagnosis"]`) and return the family's new level."""
        with self._lock:
            record = self._families.get(family)
            if record is None:
                record = self._families[family] = _FamilyRecord(self.start_level, 0, deque(maxlen=self.window))
            record.episodes += 1
            record.recent.append((diagnosis.get("episode") == SOLVED, tool_use_failure(diagnosis)))
            target = self._target(record)
            if target > record.level:
                record.level += 1
            elif target < record.level:
                record.level -= 1
            return record.level

    def _target(self, record: _FamilyRecord) -> int:
        if len(record.recent) < self.min_episodes:
            return record.level
        count = len(record.recent)
        solved = sum(1 for was_solved, _ in record.recent if was_solved) / count
        failed = sum(1 for _, tool_failed in record.recent if tool_failed) / count
        if solved >= self.lower_at:
            return 0
        if failed >= self.raise_at:
            return 2
        return 1

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """Per family: level, episodes seen, and over the recent window its size, solved and tool-failure shares."""
        with self._lock:
            shown: dict[str, dict[str, Any]] = {}
            for family in sorted(self._families):
                record = self._families[family]
                count = len(record.recent)
                shown[family] = {
                    "level": record.level, "episodes": record.episodes, "recent": count,
                    "solved_share": sum(1 for solved, _ in record.recent if solved) / count if count else 0.0,
                    "tool_failure_share": sum(1 for _, failed in record.recent if failed) / count if count else 0.0,
                }
            return shown

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume: the settings and each family's level, count and recent window."""
        with self._lock:
            return {"settings": {"window": self.window, "min_episodes": self.min_episodes,
                                 "start_level": self.start_level, "lower_at": self.lower_at,
                                 "raise_at": self.raise_at},
                    "families": {family: {"level": record.level, "episodes": record.episodes,
                                          "recent": [list(item) for item in record.recent]}
                                 for family, record in sorted(self._families.items())}}

    @classmethod
    def from_state_dict(cls, state: Mapping[str, Any]) -> FeedbackStats:
        """A `FeedbackStats` restored from `state_dict()`."""
        stats = cls(**dict(state.get("settings", {})))
        for family, saved in dict(state.get("families", {})).items():
            recent: deque[tuple[bool, bool]] = deque(((bool(a), bool(b)) for a, b in saved["recent"]),
                                                     maxlen=stats.window)
            stats._families[str(family)] = _FamilyRecord(int(saved["level"]), int(saved["episodes"]), recent)
        return stats


DomainHinter = Callable[[ToolCall, ToolOutcome, AgentView], Sequence[Hint]]


# ---------------------------------------------------------------------------------------------- per env
class Feedback:
    """The feedback of one env: the mode, the current episode's level and what the episode has done so far.

    `ToolEnv` calls `begin` at reset, `annotate` on every call's outcome, `end_turn` after each turn and
    `finish` with the diagnosis of a finished episode.
    """

    def __init__(self, mode: str, stats: FeedbackStats | None = None) -> None:
        self.mode = check_mode(mode)
        if mode == "none":
            raise ValueError("Feedback is for feedback='hints' or 'adaptive'; 'none' needs no Feedback object")
        if stats is not None and mode != "adaptive":
            raise ValueError("feedback_stats is read only with feedback='adaptive'; drop it or set "
                             "feedback='adaptive'")
        self.stats = stats if stats is not None else (FeedbackStats() if mode == "adaptive" else None)
        self.level = self.stats.start_level if self.stats is not None else 2
        self.family = ""
        self._results: dict[tuple[str, str], str] = {}

    def begin(self, family: str) -> None:
        """Start an episode of `family`: fix its level and forget the previous episode's calls."""
        self.family = family
        self.level = self.stats.level(family) if self.stats is not None else 2
        self._results = {}

    def annotate(self, call: ToolCall, outcome: ToolOutcome, view: AgentView, domain: DomainHinter) -> str:
        """The text the agent sees for one call: the outcome's text, plus hints when the level allows.

        `domain(call, outcome, view)` gives the domain's hints. It is asked about every call, since a call can
        work and still report a failure (a shell command that exits 127, a search that finds nothing), and
        returns hints only for such outcomes."""
        text = outcome.text
        key = call_key(call)
        previous = self._results.get(key)
        self._results[key] = text
        if self.level == 0:
            return text
        hints: list[Hint] = []
        if previous is not None and previous == text:
            hints.append(Hint("repeated_call", "You already made this call; its result was the same.",
                              "Change the arguments, try another tool, or submit what you have found."))
        if not outcome.ok:
            hints.extend(generic_hints(call, outcome, view.tools))
        hints.extend(domain(call, outcome, view))
        return text + self._render(hints)

    def end_turn(self, turns: Sequence[TurnRecord]) -> str:
        """The no-progress nudge after a turn that ends a streak of `NO_PROGRESS_STREAK` turns (or a multiple of
        it) without a new working call; "" otherwise."""
        if self.level == 0 or len(turns) < NO_PROGRESS_STREAK:
            return ""
        labels = label_turns(turns)
        streak = 0
        for label in reversed(labels):
            if label in (OK, SUBMITTED):
                break
            streak += 1
        if streak < NO_PROGRESS_STREAK or streak % NO_PROGRESS_STREAK:
            return ""
        return self._render([Hint("no_progress", f"{streak} turns in a row brought nothing new: submit your "
                                  "best answer, or change approach.",
                                  "Read the last error again, try another tool or other arguments, and do not "
                                  "repeat a call whose result you already have.")])

    def finish(self, diagnosis: Mapping[str, Any]) -> None:
        """Count a finished episode (adaptive mode)."""
        if self.stats is not None:
            self.stats.record(self.family, diagnosis)

    def snapshot(self) -> dict[str, Any]:
        """The mode, the current episode's family and level, and the per-family statistics (adaptive)."""
        shown: dict[str, Any] = {"mode": self.mode, "family": self.family, "level": self.level}
        if self.stats is not None:
            shown["families"] = self.stats.snapshot()
        return shown

    def _render(self, hints: Sequence[Hint]) -> str:
        if not hints:
            return ""
        seen: set[str] = set()
        lines = []
        for hint in hints:
            line = hint.render(self.level)
            if line not in seen:
                seen.add(line)
                lines.append(line)
        text = HINT_PREFIX + HINT_PREFIX.join(lines)
        return text if len(text) <= MAX_HINT_CHARS else text[:MAX_HINT_CHARS - 1] + "…"


def no_feedback_state() -> dict[str, Any]:
    """What `ToolEnv.feedback_state()` shows when feedback is off."""
    return {"mode": "none", "family": "", "level": 0}
