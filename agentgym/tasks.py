"""Tasks: the `Task` model, JSONL task files, and `TaskSet` (filtering, splits, seeded sampling).

A task file is JSON Lines, one `Task` per line. Unknown fields are errors, reported with file, line and field,
so a typo in a task file never silently changes what is verified.
"""

from __future__ import annotations

import json
import os
import threading
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pydantic

# The difficulty vocabulary every env shares, easiest first: eval summaries, reports and the viewer group by it.
DIFFICULTY_LEVELS = ("easy", "medium", "hard")
# Other labels for the same levels, as benchmarks and generators write them (BIRD, and our SQL generator after
# it: simple/moderate/challenging; Spider's hardness: easy/medium/hard/extra). A task given one of these gets the
# shared level, and its own label is kept in `metadata["source_difficulty"]`.
DIFFICULTY_SYNONYMS: dict[str, str] = {
    "simple": "easy", "beginner": "easy", "basic": "easy",
    "moderate": "medium", "intermediate": "medium", "normal": "medium",
    "challenging": "hard", "difficult": "hard", "advanced": "hard", "extra": "hard", "extra hard": "hard",
    "extra_hard": "hard", "very hard": "hard", "expert": "hard",
}
SOURCE_DIFFICULTY = "source_difficulty"


class UnknownDifficultyWarning(UserWarning):
    """A task's difficulty label is neither a shared level nor a known synonym; it is kept as given."""


_reported_labels: set[str] = set()
_reported_lock = threading.Lock()


def shared_difficulty(label: str) -> str | None:
    """The shared level (`DIFFICULTY_LEVELS`) of a difficulty label, case and spaces aside; None if unknown."""
    name = " ".join(str(label).strip().lower().split())
    if name in DIFFICULTY_LEVELS:
        return name
    return DIFFICULTY_SYNONYMS.get(name)


def _report_unknown_difficulty(label: str) -> None:
    with _reported_lock:
        if label in _reported_labels:
            return
        _reported_labels.add(label)
    warnings.warn(UnknownDifficultyWarning(
        f"task difficulty {label!r} is not one of {', '.join(DIFFICULTY_LEVELS)} nor a known synonym "
        f"({', '.join(sorted(DIFFICULTY_SYNONYMS))}); kept as given, so it forms a group of its own in eval "
        f"summaries: use a shared level and keep your label in metadata['{SOURCE_DIFFICULTY}']"), stacklevel=2)


class VerifierSpec(pydantic.BaseModel):
    """Which verifier scores a task and with what parameters."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    name: str
    params: dict[str, Any] = {}


class Task(pydantic.BaseModel):
    """One verifiable task.

    `solution` is a list of tool calls (`{"name", "arguments"}`) that the oracle replays one per turn; replaying
    it must score 1.0. `answer` is the gold answer (never shown to a model agent). `difficulty` is one of the
    shared `DIFFICULTY_LEVELS` (easy, medium, hard): a benchmark's own label is mapped to one (see
    `DIFFICULTY_SYNONYMS`) and kept in `metadata["source_difficulty"]`; an unknown label is kept as given and
    reported with an `UnknownDifficultyWarning`.
    """

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    id: str
    domain: str
    family: str
    split: str = "train"
    prompt: str
    answer: Any = None
    solution: list[dict[str, Any]] = []
    verifier: VerifierSpec = VerifierSpec(name="exact")
    metadata: dict[str, Any] = {}
    difficulty: str = "medium"

    @pydantic.model_validator(mode="before")
    @classmethod
    def _shared_difficulty(cls, data: Any) -> Any:
        """Map a known difficulty label to the shared level, keeping the label given in
        `metadata["source_difficulty"]`; keep an unknown label as it is and report it once per process."""
        if not isinstance(data, Mapping) or not isinstance(data.get("difficulty"), str):
            return data
        label = data["difficulty"]
        shared = shared_difficulty(label)
        if shared is None:
            _report_unknown_difficulty(label)
            return data
        if shared == label:
            return data
        metadata = data.get("metadata")
        if metadata is not None and not isinstance(metadata, Mapping):
            return data  # the metadata field's own error says what is wrong
        return {**data, "difficulty": shared, "metadata": {SOURCE_DIFFICULTY: label, **(metadata or {})}}

    @pydantic.field_validator("solution")
    @classmethod
    def _calls_are_well_formed(cls, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for position, call in enumerate(calls):
            if not isinstance(call.get("name"), str):
                raise ValueError(f"solution[{position}] needs a string 'name'")  # noqa: TRY004 (pydantic wants ValueError)
            if not isinstance(call.get("arguments", {}), dict):
                raise ValueError(f"solution[{position}].arguments must be an object")  # noqa: TRY004
        return calls


class TaskFileError(ValueError):
    """A task file could not be read; the message names the file, line and field."""


def load_tasks(path: str | Path) -> list[Task]:
    """Read a JSONL task file. Raises `TaskFileError` naming the file, line and field of the first problem."""
    path = Path(path)
    if not path.exists():
        raise TaskFileError(f"{path}: no such task file (make one with `agentgym tasks generate` or "
                            f"`agentgym tasks import`)")
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError as error:
                raise TaskFileError(f"{path}:{number}: not valid UTF-8 ({error.reason})") from None
            if not line:
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as error:
                raise TaskFileError(f"{path}:{number}: invalid JSON: {error.msg} at column {error.colno}") from None
            try:
                task = Task.model_validate(data)
            except pydantic.ValidationError as error:
                first = error.errors()[0]
                field = ".".join(str(part) for part in first["loc"]) or "(task)"
                raise TaskFileError(f"{path}:{number}: field '{field}': {first['msg']}") from None
            if task.id in seen:
                raise TaskFileError(f"{path}:{number}: duplicate task id {task.id!r} (first on line {seen[task.id]})")
            seen[task.id] = number
            tasks.append(task)
    return tasks


def save_tasks(tasks: Iterable[Task], path: str | Path) -> int:
    """Write tasks as JSONL (atomically: a temp file renamed into place). Returns the count written.

    The file is private (mode 0600): it holds gold answers and hidden tests, which no sandbox user may read
    wherever the file is put."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".partial")
    count = 0
    temporary.unlink(missing_ok=True)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with open(descriptor, "w", encoding="utf-8") as handle:
        for task in tasks:
            handle.write(task.model_dump_json() + "\n")
            count += 1
    temporary.replace(path)
    return count


_FILE_CACHE: dict[tuple[str, int, int], TaskSet] = {}


class TaskSet(Sequence[Task]):
    """An immutable, shareable sequence of tasks with an id index.

    Many env instances can hold the same `TaskSet`; filtering returns a view over the same `Task` objects.
    """

    def __init__(self, tasks: Iterable[Task]) -> None:
        self._tasks: tuple[Task, ...] = tuple(tasks)
        self._by_id = {task.id: position for position, task in enumerate(self._tasks)}

    @classmethod
    def coerce(cls, source: TaskSet | Sequence[Task] | str | Path) -> TaskSet:
        if isinstance(source, TaskSet):
            return source
        if isinstance(source, (str, Path)):
            return cls.from_file(source)
        return cls(source)

    @classmethod
    def from_file(cls, path: str | Path) -> TaskSet:
        """Load a JSONL task file once per process: envs made from the same unchanged file share one copy."""
        resolved = Path(path).resolve()
        try:
            stat = resolved.stat()
        except FileNotFoundError:
            return cls(load_tasks(resolved))  # raises TaskFileError with the fix
        key = (str(resolved), stat.st_mtime_ns, stat.st_size)
        cached = _FILE_CACHE.get(key)
        if cached is None:
            cached = _FILE_CACHE[key] = cls(load_tasks(resolved))
        return cached

    def __len__(self) -> int:
        return len(self._tasks)

    def __getitem__(self, index: int) -> Task:  # type: ignore[override]
        return self._tasks[index]

    def __iter__(self) -> Iterator[Task]:
        return iter(self._tasks)

    def get(self, task_id: str) -> Task:
        try:
            return self._tasks[self._by_id[task_id]]
        except KeyError:
            raise KeyError(f"no task with id {task_id!r} in this task set ({len(self)} tasks)") from None

    def filter(self, *, split: str | None = None, families: Sequence[str] | str | None = None,
               difficulty: Sequence[str] | str | None = None) -> TaskSet:
        """Tasks of one split, some families and/or some difficulty levels. `families` and `difficulty` take a
        list or one comma-separated string (as `--env-arg families=a,b` gives it); a difficulty is matched as
        `shared_difficulty` reads it, so `difficulty="challenging"` means hard. An empty result is an error that
        lists what exists."""
        wanted_families = _names(families)
        wanted_levels = [shared_difficulty(level) or level for level in _names(difficulty)]
        if split is None and not wanted_families and not wanted_levels:
            return self
        chosen = [
            task for task in self._tasks
            if (split is None or task.split == split)
            and (not wanted_families or task.family in wanted_families)
            and (not wanted_levels or task.difficulty in wanted_levels)
        ]
        if not chosen:
            raise ValueError(
                f"no tasks match split={split!r} families={wanted_families!r} difficulty={wanted_levels!r}; "
                f"splits: {sorted(self.splits())}; families: {sorted(self.families())}; "
                f"difficulties: {sorted({task.difficulty for task in self._tasks})}"
            )
        return TaskSet(chosen)

    def splits(self) -> set[str]:
        return {task.split for task in self._tasks}

    def families(self) -> set[str]:
        return {task.family for task in self._tasks}

    def sample(self, rng: np.random.Generator) -> Task:
        """One task drawn uniformly with `rng` (seeded by `reset(seed=...)`)."""
        return self._tasks[int(rng.integers(len(self._tasks)))]

    def counts(self, key: str = "family") -> dict[str, int]:
        result: dict[str, int] = {}
        for task in self._tasks:
            value = str(getattr(task, key))
            result[value] = result.get(value, 0) + 1
        return dict(sorted(result.items()))


def _names(value: Sequence[str] | str | None) -> list[str]:
    """A filter's names from a list or one comma-separated string; a bare string is never read letter by letter."""
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else [str(item) for item in value]
    return [item.strip() for item in items if item.strip()]
