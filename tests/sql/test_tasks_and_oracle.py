"""The built-in task set: size, families, levels, hints, phrasing, splits; and the oracle scores 1.0 on all."""

from __future__ import annotations

import collections

import gymnasium as gym
import pytest
from agentgym_sql.data import DATABASES
from agentgym_sql.tasks import FAMILIES, generate
from agentgym_sql.tasks.difficulty import level

import agentgym  # noqa: F401
from agentgym.agents import OracleAgent
from agentgym.rollout import run_episode


@pytest.fixture(scope="module")
def env() -> gym.Env:
    made = gym.make("SQL-v0")
    yield made
    made.close()


def test_task_set_shape(env: gym.Env) -> None:
    tasks = list(env.unwrapped.task_set)
    assert len(tasks) >= 2000
    families = collections.Counter(t.family for t in tasks)
    assert len(families) >= 10 and set(FAMILIES) <= set(families)
    assert {t.difficulty for t in tasks} == {"easy", "medium", "hard"}  # the shared levels
    # measured from each gold (tables, recursion, windows, traps of the data), never named per template
    assert all(t.difficulty == level(t.metadata["difficulty_points"]) for t in tasks)
    assert sum(1 for t in tasks if t.metadata["evidence"]) > 200
    assert {t.verifier.params["match"] for t in tasks} == {"set", "multiset", "ordered"}
    assert {t.verifier.params["mode"] for t in tasks} == {"sql", "answer"}
    # Varied phrasing: each family words its questions in several ways, never one sentence per family.
    for family in FAMILIES:
        openings = {t.metadata["question"].split()[0] for t in tasks if t.family == family}
        assert len(openings) >= 3, family


def test_splits_never_share_a_database(env: gym.Env) -> None:
    by_split = collections.defaultdict(set)
    for task in env.unwrapped.task_set:
        by_split[task.split].add(task.metadata["database"])
    assert set(by_split) == {"train", "test"}
    assert not by_split["train"] & by_split["test"]
    assert by_split["train"] | by_split["test"] == set(DATABASES)


def test_generation_is_deterministic() -> None:
    first = generate(3, databases=["hr"], per_family=5)
    again = generate(3, databases=["hr"], per_family=5)
    assert [t.model_dump() for t in first] == [t.model_dump() for t in again]
    other = generate(4, databases=["hr"], per_family=5)
    assert [t.prompt for t in other] != [t.prompt for t in first]


def test_oracle_scores_one_on_every_built_in_task(env: gym.Env) -> None:
    failures = []
    for task in env.unwrapped.task_set:
        result = run_episode(env, OracleAgent(), task_id=task.id)
        if result.reward != 1.0:
            failures.append(task.id)
    assert not failures, failures[:20]


def test_oracle_on_duckdb_sample() -> None:
    duck = gym.make("SQL-v0", backend="duckdb")
    tasks = list(duck.unwrapped.task_set)[::7]
    failures = [t.id for t in tasks if run_episode(duck, OracleAgent(), task_id=t.id).reward != 1.0]
    duck.close()
    assert not failures, failures[:20]
