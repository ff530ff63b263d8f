"""Failure diagnosis: a label per turn and one per episode, computed by code from what the env saw.

`ToolEnv` records, for each turn, whether the action parsed and, for each call, the tool name, its arguments,
the call's error kind and the text the agent saw. At the end of an episode it calls `diagnose` and puts the
result in `info["diagnosis"]`. The labels are deterministic functions of that record plus the verifier's score
and message and the names of the terminal tools the task's reference solution uses; they never carry gold data
(no answer, no verifier message, no observation text), only label names and counts.
The taxonomy is documented in docs/diagnosis.md.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

# Turn labels, in priority order: a turn gets the first that applies.
FORMAT_ERROR = "format_error"            # the action held no readable tool call
UNKNOWN_TOOL = "unknown_tool"            # a call named a tool the env does not have
WRONG_TOOL = "wrong_tool"                # a call to a terminal tool the task's reference solution never uses
BAD_ARGUMENTS = "bad_arguments"          # a call's arguments failed validation
TOOL_ERROR = "tool_error"                # a call ran and failed (the tool raised)
REPEATED_CALL = "repeated_call"          # every non-submit call repeated an earlier identical call
OK = "ok"                                # at least one new call worked
SUBMITTED = "submitted"                  # the turn's only effective call was the submit

# Episode labels.
SOLVED = "solved"                                          # submitted, the verifier's score is 1
# WRONG_TOOL (above) also names episodes: finished with a terminal tool the task does not take, or truncated
# after trying only such tools (an SQL query task answered with submit_answer(value), refused each time).
SUBMITTED_WITHOUT_EVIDENCE = "submitted_without_evidence"  # submit on turn 1 with no other tool call, wrong
WRONG_TYPE = "wrong_type"                                  # submitted, the verifier could not read the answer
WRONG_ANSWER = "wrong_answer"                              # submitted, read, but not the expected answer
NO_PROGRESS = "no_progress"                                # truncated after a long run of turns doing nothing new
TRUNCATED = "truncated"                                    # truncated while still making progress
GRADER_ERROR = "grader_error"    # the grader raised or returned no valid score: reward 0, whatever the answer was
INFRA_ERROR = "infra_error"      # the grader raised agentgym.errors.InfrastructureError: not the agent's doing

TURN_LABELS = (FORMAT_ERROR, UNKNOWN_TOOL, WRONG_TOOL, BAD_ARGUMENTS, TOOL_ERROR, REPEATED_CALL, OK, SUBMITTED)
EPISODE_LABELS = (SOLVED, WRONG_TOOL, SUBMITTED_WITHOUT_EVIDENCE, WRONG_TYPE, WRONG_ANSWER, FORMAT_ERROR,
                  UNKNOWN_TOOL, BAD_ARGUMENTS, TOOL_ERROR, REPEATED_CALL, NO_PROGRESS, TRUNCATED, GRADER_ERROR,
                  INFRA_ERROR)
# Episode labels of an episode that was never judged; evaluation counts them apart (agentgym.metrics).
GRADING_FAILED_LABELS = (GRADER_ERROR, INFRA_ERROR)
FAILURE_TURN_LABELS = (FORMAT_ERROR, UNKNOWN_TOOL, WRONG_TOOL, BAD_ARGUMENTS, TOOL_ERROR, REPEATED_CALL)

# What a verifier says when it could not read the submission at all (as opposed to reading a wrong value).
_UNREADABLE = re.compile(
    r"no single (?:number|option|value)|not a number|"
    r"could ?not be read|cannot be read|can't be read|unreadable|could ?not parse|"
    r"cannot parse|does not parse|empty answer|no answer|not a (?:valid )?(?:date|list|boolean|yes/no)|"
    r"wrong type|ambiguous",
    re.IGNORECASE,
)

_ERROR_KIND_LABEL = {"unknown_tool": UNKNOWN_TOOL, "arguments": BAD_ARGUMENTS, "tool_error": TOOL_ERROR,
                     "exception": TOOL_ERROR}


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One tool call as the env saw it. `text` is the result the agent was shown (for domain labels, which
    read error messages and exit codes in it); it never enters the diagnosis itself."""

    name: str
    arguments: Any
    error_kind: str | None = None  # None when it worked; else ToolOutcome.error_kind
    terminal: bool = False         # the call was to a terminal tool (`submit`)
    text: str = ""


@dataclass(slots=True)
class TurnRecord:
    """One turn: whether the action parsed, and its calls in order (those after a submit never ran)."""

    format_error: bool = False
    calls: list[CallRecord] = field(default_factory=list)


def episode_calls(turns: Sequence[TurnRecord]) -> Iterator[CallRecord]:
    """Every call of the episode, in order."""
    for turn in turns:
        yield from turn.calls


def ending_call(turns: Sequence[TurnRecord]) -> CallRecord | None:
    """The terminal call that ended the episode (None when it was truncated)."""
    for turn in reversed(turns):
        for call in reversed(turn.calls):
            if call.terminal and call.error_kind is None:
                return call
    return None


def in_order(found: Collection[str], order: Sequence[str]) -> list[str]:
    """The labels of `found` in the documented order `order` (a domain's label tuple), each once."""
    return [label for label in order if label in found]


def _call_key(call: CallRecord) -> tuple[str, str]:
    try:
        arguments = json.dumps(call.arguments, sort_keys=True, default=repr)
    except (TypeError, ValueError):  # keys of mixed types, cycles: fall back to the repr
        arguments = repr(call.arguments)
    return call.name, arguments


def unreadable_message(message: str) -> bool:
    """Whether a verifier's message says the submission could not be read (wrong type, not a wrong value)."""
    return bool(message) and _UNREADABLE.search(message) is not None


def wrong_tool(call: CallRecord, answer_tools: Collection[str]) -> bool:
    """Whether `call` used a terminal tool that the task's reference solution (`answer_tools`: the terminal
    tools it calls; empty when unknown) never uses."""
    return call.terminal and bool(answer_tools) and call.name not in answer_tools


def label_turns(turns: Sequence[TurnRecord], answer_tools: Collection[str] = ()) -> list[str]:
    """One label per turn (see TURN_LABELS for the priority order). `answer_tools`: see `wrong_tool`."""
    seen: set[tuple[str, str]] = set()
    labels: list[str] = []
    for turn in turns:
        if turn.format_error or not turn.calls:
            labels.append(FORMAT_ERROR)
            continue
        errors = [WRONG_TOOL if wrong_tool(call, answer_tools) else _ERROR_KIND_LABEL.get(call.error_kind or "", TOOL_ERROR)
                  for call in turn.calls if call.error_kind or wrong_tool(call, answer_tools)]
        new_work = False
        submitted = False
        for call in turn.calls:
            if call.error_kind is not None or wrong_tool(call, answer_tools):
                continue
            if call.terminal:
                submitted = True
                continue
            key = _call_key(call)
            if key not in seen:
                new_work = True
                seen.add(key)
        if errors and not new_work:
            labels.append(min(errors, key=TURN_LABELS.index))
        elif new_work:
            labels.append(OK)
        elif submitted:
            labels.append(SUBMITTED)
        else:
            labels.append(REPEATED_CALL)
    return labels


def diagnose(turns: Sequence[TurnRecord], *, submitted: bool, score: float, message: str = "",
             truncated: bool = False, extra: Sequence[str] = (), answer_tools: Collection[str] = (),
             grading_failed: str | None = None) -> dict[str, Any]:
    """The diagnosis of one finished episode.

    Args:
        turns: What each turn did, in order.
        submitted: Whether a terminal tool (`submit`) was called successfully.
        score: The verifier's score (0 when not submitted).
        message: The verifier's message; read only to tell an unreadable answer from a wrong one.
        truncated: Whether `max_turns` ended the episode.
        extra: Domain labels (from `ToolEnv.diagnose_extra`), appended as given.
        answer_tools: The terminal tools the task's reference solution calls (empty: unknown, so no call is
            `wrong_tool`).
        grading_failed: `GRADER_ERROR` or `INFRA_ERROR` when the episode could not be graded; it names the
            episode, whatever the turns did.

    Returns:
        `{"episode": label, "turns": [label per turn], "counts": {label: n}, "domain": [labels]}`.
    """
    turn_labels = label_turns(turns, answer_tools)
    episode: str
    if grading_failed is not None:
        if grading_failed not in GRADING_FAILED_LABELS:
            raise ValueError(f"grading_failed must be one of {GRADING_FAILED_LABELS}, got {grading_failed!r}")
        episode = grading_failed
    elif submitted:
        did_work = any(not call.terminal for turn in turns for call in turn.calls)
        finished_with = ending_call(turns)
        if score >= 1.0:
            episode = SOLVED
        elif finished_with is not None and wrong_tool(finished_with, answer_tools):
            episode = WRONG_TOOL
        elif len(turns) == 1 and not did_work:
            episode = SUBMITTED_WITHOUT_EVIDENCE
        elif unreadable_message(message):
            episode = WRONG_TYPE
        else:
            episode = WRONG_ANSWER
    elif WRONG_TOOL in turn_labels and not any(call.terminal and call.name in answer_tools
                                               for call in episode_calls(turns)):
        episode = WRONG_TOOL  # it tried to finish only with tools the task does not take, and was refused
    else:
        episode = _unfinished_label(turn_labels)
    counts = Counter(turn_labels)
    return {
        "episode": episode,
        "turns": turn_labels,
        "counts": {label: counts[label] for label in TURN_LABELS if counts[label]},
        "domain": list(extra),
        "truncated": bool(truncated),
    }


def _unfinished_label(turn_labels: Sequence[str]) -> str:
    """The label of an episode that ended without a submit."""
    if not turn_labels:
        return TRUNCATED
    if OK not in turn_labels:  # nothing ever worked: the dominant failure names the episode
        counts = Counter(turn_labels)
        return max(FAILURE_TURN_LABELS, key=lambda label: (counts[label], -FAILURE_TURN_LABELS.index(label)))
    last_ok = len(turn_labels) - 1 - list(reversed(turn_labels)).index(OK)
    stalled = len(turn_labels) - 1 - last_ok
    if stalled >= 2 and stalled * 2 >= len(turn_labels):
        return NO_PROGRESS
    return TRUNCATED
