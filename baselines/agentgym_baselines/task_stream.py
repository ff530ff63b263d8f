"""Curriculum-driven training data for TRL: task rows drawn, a generation batch's groups at a time, by an
`agentgym.curriculum` sampler, and the outcomes of the rollouts fed back to it.

`task_dataset(ENV, sampler=NAME_OR_SAMPLER)` returns a `CurriculumDataset`: an endless `datasets.IterableDataset`
whose rows (`prompt`, `task_id`, and the two control columns `curriculum` and `draw`) are drawn when the trainer's
data loader asks for them, not before. TRL repeats each row `num_generations` times, so one draw is one group.
`AgentGymEnvironment.reset(**row)` tells the stream that the row's group started; `get_reward()`, which TRL calls
once per finished rollout, reports the rollout's success and the env's diagnosis to the sampler.

Why a stream: TRL's own sampler fixes a permutation of the tasks at the start of each epoch, so a curriculum
could not react to outcomes. The data loader reads one generation batch ahead of training, so a draw sees the
outcomes of every batch but the last one.

Resuming: `CurriculumStream.state_dict()` holds the sampler's state and the rows drawn but not started yet (the
read-ahead). A stream restored from it first yields those rows again, then continues drawing, so a resumed run
sees the same rows as an uninterrupted one. The trainer's own data skipping must be off (`ignore_data_skip`),
which `agentgym train` sets. `shuffle()` is a no-op (TRL calls it): a shuffle buffer would draw far ahead.

Limits: one training process (under several processes each would hold its own sampler and groups would split).
"""

from __future__ import annotations

import itertools
import json
import uuid
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from datasets import Dataset, IterableDataset
from datasets.info import DatasetInfo
from datasets.iterable_dataset import ExamplesIterable
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from agentgym.curriculum import TaskSampler, make_sampler
from agentgym.tasks import Task

CURRICULUM_COLUMN = "curriculum"  # the stream's key, so the env finds the stream to report to
DRAW_COLUMN = "draw"  # the draw's index in the stream, shared by the rows of one group

_STREAMS: weakref.WeakValueDictionary[str, CurriculumStream] = weakref.WeakValueDictionary()


class CurriculumStream:
    """Rows drawn by `sampler`, one per group, and the outcomes reported back to it.

    Args:
        sampler: The curriculum.
        row: Builds a task's dataset row (its `prompt` and `task_id`; never the answer).
        groups_per_batch: Groups drawn together in one `sample` call (set it to the groups of a generation batch:
            samplers avoid repeating a task within a call). `agentgym train` sets it.
    """

    def __init__(self, sampler: TaskSampler, row: Callable[[Task], dict[str, Any]], groups_per_batch: int = 1) -> None:
        self.sampler = sampler
        self.key = uuid.uuid4().hex
        self.groups_per_batch = groups_per_batch
        self._row = row
        self._by_id = {task.id: task for task in sampler.tasks}
        self.draws = 0
        self._pending: list[tuple[int, str]] = []  # yielded, not started yet: (draw index, task id)
        self._queue: list[tuple[int, str]] = []    # drawn, not yielded yet (or restored from a checkpoint)
        _STREAMS[self.key] = self

    def rows(self) -> Iterator[dict[str, Any]]:
        """Endless rows: queued ones first, then `groups_per_batch` new draws whenever the queue is empty."""
        while True:
            if not self._queue:
                for task in self.sampler.sample(max(int(self.groups_per_batch), 1)):
                    self._queue.append((self.draws, task.id))
                    self.draws += 1
            index, task_id = self._queue.pop(0)
            self._pending.append((index, task_id))
            yield {**self._row(self._by_id[task_id]), CURRICULUM_COLUMN: self.key, DRAW_COLUMN: index}

    def started(self, draw: int) -> None:
        """The group of draw `draw` is being rolled out (so it, and every earlier draw, is no longer pending)."""
        self._pending = [entry for entry in self._pending if entry[0] > draw]

    def finished(self, task_id: str, success: bool, diagnosis: Mapping[str, Any] | None) -> None:
        """One rollout of `task_id` ended; the sampler learns its outcome."""
        self.sampler.update(task_id, success, diagnosis=diagnosis)

    def state_dict(self) -> dict[str, Any]:
        """The sampler's state, the draw count and the drawn rows not started yet, in order (JSON-able)."""
        waiting = self._pending + self._queue
        return {"sampler": self.sampler.state_dict(), "draws": self.draws,
                "pending": [[index, task_id] for index, task_id in waiting]}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a `state_dict()`: the next rows are the saved pending ones, then new draws."""
        self.sampler.load_state_dict(state["sampler"])
        self.draws = int(state["draws"])
        unknown = [task_id for _, task_id in state["pending"] if task_id not in self._by_id]
        if unknown:
            raise ValueError(f"the saved curriculum state names tasks this run does not have ({unknown[:3]}); "
                             f"resume with the same env, split and tasks")
        self._queue = [(int(index), str(task_id)) for index, task_id in state["pending"]]
        self._pending = []


class CurriculumDataset(IterableDataset):  # type: ignore[misc]
    """An endless dataset whose rows a curriculum draws as they are read; `stream` is its `CurriculumStream`."""

    stream: CurriculumStream

    def shuffle(self, *args: Any, **kwargs: Any) -> CurriculumDataset:
        """No-op: the curriculum chooses the order (a shuffle buffer would draw rows long before they are used)."""
        return self


def stream_of(row: Mapping[str, Any]) -> CurriculumStream | None:
    """The stream a dataset row came from (None for a row of a plain task dataset)."""
    key = row.get(CURRICULUM_COLUMN)
    if key is None:
        return None
    stream = _STREAMS.get(str(key))
    if stream is None:
        raise RuntimeError("this row comes from a curriculum dataset that no longer exists; keep the dataset "
                           "returned by task_dataset(..., sampler=...) alive while training")
    return stream


def _generate(key: str) -> Iterator[tuple[int, dict[str, Any]]]:
    stream = _STREAMS.get(key)
    if stream is None:
        raise RuntimeError("the curriculum stream of this dataset is gone; rebuild it with task_dataset(...)")
    yield from zip(itertools.count(), stream.rows())


def curriculum_dataset(tasks: Sequence[Task], row: Callable[[Task], dict[str, Any]], sampler: str | TaskSampler,
                       options: Mapping[str, Any] | None = None) -> CurriculumDataset:
    """A `CurriculumDataset` over `tasks` (see the module docstring).

    Args:
        tasks: The tasks the rows may be of.
        row: Builds a task's row (`prompt`, `task_id`).
        sampler: A curriculum name (`agentgym.curriculum.SAMPLERS`) or a sampler over (some of) `tasks`.
        options: Keyword options for `make_sampler` when `sampler` is a name (`seed`, `group_size`, ...).
    """
    if isinstance(sampler, str):
        chosen = make_sampler(sampler, tasks, **dict(options or {}))
    else:
        if options:
            raise ValueError("sampler options are for a sampler given by name; pass them to make_sampler instead")
        known = {task.id for task in tasks}
        foreign = [task.id for task in sampler.tasks if task.id not in known]
        if foreign:
            raise ValueError(f"the sampler holds tasks that are not in this dataset's env and split "
                             f"({', '.join(foreign[:3])}); build it from the same tasks")
        chosen = sampler
    stream = CurriculumStream(chosen, row)
    example = {**row(chosen.tasks[0]), CURRICULUM_COLUMN: stream.key, DRAW_COLUMN: 0}
    features = Dataset.from_list([example]).features
    dataset = CurriculumDataset(ExamplesIterable(_generate, {"key": stream.key}), info=DatasetInfo(features=features))
    dataset.stream = stream
    return dataset


def group_outcome_metrics(rewards: Sequence[float], successes: Sequence[bool], group_size: int) -> dict[str, float]:
    """Shares of the batch's groups (consecutive runs of `group_size` rollouts of one task):
    `groups/mixed_outcome_share`, groups holding both a success and a failure; `groups/zero_advantage_share`,
    groups whose rewards are all equal (their advantages are all 0). Empty when the batch is not whole groups."""
    if group_size < 1 or not rewards or len(rewards) % group_size or len(successes) != len(rewards):
        return {}
    groups = range(0, len(rewards), group_size)
    mixed = sum(1 for start in groups if len(set(successes[start:start + group_size])) == 2)
    equal = sum(1 for start in groups if max(rewards[start:start + group_size]) - min(
        rewards[start:start + group_size]) <= 1e-9)
    return {"groups/mixed_outcome_share": mixed / len(groups), "groups/zero_advantage_share": equal / len(groups)}


def batch_metrics(dataset: Any, stats: Sequence[Mapping[str, Any]], group_size: int) -> dict[str, float]:
    """What a trainer logs per generation batch: `group_outcome_metrics` of the rollouts' episode stats
    (`reward`, `success`), and the curriculum's `curriculum/<stat>` when `dataset` is a `CurriculumDataset`."""
    metrics = group_outcome_metrics([float(item["reward"]) for item in stats],
                                    [bool(item.get("success")) for item in stats], group_size)
    if isinstance(dataset, CurriculumDataset):
        metrics.update({f"curriculum/{key}": float(value) for key, value in dataset.stream.sampler.stats().items()})
    return metrics


# ----------------------------------------------------------------------------------------- training runs
STATE_FILE = "curriculum.json"  # in each checkpoint folder of a run with a curriculum


def curriculum_options(name: str, options: Mapping[str, Any], *, seed: int, group_size: int) -> dict[str, Any]:
    """`make_sampler` options for a training run: the run's seed, and for `mixed-outcome` the run's group size,
    unless `options` sets them."""
    chosen = {"seed": seed, **options}
    if name == "mixed-outcome":
        chosen.setdefault("group_size", group_size)
    return chosen


def fit_config_to_curriculum(config: Any, dataset: Any) -> list[str]:
    """Trainer settings a `CurriculumDataset` needs; returns notes for the changes made.

    The dataset is endless, so `max_steps` must be set: by default, as many steps as one pass over the tasks
    takes. The trainer's data skipping on resume is turned off: the restored stream continues by itself."""
    if not isinstance(dataset, CurriculumDataset):
        return []
    notes = []
    if config.world_size > 1:
        raise ValueError(f"a curriculum runs in one training process (this run has {config.world_size}): each "
                         f"process would keep its own sampler and split the groups; drop --curriculum")
    config.ignore_data_skip = True
    dataset.stream.groups_per_batch = max(config.generation_batch_size // config.num_generations, 1)
    if config.max_steps is None or config.max_steps <= 0:
        per_step = max(config.per_device_train_batch_size * config.gradient_accumulation_steps
                       // config.num_generations, 1)
        tasks = len(dataset.stream.sampler.tasks)
        config.max_steps = -(-tasks // per_step)
        notes.append(f"max_steps={config.max_steps}: a curriculum draws without end, so the run takes as many steps "
                     f"as one pass over the {tasks} tasks ({per_step} per step); set --max-steps to choose")
    return notes


class CurriculumCheckpoints(TrainerCallback):
    """Writes the stream's state to `checkpoint-N/curriculum.json` beside each checkpoint the trainer saves."""

    def __init__(self, stream: CurriculumStream) -> None:
        self.stream = stream

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                **kwargs: Any) -> None:
        if not state.is_world_process_zero:
            return
        folder = Path(str(args.output_dir)) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
        if folder.is_dir():
            (folder / STATE_FILE).write_text(json.dumps(self.stream.state_dict()), encoding="utf-8")


def restore_curriculum(dataset: Any, checkpoint: str | Path) -> None:
    """Restore the stream of `dataset` from `checkpoint` (a no-op without a curriculum). Raises ValueError when
    the checkpoint and the run disagree on whether there is a curriculum, or on which one."""
    path = Path(checkpoint) / STATE_FILE
    if not isinstance(dataset, CurriculumDataset):
        if path.exists():
            saved = json.loads(path.read_text(encoding="utf-8"))["sampler"]["sampler"]
            raise ValueError(f"{checkpoint} was trained with --curriculum {saved}; resume with the same option")
        return
    if not path.exists():
        raise ValueError(f"{path} is missing: {checkpoint} was trained without a curriculum; resume without "
                         f"--curriculum, or start a new run with it")
    dataset.stream.load_state_dict(json.loads(path.read_text(encoding="utf-8")))
