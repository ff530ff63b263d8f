"""The oracle solves every task of the default population (about 5,300 tasks; minutes, so marked slow)."""

from __future__ import annotations

import pytest
from agentgym_fhir.env import make_env

from agentgym.agents.oracle import OracleAgent


@pytest.mark.slow
def test_oracle_solves_every_default_task(play) -> None:  # type: ignore[no-untyped-def]
    env = make_env(knowledge=False, max_turns=60)
    tasks = list(env.unwrapped.task_set)
    assert len(tasks) >= 3600
    oracle = OracleAgent()
    failures = [task.id for task in tasks if play(env, task, oracle)[0] != 1.0]
    env.close()
    assert not failures, failures[:10]
