"""No family and no prompt template is solved by a constant: the best constant answer solves at most half.

Per family (the first two tests): each family's most common gold answer, "none", "yes", "no", 0, "" and []
(constant queries for SQL's `submit(sql)`), submitted at the first turn. Per prompt template (the rest): the
tasks of a family whose prompts are equal once the generator's values are taken out
(`prompt_templates.template_groups`), each played with the natural guesses learned from the template's other
tasks (the most common gold, the common items of list answers, option letters) and the fixed constants, on the
train split and on the test split, for every env the registry knows, on every task (seconds; CLI-v0's answer
templates scored by the verifier directly under `make test`, every guess played through `step` under `make
test-slow`). `bench/redteam.py` prints both tables.
"""

from __future__ import annotations

from typing import Any

import pytest
from prompt_templates import constant_template_table, env_ids
from redteam_support import constant_answer_table, require_backend

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


@pytest.mark.parametrize("env_id", env_ids())
def test_no_family_is_solved_by_a_constant(env_id: str) -> None:
    _check(env_id, None if env_id != "CLI-v0" else 8)  # SQL and FHIR: every task (seconds); CLI: a sample


@pytest.mark.slow
@pytest.mark.parametrize("env_id", env_ids())
def test_no_family_is_solved_by_a_constant_on_every_task(env_id: str) -> None:
    _check(env_id, None)


def _check_templates(env_id: str, split: str, *, every_step: bool) -> None:
    kwargs: dict[str, Any] = {}
    if env_id == "CLI-v0":
        require_backend("docker")
        kwargs["backend"] = "docker"
        # A CLI episode starts a sandbox (seconds each when loaded): `make test` scores its answer templates with
        # the registered verifier directly (it reads the answer alone there); the slow suite plays every step.
        kwargs["answers_only"] = not every_step
    table = constant_template_table(env_id, split=split, **kwargs)
    assert table, f"{env_id} has no tasks"
    beaten = {key: (row["tasks"], row["judged"], row["best_constant"], round(row["best_share"], 3))
              for key, row in table.items() if row["best_share"] > CHANCE_CEILING and row["judged"] != "too few"}
    assert not beaten, (f"{env_id} ({split}): prompt templates solved by a constant more than half the time "
                        f"(tasks, judged on, constant, share): {beaten}")


def test_every_registered_env_is_checked() -> None:
    """The per-template check reads the registry, so an env added later is checked without editing this file."""
    assert {"SQL-v0", "FHIR-v0", "CLI-v0", "ClinicalQA-v0"} <= set(env_ids())


@pytest.mark.parametrize("split", ["train", "test"])
@pytest.mark.parametrize("env_id", env_ids())
def test_no_prompt_template_is_solved_by_a_constant(env_id: str, split: str) -> None:
    _check_templates(env_id, split, every_step=False)


@pytest.mark.slow
@pytest.mark.parametrize("split", ["train", "test"])
@pytest.mark.parametrize("env_id", env_ids())
def test_no_prompt_template_is_solved_by_a_constant_on_every_task(env_id: str, split: str) -> None:
    _check_templates(env_id, split, every_step=True)


# The constant answers issue 25 found winning every task of their template (CLI-v0's fixtures always held six
# folders below project/, the same two links and ten countries). Played as a policy would: reset, then submit at
# once, on every task of the template (train and test).
ISSUE_25_CONSTANTS = [("counting", "folders", "6"), ("find_filter", "symlinks", "current.log, latest"),
                      ("counting", "countries", "10")]


@pytest.mark.parametrize(("family", "template", "answer"), ISSUE_25_CONSTANTS)
def test_the_issue_25_constant_answers_win_at_most_half_of_their_template(family: str, template: str,
                                                                           answer: str) -> None:
    import gymnasium as gym

    require_backend("docker")
    env = gym.make("CLI-v0", backend="docker", fixtures=40)  # 40 workspaces: at least 10 tasks of each template
    try:
        ids = sorted(task.id for task in env.unwrapped.task_set
                     if task.family == family and task.metadata.get("template") == template)
        assert len(ids) >= 10, f"too few {family}/{template} tasks to judge: {len(ids)}"
        wins = 0
        for task_id in ids:
            env.reset(seed=0, options={"task_id": task_id})
            _, reward, terminated, _, info = env.step({"name": "submit", "arguments": {"answer": answer}})
            assert terminated
            wins += int(float(reward) > 0 or float((info.get("reward_breakdown") or {}).get("answer", 0)) >= 1)
    finally:
        env.close()
    assert wins * 2 <= len(ids), f"{answer!r} wins {wins} of {len(ids)} {family}/{template} tasks"
