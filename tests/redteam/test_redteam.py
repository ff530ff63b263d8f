"""Every attack in `attacks_*.py` loses: reward 0 and no success, on every task it applies to.

`make test` plays a fast sample (`Attack.per_family` tasks per family, each backend the attack names);
`make test-slow` plays every applicable task. A winning attack's failure message shows the episodes it won.
"""

from __future__ import annotations

import pytest
from redteam_support import Attack, all_attacks, describe, require_backend, run

ATTACKS = all_attacks()


def _variants() -> list[tuple[Attack, str]]:
    return [(attack, backend) for attack in ATTACKS for backend in (attack.backends or ("",))]


def _id(variant: tuple[Attack, str]) -> str:
    attack, backend = variant
    return f"{attack.name}[{backend}]" if backend else attack.name


VARIANTS = _variants()


def _check(attack: Attack, backend: str, per_family: int | None) -> None:
    if backend:
        require_backend(backend)
    outcomes = run(attack, backend=backend, per_family=per_family)
    assert outcomes, f"attack {attack.name} found no task to play (families {attack.families})"
    wins = [outcome for outcome in outcomes if outcome.won]
    assert not wins, (f"attack {attack.name} ({attack.description}) won {len(wins)} of {len(outcomes)} "
                      f"episodes:\n{describe(outcomes)}")


@pytest.mark.parametrize("variant", VARIANTS, ids=[_id(v) for v in VARIANTS])
def test_attack_loses_on_a_sample(variant: tuple[Attack, str]) -> None:
    attack, backend = variant
    _check(attack, backend, None)


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS, ids=[_id(v) for v in VARIANTS])
def test_attack_loses_on_every_task(variant: tuple[Attack, str]) -> None:
    attack, backend = variant
    _check(attack, backend, 0)
