"""Attacks through a served env's clients: what a remote or MCP client sees must not turn resets into an oracle.

The reset oracle: on a list task (FHIR-v0 `active_medications`), submit one drug per episode, resetting the same
task each time, and read what the client is told about each answer. If anything says "that item is in the gold"
(a precision of 1, a recall above 0, a domain label such as `answer_missing_items`), the attacker collects the
gold drug by drug without ever reading the record, and submits it in one last episode. A policy inside a trainer
never sees `info`; an agent behind `agentgym serve` or an MCP server sees whatever the server sends it.

These attacks need a running server, so they are played by `test_redteam_serving.py` (against a real
`agentgym serve` app and the real `agentgym mcp` stdio server), not by the `ATTACKS` harness of `test_redteam.py`,
which makes local envs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from redteam_support import Attack

ATTACKS: list[Attack] = []  # see the module docstring: played by test_redteam_serving.py

# The vocabulary an attacker can learn without the record: the drug table shipped with the FHIR domain.
Probe = Callable[[list[str]], Mapping[str, Any]]  # one fresh episode of the task: submit these items, see this


def _walk(value: Any) -> Iterable[tuple[str, Any]]:
    """Every (key, value) pair in nested dicts and lists, and every string in them as ("", text)."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key), item
            yield from _walk(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            if isinstance(item, str):
                yield "", item
            else:
                yield from _walk(item)


MEMBERSHIP_LABELS = ("answer_missing_items", "result_subset")  # "every item you gave is right, some are missing"


def says_in_gold(seen: Mapping[str, Any]) -> bool:
    """Whether what the client saw after a one-item answer gives that item away as part of the gold."""
    for key, value in _walk(seen):
        if "precision" in key.lower() and isinstance(value, (int, float)) and value >= 1.0:
            return True
        if "recall" in key.lower() and isinstance(value, (int, float)) and value > 0.0:
            return True
        if isinstance(value, str) and value in MEMBERSHIP_LABELS:
            return True
    return False


def reset_oracle(probe: Probe, vocabulary: Iterable[str]) -> list[str]:
    """The items `probe` gives away, one fresh episode per candidate."""
    return [item for item in vocabulary if says_in_gold(probe([item]))]


def drug_vocabulary() -> list[str]:
    from agentgym_fhir.vocab.drugs import DRUGS

    return sorted({drug.name for drug in DRUGS.values()})
