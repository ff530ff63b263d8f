"""ClinicalQA-v0's own diagnosis labels (docs/diagnosis.md, "ClinicalQA-v0"), from the episode's calls and the
submitted answer read as the verifier reads it.

Labels are names only: no option text, letter or passage ever enters them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentgym import Score, Task
from agentgym.diagnosis import TurnRecord, ending_call, episode_calls, in_order

from .verify import episode_options, named_options, option_key

NO_RETRIEVAL = "no_retrieval"          # answered (wrongly) without a successful search_knowledge call
EMPTY_RETRIEVAL = "empty_retrieval"    # every search the episode made found nothing
SEVERAL_OPTIONS = "several_options"    # the answer named more than one option (scores 0 by rule)
NO_OPTION = "no_option"                # the answer named no option at all

LABELS = (NO_RETRIEVAL, EMPTY_RETRIEVAL, SEVERAL_OPTIONS, NO_OPTION)
SEARCH_TOOL = "search_knowledge"
_NOTHING_FOUND = "no passage matched"  # what both search tools (task passages, knowledge base) say


def clinical_labels(task: Task, turns: Sequence[TurnRecord], score: Score) -> list[str]:
    """ClinicalQA-v0's domain labels for a finished episode, in the order of `LABELS`."""
    found: set[str] = set()
    ending = ending_call(turns)
    if score.value >= 1.0 or ending is None:
        return []
    searches = [call for call in episode_calls(turns) if call.name == SEARCH_TOOL and call.error_kind is None]
    if not searches:
        found.add(NO_RETRIEVAL)
    elif all(_NOTHING_FOUND in call.text.lower() for call in searches):
        found.add(EMPTY_RETRIEVAL)
    answer: Any = ending.arguments.get("answer") if isinstance(ending.arguments, dict) else None
    if isinstance(answer, str):
        keys = [option_key(option) for option in episode_options(task)]
        named = named_options(option_key(answer), keys)
        if len(named) > 1:
            found.add(SEVERAL_OPTIONS)
        elif "no single option" in score.message and not named:
            found.add(NO_OPTION)
    return in_order(found, LABELS)
