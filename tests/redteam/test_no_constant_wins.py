"""No family is solved by a constant: the best constant answer solves at most half of a family's tasks.

The constants are each family's most common gold answer, "none", "yes", "no", 0, "" and [] (constant
queries for SQL's `submit(sql)`), submitted at the first turn. `make test` checks a sample of every family;
`make test-slow` every task. `bench/redteam.py` prints the whole table.
"""

from __future__ import annotations

import pytest
from redteam_support import ENV_IDS, constant_answer_table, require_backend

CHANCE_CEILING = 0.5


def _check(env_id: str, per_family: int | None) -> None:
    kwargs = {}
    if env_id == "CLI-v0":
        require_backend("docker")
        kwargs["backend"] = "docker"
    table = constant_answer_table(env_id, per_family=per_family, **kwargs)
    assert table, f"{env_id} has no tasks"
    beaten = {family: (row["best_constant"], round(row["best_share"], 3)) for family, row in table.items()
              if row["best_share"] > CHANCE_CEILING}
    assert not beaten, f"{env_id}: families solved by a constant answer more than half the time: {beaten}"


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_no_family_is_solved_by_a_constant(env_id: str) -> None:
    _check(env_id, None if env_id != "CLI-v0" else 8)  # SQL and FHIR: every task (seconds); CLI: a sample


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_no_family_is_solved_by_a_constant_on_every_task(env_id: str) -> None:
    _check(env_id, None)
