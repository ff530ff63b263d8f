"""The curricula of `agentgym.curriculum`: what each sampler draws as outcomes come in, seeds, saved states.

The "policy" here is a seeded simulation that decides each episode's outcome from the task (no model: these
tests are about what the sampler does with outcomes, which is all it ever sees).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable

import pytest

from agentgym import Task
from agentgym.curriculum import SAMPLERS, TaskSampler, difficulty_rank, make_sampler, mixed_group_chance

Outcome = Callable[[Task, random.Random], "tuple[bool, str]"]


def _tasks(families: dict[str, list[str]], per_level: int = 3) -> list[Task]:
    return [Task(id=f"{family}-{level}-{index}", domain="test", family=family, prompt=f"{family} {level} {index}",
                 answer="gold", difficulty=level)
            for family, levels in families.items() for level in levels for index in range(per_level)]


def _run(sampler: TaskSampler, outcome: Outcome, steps: int, *, groups: int = 4, group_size: int = 8,
         seed: int = 0) -> tuple[list[Task], list[bool]]:
    """Train-loop stand-in: each step draws `groups` tasks and reports `group_size` episodes of each.
    Returns the drawn tasks and, per group, whether it held both a success and a failure."""
    rng = random.Random(seed)
    drawn: list[Task] = []
    mixed: list[bool] = []
    for _ in range(steps):
        batch = sampler.sample(groups)
        drawn += batch
        for task in batch:
            results = [outcome(task, rng) for _ in range(group_size)]
            for success, label in results:
                sampler.update(task.id, success, diagnosis={"episode": label, "turns": []})
            mixed.append(len({success for success, _ in results}) == 2)
    return drawn, mixed


def _by_rate(rates: dict[str, float]) -> Outcome:
    def outcome(task: Task, rng: random.Random) -> tuple[bool, str]:
        success = rng.random() < rates[task.family]
        return success, "solved" if success else "wrong_answer"

    return outcome


def test_unknown_names_and_options_are_refused_with_the_known_ones() -> None:
    tasks = _tasks({"a": ["easy"]})
    with pytest.raises(ValueError, match="unknown curriculum 'mixed'; available: difficulty-ramp, failure-focused, "
                                         "mixed-outcome, uniform"):
        make_sampler("mixed", tasks)
    with pytest.raises(ValueError, match="unknown option.*group_sise.*options: window, group_size, floor"):
        make_sampler("mixed-outcome", tasks, group_sise=4)
    with pytest.raises(ValueError, match="at least one task"):
        make_sampler("uniform", [])
    sampler = make_sampler("uniform", tasks)
    with pytest.raises(ValueError, match="'nope' is not one of this sampler's 3 tasks"):
        sampler.update("nope", True)
    assert set(SAMPLERS) == {"uniform", "mixed-outcome", "difficulty-ramp", "failure-focused"}


def test_uniform_draws_every_task_once_per_pass() -> None:
    tasks = _tasks({"a": ["easy", "hard"], "b": ["medium"]})  # 9 tasks
    sampler = make_sampler("uniform", tasks, seed=3)
    first, second = sampler.sample(9), sampler.sample(9)
    assert sorted(task.id for task in first) == sorted(task.id for task in tasks)
    assert sorted(task.id for task in second) == sorted(task.id for task in tasks)
    assert [task.id for task in first] != [task.id for task in second]  # a new order each pass


def test_mixed_outcome_prefers_tasks_near_half_and_raises_the_mixed_group_share() -> None:
    tasks = _tasks({"solved": ["easy"], "failed": ["hard"], "half": ["medium"]}, per_level=10)
    outcome = _by_rate({"solved": 1.0, "failed": 0.0, "half": 0.5})
    results = {}
    for name in ("uniform", "mixed-outcome"):
        drawn, mixed = _run(make_sampler(name, tasks, seed=1), outcome, steps=80)
        late = Counter(task.family for task in drawn[160:])  # the last 40 steps, once every task was seen
        results[name] = (late["half"] / sum(late.values()), sum(mixed[160:]) / len(mixed[160:]))
    uniform_half, uniform_mixed = results["uniform"]
    curriculum_half, curriculum_mixed = results["mixed-outcome"]
    assert uniform_half == pytest.approx(1 / 3, abs=0.07)
    assert curriculum_half > 0.55  # near-0.5 tasks weigh ~1, always-solved and always-failed ones ~0.2
    assert curriculum_mixed > uniform_mixed + 0.25
    assert mixed_group_chance(0.5, 8) > 0.99 and mixed_group_chance(0.0, 8) == 0.0


def test_mixed_outcome_keeps_exploring_unseen_tasks_when_seen_ones_all_fail() -> None:
    tasks = _tasks({"a": ["easy"]}, per_level=40)
    sampler = make_sampler("mixed-outcome", tasks, seed=2)
    drawn, _ = _run(sampler, _by_rate({"a": 0.0}), steps=10)
    # Nothing is informative, so an unseen task weighs what a seen one does: draws spread over the tasks
    # instead of coming back to the few seen first.
    assert len({task.id for task in drawn}) >= 28


def test_difficulty_ramp_moves_up_each_family_as_its_success_rises() -> None:
    # Two vocabularies: SQL's simple/moderate/challenging and the other domains' easy/medium/hard.
    tasks = _tasks({"sql": ["simple", "moderate", "challenging"], "fhir": ["easy", "medium", "hard"]})
    sampler = make_sampler("difficulty-ramp", tasks, seed=0)
    skill = {"value": 0}

    def outcome(task: Task, rng: random.Random) -> tuple[bool, str]:
        success = difficulty_rank(task.difficulty) <= skill["value"]
        return success, "solved" if success else "wrong_answer"

    def ranks(drawn: list[Task]) -> Counter[int]:
        return Counter(difficulty_rank(task.difficulty) for task in drawn)

    first, _ = _run(sampler, lambda task, rng: (False, "wrong_answer"), steps=10)
    assert set(ranks(first)) == {0}  # failing: the ramp stays at the easiest level
    _run(sampler, outcome, steps=3)  # now the easiest level is solved: both families move up
    assert sampler.level("sql") == 1 and sampler.level("fhir") == 1
    middle, _ = _run(sampler, outcome, steps=10)
    counts = ranks(middle)
    assert 2 not in counts and counts[1] > 2.5 * counts[0] > 0  # mostly the new level, some review
    skill["value"] = 1
    _run(sampler, outcome, steps=5)
    late, _ = _run(sampler, outcome, steps=10)
    assert ranks(late).most_common(1)[0][0] == 2
    assert sampler.stats()["families_at_top"] == 1.0


def test_difficulty_ramp_refuses_unknown_levels_unless_ordered() -> None:
    tasks = _tasks({"a": ["warmup", "boss"]})
    with pytest.raises(ValueError, match="unknown difficulty 'warmup'.*pass levels="):
        make_sampler("difficulty-ramp", tasks)
    sampler = make_sampler("difficulty-ramp", tasks, levels=["warmup", "boss"])
    assert {task.difficulty for task in sampler.sample(20)} == {"warmup"}


def test_failure_focused_oversamples_families_failing_with_the_most_frequent_labels() -> None:
    tasks = _tasks({"coding": ["easy"], "lookup": ["easy"], "cohort": ["easy"], "easy": ["easy"]})
    labels = {"coding": "wrong_answer", "cohort": "wrong_answer", "lookup": "format_error"}

    def outcome(task: Task, rng: random.Random) -> tuple[bool, str]:
        if task.family == "easy":
            return True, "solved"
        return False, labels[task.family]

    sampler = make_sampler("failure-focused", tasks, seed=4, focus=1)
    _run(sampler, outcome, steps=10)
    assert list(sampler.focus_labels()) == ["wrong_answer"]  # two families fail with it, one with format_error
    drawn, _ = _run(sampler, outcome, steps=50)
    share = Counter(task.family for task in drawn)
    assert share["coding"] + share["cohort"] > 0.85 * len(drawn)
    assert share["lookup"] > 0 and share["easy"] > 0  # the floor keeps the others in
    uniform, _ = _run(make_sampler("uniform", tasks, seed=4), outcome, steps=50)
    assert Counter(task.family for task in uniform)["coding"] < 0.3 * len(uniform)


def test_failures_without_a_diagnosis_count_as_unfinished() -> None:
    tasks = _tasks({"a": ["easy"], "b": ["easy"]})
    sampler = make_sampler("failure-focused", tasks, focus=1)
    for task in tasks:
        sampler.update(task.id, task.family == "b", diagnosis=None)
    assert sampler.focus_labels() == {"unfinished": 1.0}
    assert sampler.family_weights()["a"] > sampler.family_weights()["b"]


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_same_seed_and_outcomes_give_the_same_draws(name: str) -> None:
    tasks = _tasks({"a": ["easy", "medium"], "b": ["easy", "hard"]})
    outcome = _by_rate({"a": 0.5, "b": 0.2})
    first, _ = _run(make_sampler(name, tasks, seed=7), outcome, steps=20)
    again, _ = _run(make_sampler(name, tasks, seed=7), outcome, steps=20)
    other, _ = _run(make_sampler(name, tasks, seed=8), outcome, steps=20)
    assert [task.id for task in first] == [task.id for task in again]
    assert [task.id for task in first] != [task.id for task in other]


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_a_restored_state_continues_with_the_same_draws(name: str) -> None:
    tasks = _tasks({"a": ["easy", "medium"], "b": ["easy", "hard"]})
    outcome = _by_rate({"a": 0.6, "b": 0.3})
    original = make_sampler(name, tasks, seed=5)
    _run(original, outcome, steps=15, seed=1)
    saved = json.loads(json.dumps(original.state_dict()))  # a state is plain JSON
    restored = make_sampler(name, tasks, seed=99)  # the state, not the seed, decides what comes next
    restored.load_state_dict(saved)
    assert restored.stats() == original.stats()
    after_original, _ = _run(original, outcome, steps=15, seed=2)
    after_restored, _ = _run(restored, outcome, steps=15, seed=2)
    assert [task.id for task in after_original] == [task.id for task in after_restored]
    assert restored.state_dict() == original.state_dict()


def test_a_state_is_refused_by_another_sampler_or_task_list() -> None:
    tasks = _tasks({"a": ["easy"]})
    state = make_sampler("mixed-outcome", tasks).state_dict()
    with pytest.raises(ValueError, match="state is of the 'mixed-outcome' sampler.*--curriculum mixed-outcome"):
        make_sampler("uniform", tasks).load_state_dict(state)
    with pytest.raises(ValueError, match="another task list"):
        make_sampler("mixed-outcome", _tasks({"a": ["easy"]}, per_level=4)).load_state_dict(state)
