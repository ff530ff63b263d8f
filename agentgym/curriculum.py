"""Curricula: seeded, resumable task samplers that choose which tasks the next rollouts practise.

```python
from agentgym.curriculum import make_sampler

sampler = make_sampler("mixed-outcome", tasks, seed=0)   # tasks: a sequence of agentgym Tasks
for step in range(steps):
    for task in sampler.sample(4):                         # 4 draws (a task may come back in later calls)
        ...run a group of rollouts of `task`...
        sampler.update(task.id, success, diagnosis=info["diagnosis"])   # once per finished episode
state = sampler.state_dict()                               # JSON-able; load_state_dict(state) resumes exactly
```

Samplers (`SAMPLERS`, name to class; docs/curriculum.md says when to use which):
- `uniform`: shuffled passes over the tasks, each task once per pass.
- `mixed-outcome`: prefers tasks whose recent pass rate makes a group of rollouts likely to hold both a success
  and a failure (pass rate near 0.5); unseen tasks weigh what a seen task does on average.
- `difficulty-ramp`: per family, draws the lowest difficulty level until the family's success rate there
  rises, then the next level (with some review of the levels below).
- `failure-focused`: oversamples the families whose failed episodes carry the diagnosis labels
  (`info["diagnosis"]["episode"]`) the policy fails with most.

A sampler's draws are a function of its seed and of the updates it received, in order: the same seed and the
same updates give the same draws, and a sampler restored from `state_dict()` continues with the draws the
original would have made. Samplers never read a task's answer or solution; they see ids, families, difficulty
levels, outcomes and diagnosis labels.
"""

from __future__ import annotations

import hashlib
import inspect
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from agentgym.diagnosis import SOLVED
from agentgym.tasks import DIFFICULTY_LEVELS, Task, shared_difficulty

STATE_VERSION = 1
UNFINISHED = "unfinished"  # the label of a failed episode without a diagnosis (e.g. a trainer ended it)

def difficulty_rank(difficulty: str, levels: Sequence[str] | None = None) -> int:
    """The rank of a task's difficulty: its index in `levels` when given, else the index of its shared level in
    `agentgym.tasks.DIFFICULTY_LEVELS` (any synonym that `shared_difficulty` maps counts), or its value for a
    digit string. Raises ValueError naming the known levels for anything else."""
    name = str(difficulty).strip().lower()
    if levels is not None:
        order = [str(level).strip().lower() for level in levels]
        if name in order:
            return order.index(name)
        raise ValueError(f"difficulty {difficulty!r} is not in the given levels {list(levels)}; add it there")
    shared = shared_difficulty(name)
    if shared is not None:
        return DIFFICULTY_LEVELS.index(shared)
    if name.isdigit():
        return int(name)
    raise ValueError(f"unknown difficulty {difficulty!r}: known are {', '.join(DIFFICULTY_LEVELS)} (and their "
                     f"synonyms, see agentgym.tasks) or a digit; pass levels=[...] (easiest first) to order others")


def _rng_state(rng: random.Random) -> list[Any]:
    version, internal, gauss = rng.getstate()
    return [version, list(internal), gauss]


def _set_rng_state(rng: random.Random, state: Sequence[Any]) -> None:
    version, internal, gauss = state
    rng.setstate((int(version), tuple(int(value) for value in internal), gauss))


def _tasks_digest(tasks: Sequence[Task]) -> str:
    return hashlib.sha256("\n".join(task.id for task in tasks).encode()).hexdigest()[:16]


def _episode_label(success: bool, diagnosis: Mapping[str, Any] | None) -> str:
    if success:
        return SOLVED
    if diagnosis is not None and isinstance(diagnosis.get("episode"), str) and diagnosis["episode"] != SOLVED:
        return str(diagnosis["episode"])
    return UNFINISHED


class TaskSampler:
    """Base of the samplers: the task list, a seeded RNG, and each task's recent outcomes.

    Args:
        tasks: The tasks to draw from (ids must be unique).
        seed: Seed of the sampler's own random generator.
        window: How many of a task's latest outcomes count as its recent pass rate.

    Subclasses implement `_draw(n)` and may keep extra state (`_extra_state`, `_load_extra_state`) and
    react to outcomes (`_record`).
    """

    name: ClassVar[str] = ""

    def __init__(self, tasks: Sequence[Task], *, seed: int = 0, window: int = 16) -> None:
        self.tasks: list[Task] = list(tasks)
        if not self.tasks:
            raise ValueError(f"the {self.name} sampler needs at least one task (is the split empty?)")
        self._by_id: dict[str, Task] = {}
        for task in self.tasks:
            if task.id in self._by_id:
                raise ValueError(f"task id {task.id!r} appears twice; a sampler needs unique task ids")
            self._by_id[task.id] = task
        if window < 1:
            raise ValueError(f"window must be at least 1, got {window}")
        self.seed = int(seed)
        self.window = int(window)
        self._rng = random.Random(self.seed)
        self._recent: dict[str, list[int]] = {}  # task id -> its last `window` outcomes (1 success, 0 failure)
        self._draws = 0
        self._episodes = 0
        self._successes = 0

    # ------------------------------------------------------------------------------------- the contract
    def sample(self, n: int) -> list[Task]:
        """`n` draws (tasks may repeat across calls; within one call only when `n` exceeds the candidates)."""
        if n < 0:
            raise ValueError(f"sample(n) needs n >= 0, got {n}")
        drawn = self._draw(int(n))
        self._draws += len(drawn)
        return drawn

    def update(self, task_id: str, success: bool, *, diagnosis: Mapping[str, Any] | None = None) -> None:
        """Record one finished episode of `task_id`. `diagnosis` is the env's `info["diagnosis"]` (its
        `episode` label is read); None for an episode that ended without one."""
        task = self._by_id.get(str(task_id))
        if task is None:
            raise ValueError(f"task {task_id!r} is not one of this sampler's {len(self.tasks)} tasks")
        outcome = 1 if success else 0
        recent = self._recent.setdefault(task.id, [])
        recent.append(outcome)
        del recent[:-self.window]
        self._episodes += 1
        self._successes += outcome
        self._record(task, bool(success), _episode_label(bool(success), diagnosis))

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue: JSON-serialisable (lists, dicts, numbers, strings)."""
        return {"sampler": self.name, "version": STATE_VERSION, "seed": self.seed, "tasks": len(self.tasks),
                "tasks_digest": _tasks_digest(self.tasks), "rng": _rng_state(self._rng), "draws": self._draws,
                "episodes": self._episodes, "successes": self._successes,
                "recent": {key: list(value) for key, value in self._recent.items()}, **self._extra_state()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a `state_dict()`. Raises ValueError when it belongs to another sampler or another task list."""
        if state.get("sampler") != self.name:
            raise ValueError(f"this state is of the {state.get('sampler')!r} sampler, not {self.name!r}; resume "
                             f"with --curriculum {state.get('sampler')}")
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"sampler state version {state.get('version')} is not {STATE_VERSION}")
        if state.get("tasks_digest") != _tasks_digest(self.tasks):
            raise ValueError(f"the saved sampler state is of another task list ({state.get('tasks')} tasks, this "
                             f"one has {len(self.tasks)}); resume with the same env, split and tasks")
        self.seed = int(state["seed"])
        _set_rng_state(self._rng, state["rng"])
        self._draws, self._episodes, self._successes = int(state["draws"]), int(state["episodes"]), int(
            state["successes"])
        self._recent = {str(key): [int(value) for value in values] for key, values in state["recent"].items()}
        self._load_extra_state(state)

    def stats(self) -> dict[str, float]:
        """Numbers for a training log (keys without a prefix)."""
        return {"draws": float(self._draws), "episodes": float(self._episodes),
                "success_rate": self._successes / self._episodes if self._episodes else 0.0,
                "tasks_seen": float(len(self._recent)), **self._extra_stats()}

    # ------------------------------------------------------------------------------------- for subclasses
    def _draw(self, n: int) -> list[Task]:
        raise NotImplementedError

    def _record(self, task: Task, success: bool, label: str) -> None:
        """React to one outcome (after the base class stored it)."""

    def _extra_state(self) -> dict[str, Any]:
        return {}

    def _load_extra_state(self, state: Mapping[str, Any]) -> None:
        """Restore what `_extra_state` saved."""

    def _extra_stats(self) -> dict[str, float]:
        return {}

    def _weighted_pick(self, candidates: Sequence[Task], weights: Sequence[float]) -> Task:
        """One of `candidates`, with probability proportional to its weight (uniform when all are 0)."""
        total = sum(weights)
        if total <= 0.0:
            return candidates[self._rng.randrange(len(candidates))]
        point = self._rng.random() * total
        for candidate, weight in zip(candidates, weights, strict=True):
            point -= weight
            if point < 0.0:
                return candidate
        return candidates[-1]


class UniformSampler(TaskSampler):
    """`uniform`: shuffled passes over the tasks; each task is drawn once per pass, in a new order each pass.

    The same law as TRL's own sampler (a permutation per epoch). Use it as the baseline a curriculum is
    compared with. Outcomes are recorded only for `stats()`.
    """

    name = "uniform"

    def __init__(self, tasks: Sequence[Task], *, seed: int = 0, window: int = 16) -> None:
        super().__init__(tasks, seed=seed, window=window)
        self._order: list[int] = []
        self._position = 0

    def _draw(self, n: int) -> list[Task]:
        drawn = []
        for _ in range(n):
            if self._position >= len(self._order):
                self._order = list(range(len(self.tasks)))
                self._rng.shuffle(self._order)
                self._position = 0
            drawn.append(self.tasks[self._order[self._position]])
            self._position += 1
        return drawn

    def _extra_state(self) -> dict[str, Any]:
        return {"order": list(self._order), "position": self._position}

    def _load_extra_state(self, state: Mapping[str, Any]) -> None:
        self._order = [int(index) for index in state["order"]]
        self._position = int(state["position"])


def mixed_group_chance(pass_rate: float, group_size: int) -> float:
    """The chance that `group_size` independent rollouts at `pass_rate` hold both a success and a failure:
    1 − p^G − (1 − p)^G. It peaks at p = 0.5 and is 0 at p = 0 and p = 1 (a group with no advantage)."""
    return 1.0 - pass_rate ** group_size - (1.0 - pass_rate) ** group_size


class MixedOutcomeSampler(TaskSampler):
    """`mixed-outcome`: prefers tasks whose groups of rollouts are likely to hold both outcomes.

    A GRPO group whose rollouts all succeed or all fail has zero advantage and teaches nothing. Each seen task's
    pass rate is estimated from its last `window` outcomes with a half-success prior, p = (successes + 0.5) /
    (episodes + 1), and its weight is `mixed_group_chance(p, group_size)` (at least `floor`): highest near 0.5,
    low for tasks always solved or always failed (never zero: the policy changes). An unseen task weighs the mean
    weight of the seen tasks (before anything is seen, all weigh the same): that is how informative a task drawn
    at random has been, so unseen tasks keep being explored, more when the seen ones are uninformative. Draws are
    proportional to the weights; no task repeats within one `sample` call unless it asks for more tasks than
    exist.

    Args:
        tasks, seed, window: As for `TaskSampler`.
        group_size: Rollouts per task in a group (the trainer's `num_generations`).
        floor: Least weight of a seen task.
    """

    name = "mixed-outcome"

    def __init__(self, tasks: Sequence[Task], *, seed: int = 0, window: int = 16, group_size: int = 8,
                 floor: float = 0.02) -> None:
        super().__init__(tasks, seed=seed, window=window)
        if group_size < 2:
            raise ValueError(f"group_size must be at least 2 (a group of one has no advantage), got {group_size}")
        if floor < 0.0:
            raise ValueError(f"floor must be >= 0, got {floor}")
        self.group_size, self.floor = int(group_size), float(floor)

    def pass_rate(self, task_id: str) -> float | None:
        """The estimated pass rate of a task, None if it was never seen."""
        recent = self._recent.get(task_id)
        if not recent:
            return None
        return (sum(recent) + 0.5) / (len(recent) + 1)

    def weights(self) -> dict[str, float]:
        """Every task's sampling weight (see the class docstring)."""
        seen = {task_id: max(mixed_group_chance(rate, self.group_size), self.floor)
                for task_id in self._recent if (rate := self.pass_rate(task_id)) is not None}
        unseen = sum(seen.values()) / len(seen) if seen else 1.0
        return {task.id: seen.get(task.id, unseen) for task in self.tasks}

    def _draw(self, n: int) -> list[Task]:
        weights = self.weights()
        drawn: list[Task] = []
        taken: set[str] = set()
        for _ in range(n):
            if len(taken) >= len(self.tasks):
                taken.clear()
            free = [task for task in self.tasks if task.id not in taken]
            task = self._weighted_pick(free, [weights[item.id] for item in free])
            taken.add(task.id)
            drawn.append(task)
        return drawn

    def _extra_stats(self) -> dict[str, float]:
        rates = [rate for rate in (self.pass_rate(task_id) for task_id in self._recent) if rate is not None]
        if not rates:
            return {"near_half_share": 0.0, "mean_mixed_chance": 0.0}
        return {"near_half_share": sum(0.2 <= rate <= 0.8 for rate in rates) / len(rates),
                "mean_mixed_chance": sum(mixed_group_chance(rate, self.group_size) for rate in rates) / len(rates)}


class DifficultyRampSampler(TaskSampler):
    """`difficulty-ramp`: per family, the lowest difficulty level first, the next once the family succeeds there.

    Each family starts at its easiest level (ranks from `difficulty_rank`: simple/easy, then moderate/medium,
    then challenging/hard, or the order given in `levels`). When the family's last `window` outcomes at its
    current level reach a success rate of `promote_at` (and there are at least `window` of them), it moves up one
    level. A draw picks a family uniformly (so every family ramps, however many tasks it has), then a share
    `review` of the time a level below the current one, else the current level, then a task of that family and
    level uniformly. Outcomes of tasks below the current level count for stats only. Levels never go down.

    Args:
        tasks, seed, window: As for `TaskSampler` (`window` is also the promotion window).
        promote_at: Success rate at the current level that moves the family up.
        review: Share of draws from levels below the current one.
        levels: Difficulty names in order, easiest first (default: the known names of all domains).
    """

    name = "difficulty-ramp"

    def __init__(self, tasks: Sequence[Task], *, seed: int = 0, window: int = 16, promote_at: float = 0.6,
                 review: float = 0.2, levels: Sequence[str] | None = None) -> None:
        super().__init__(tasks, seed=seed, window=window)
        if not 0.0 < promote_at <= 1.0 or not 0.0 <= review <= 1.0:
            raise ValueError(f"promote_at must be in (0, 1] and review in [0, 1] (got {promote_at}, {review})")
        self.promote_at, self.review = float(promote_at), float(review)
        self._rank = {task.id: difficulty_rank(task.difficulty, levels) for task in self.tasks}
        self._buckets: dict[str, dict[int, list[Task]]] = {}
        for task in self.tasks:
            self._buckets.setdefault(task.family, {}).setdefault(self._rank[task.id], []).append(task)
        self._families = sorted(self._buckets)
        self._levels = {family: sorted(buckets) for family, buckets in self._buckets.items()}
        self._current = {family: 0 for family in self._families}  # index into the family's levels
        self._at_level: dict[str, list[int]] = {family: [] for family in self._families}

    def level(self, family: str) -> int:
        """The difficulty rank a family is drawn at now."""
        return self._levels[family][self._current[family]]

    def _draw(self, n: int) -> list[Task]:
        drawn = []
        for _ in range(n):
            family = self._families[self._rng.randrange(len(self._families))]
            index = self._current[family]
            if index > 0 and self._rng.random() < self.review:
                index = self._rng.randrange(index)
            bucket = self._buckets[family][self._levels[family][index]]
            drawn.append(bucket[self._rng.randrange(len(bucket))])
        return drawn

    def _record(self, task: Task, success: bool, label: str) -> None:
        family = task.family
        if self._rank[task.id] != self.level(family):
            return
        outcomes = self._at_level[family]
        outcomes.append(1 if success else 0)
        del outcomes[:-self.window]
        top = len(self._levels[family]) - 1
        if self._current[family] < top and len(outcomes) >= self.window and sum(outcomes) >= self.promote_at * len(
                outcomes):
            self._current[family] += 1
            self._at_level[family] = []

    def _extra_state(self) -> dict[str, Any]:
        return {"current": dict(self._current), "at_level": {key: list(value) for key, value in self._at_level.items()}}

    def _load_extra_state(self, state: Mapping[str, Any]) -> None:
        self._current = {family: int(state["current"][family]) for family in self._families}
        self._at_level = {family: [int(value) for value in state["at_level"][family]] for family in self._families}

    def _extra_stats(self) -> dict[str, float]:
        progress = [self._current[family] / (len(self._levels[family]) - 1) if len(self._levels[family]) > 1 else 1.0
                    for family in self._families]
        at_top = [self._current[family] == len(self._levels[family]) - 1 for family in self._families]
        return {"level_progress": sum(progress) / len(progress), "families_at_top": sum(at_top) / len(at_top)}


class FailureFocusedSampler(TaskSampler):
    """`failure-focused`: oversamples the families whose failures carry the policy's most frequent failure labels.

    Every finished episode is labelled `solved`, its diagnosis' episode label (`info["diagnosis"]["episode"]`:
    `wrong_answer`, `tool_error`, `no_progress`, ...) or `unfinished` when it failed without a diagnosis. Over
    each family's last `family_window` episodes, the `focus` failure labels most frequent across all families are
    the policy's main failure modes; a family's weight is `floor` plus the share of its recent episodes that failed
    with them (each label weighted by how frequent it is overall). A draw picks a family by weight, then one of
    its tasks uniformly. Families never seen yet weigh as much as the heaviest seen family (so each is tried);
    with no failures recorded anywhere, families are drawn uniformly.

    Args:
        tasks, seed, window: As for `TaskSampler`.
        family_window: Latest episodes per family that count.
        focus: How many of the most frequent failure labels the weights follow.
        floor: Weight every family keeps (so a family the policy solves is still reviewed).
    """

    name = "failure-focused"

    def __init__(self, tasks: Sequence[Task], *, seed: int = 0, window: int = 16, family_window: int = 64,
                 focus: int = 3, floor: float = 0.1) -> None:
        super().__init__(tasks, seed=seed, window=window)
        if family_window < 1 or focus < 1 or floor < 0.0:
            raise ValueError(f"family_window and focus must be >= 1 and floor >= 0 (got {family_window}, {focus}, "
                             f"{floor})")
        self.family_window, self.focus, self.floor = int(family_window), int(focus), float(floor)
        self._by_family: dict[str, list[Task]] = {}
        for task in self.tasks:
            self._by_family.setdefault(task.family, []).append(task)
        self._families = sorted(self._by_family)
        self._labels: dict[str, list[str]] = {}  # family -> its last `family_window` episode labels

    def focus_labels(self) -> dict[str, float]:
        """The `focus` most frequent failure labels over all families' recent episodes, with their share of the
        failures (most frequent first; ties by name)."""
        counts = Counter(label for labels in self._labels.values() for label in labels if label != SOLVED)
        total = sum(counts.values())
        top = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:self.focus]
        return {label: count / total for label, count in top}

    def family_weights(self) -> dict[str, float]:
        """Each family's sampling weight (see the class docstring)."""
        focus = self.focus_labels()
        if not focus:
            return {family: 1.0 for family in self._families}
        weights: dict[str, float] = {}
        for family in self._families:
            labels = self._labels.get(family)
            if labels:
                weights[family] = self.floor + sum(focus.get(label, 0.0) for label in labels) / len(labels)
        heaviest = max(weights.values())
        return {family: weights.get(family, heaviest) for family in self._families}

    def _draw(self, n: int) -> list[Task]:
        weights = self.family_weights()
        families = list(weights)
        drawn = []
        for _ in range(n):
            point = self._rng.random() * sum(weights.values())
            family = families[-1]
            for name in families:
                point -= weights[name]
                if point < 0.0:
                    family = name
                    break
            bucket = self._by_family[family]
            drawn.append(bucket[self._rng.randrange(len(bucket))])
        return drawn

    def _record(self, task: Task, success: bool, label: str) -> None:
        labels = self._labels.setdefault(task.family, [])
        labels.append(label)
        del labels[:-self.family_window]

    def _extra_state(self) -> dict[str, Any]:
        return {"labels": {key: list(value) for key, value in self._labels.items()}}

    def _load_extra_state(self, state: Mapping[str, Any]) -> None:
        self._labels = {str(key): [str(label) for label in value] for key, value in state["labels"].items()}

    def _extra_stats(self) -> dict[str, float]:
        focus = self.focus_labels()
        stats = {f"focus/{label}": share for label, share in focus.items()}
        weights = self.family_weights()
        stats["top_family_weight_share"] = max(weights.values()) / sum(weights.values())
        return stats


SAMPLERS: dict[str, type[TaskSampler]] = {
    sampler.name: sampler
    for sampler in (UniformSampler, MixedOutcomeSampler, DifficultyRampSampler, FailureFocusedSampler)
}


def make_sampler(name: str, tasks: Sequence[Task], seed: int = 0, **options: Any) -> TaskSampler:
    """The sampler called `name` over `tasks`. Raises ValueError for an unknown name or option, listing the
    known ones."""
    sampler_class = SAMPLERS.get(name)
    if sampler_class is None:
        raise ValueError(f"unknown curriculum {name!r}; available: {', '.join(sorted(SAMPLERS))}")
    accepted = [parameter for parameter in inspect.signature(sampler_class.__init__).parameters
                if parameter not in ("self", "tasks", "seed")]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(unknown)} for the {name} curriculum; its options: "
                         f"{', '.join(accepted)}")
    return sampler_class(tasks, seed=seed, **options)
