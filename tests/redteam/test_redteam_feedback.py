"""Every red-team attack still loses with feedback on: each `attacks_*.py` attack replayed with
feedback="hints" and with feedback="adaptive" (levels moving after every episode), reward 0 and no success.

`make test` plays a sample: each attack once, in one mode (hints and adaptive by turns), on its first backend,
on one task per family it applies to. `make test-slow` plays every attack in both modes on every backend and
every task.
The attacks written against the hints themselves (`attacks_feedback.py`) run in `test_redteam.py` with the
rest.
"""

from __future__ import annotations

import dataclasses

import pytest
from redteam_support import Attack, all_attacks, describe, require_backend, run

from agentgym.feedback import FeedbackStats

MODES = ("hints", "adaptive")


def _variants() -> list[tuple[Attack, str, str]]:
    return [(attack, backend, mode) for attack in all_attacks() if "feedback" not in attack.make_kwargs
            for backend in (attack.backends or ("",)) for mode in MODES]


def _id(variant: tuple[Attack, str, str]) -> str:
    attack, backend, mode = variant
    return f"{attack.name}[{backend + ',' if backend else ''}{mode}]"


VARIANTS = _variants()
_ORDER = {name: index for index, name in enumerate(dict.fromkeys(attack.name for attack, _, _ in VARIANTS))}
SAMPLE = [(attack, backend, mode) for attack, backend, mode in VARIANTS
          if backend == (attack.backends or ("",))[0] and mode == MODES[_ORDER[attack.name] % len(MODES)]]


def with_feedback(attack: Attack, mode: str) -> Attack:
    """`attack` with feedback on; adaptive gets fresh statistics that move a level after every episode."""
    kwargs = {**attack.make_kwargs, "feedback": mode}
    if mode == "adaptive":
        kwargs["feedback_stats"] = FeedbackStats(min_episodes=1, start_level=2)
    return dataclasses.replace(attack, make_kwargs=kwargs)


def _check(variant: tuple[Attack, str, str], per_family: int | None) -> None:
    attack, backend, mode = variant
    if backend:
        require_backend(backend)
    outcomes = run(with_feedback(attack, mode), backend=backend, per_family=per_family)
    assert outcomes, f"attack {attack.name} found no task to play (families {attack.families})"
    wins = [outcome for outcome in outcomes if outcome.won]
    assert not wins, (f"attack {attack.name} with feedback={mode!r} ({attack.description}) won {len(wins)} of "
                      f"{len(outcomes)} episodes:\n{describe(outcomes)}")


@pytest.mark.parametrize("variant", SAMPLE, ids=[_id(v) for v in SAMPLE])
def test_attack_loses_with_feedback_on_a_sample(variant: tuple[Attack, str, str]) -> None:
    _check(variant, 1)


@pytest.mark.slow  # every attack x both feedback modes x every backend and task: minutes; make test-slow runs it
@pytest.mark.parametrize("variant", VARIANTS, ids=[_id(v) for v in VARIANTS])
def test_attack_loses_with_feedback_on_every_task(variant: tuple[Attack, str, str]) -> None:
    _check(variant, 0)
