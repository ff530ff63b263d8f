"""Reading run directories for the viewer: eval runs (`run.json`, `trajectories.jsonl`, `summary.json`) and
training runs (`metrics.jsonl`), indexed without holding every conversation in memory.

An eval run is indexed once: one small row per episode (the table's columns) plus the byte offset of its line
in `trajectories.jsonl`, so an episode's conversation is read from disk only when it is opened. Nothing read
from a run is ever executed; the page escapes every string it shows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym.metrics import record_success
from agentgym.tasks import shared_difficulty

TRAJECTORIES = "trajectories.jsonl"
RUN_FILE = "run.json"
SUMMARY_FILE = "summary.json"
METRICS_FILE = "metrics.jsonl"
# fields a trajectory record may carry with the task's gold data (shown only when present, never invented)
GOLD_FIELDS = ("answer", "gold_answer", "expected", "solution", "gold_solution")


class RunError(ValueError):
    """A path that is not a run the viewer can read, with a message that says what is expected."""


@dataclass
class Run:
    """One loaded run: its label, settings, episode index (one row per episode) and training metrics."""

    label: str
    path: Path
    settings: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)
    metrics: list[dict[str, Any]] = field(default_factory=list)
    skipped_lines: int = 0

    @property
    def kind(self) -> str:
        return "eval" if self.rows or (self.path / TRAJECTORIES).is_file() else "training"

    def episode(self, index: int) -> dict[str, Any]:
        """The whole record of episode `index` (as written by eval), read from its line on disk.

        Raises:
            IndexError: no such episode.
        """
        if not 0 <= index < len(self.offsets):
            raise IndexError(f"run {self.label!r} has episodes 0..{len(self.offsets) - 1}, not {index}")
        with (self.path / TRAJECTORIES).open("rb") as handle:
            handle.seek(self.offsets[index])
            record = json.loads(handle.readline())
        if not isinstance(record, dict):
            raise IndexError(f"episode {index} of {self.label!r} is not a JSON object")
        return record


def _number(value: Any, default: float = 0.0) -> float:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return default


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else json.dumps(value, ensure_ascii=False))


def _difficulty(label: Any) -> str:
    """The shared level of a record's difficulty (runs written before the labels were shared said "simple"),
    or the label as it is when it is not a known one."""
    text = _text(label)
    return shared_difficulty(text) or text


def diagnosis_label(diagnosis: Any) -> str:
    """The table's diagnosis text: the episode label then any domain labels ("wrong_answer; query_does_not_parse")
    for a diagnosis dict (`info["diagnosis"]`, see docs/diagnosis.md); a string as it is; else ''."""
    if isinstance(diagnosis, Mapping):
        labels = [diagnosis.get("episode"), *(diagnosis.get("domain") or [])]
        return "; ".join(str(label) for label in labels if label not in (None, ""))
    return diagnosis if isinstance(diagnosis, str) else ""


def index_row(record: Mapping[str, Any], threshold: float) -> dict[str, Any]:
    """The table row of one trajectory record: only the small fields, all of plain JSON types."""
    breakdown = record.get("reward_breakdown")
    row = {
        "env": _text(record.get("env_id")), "task": _text(record.get("task_id")),
        "family": _text(record.get("family")), "difficulty": _difficulty(record.get("difficulty")),
        "split": _text(record.get("split")), "sample": int(_number(record.get("sample"))),
        "success": bool(record_success(record, threshold)) if "success" in record or isinstance(breakdown, Mapping)
        else False,
        "reward": _number(record.get("reward")), "turns": int(_number(record.get("turns"))),
        "tool_calls": int(_number(record.get("tool_calls"))), "tool_errors": int(_number(record.get("tool_errors"))),
        "diagnosis": diagnosis_label(record.get("diagnosis")),
        "error": _text(record.get("error")),
        "answer_score": _number(breakdown.get("answer"), float("nan")) if isinstance(breakdown, Mapping)
        else float("nan"),
    }
    score = row["answer_score"]
    if isinstance(score, float) and math.isnan(score):
        row["answer_score"] = None
    return row


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise RunError(f"{path} is not valid JSON ({error}); repair or delete it") from None
    return data if isinstance(data, dict) else {}


def _read_metrics(path: Path) -> tuple[list[dict[str, Any]], int]:
    rows: list[dict[str, Any]] = []
    skipped = 0
    if not path.is_file():
        return rows, skipped
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            skipped += 1
            continue
        if isinstance(item, dict):
            rows.append(item)
    return rows, skipped


def load_run(path: str | Path, label: str | None = None) -> Run:
    """Index the run at `path`: an eval run directory, a training output directory (with `metrics.jsonl`), or
    a `trajectories.jsonl` / `metrics.jsonl` file itself.

    Raises:
        RunError: the path holds neither file, or run.json / summary.json is not valid JSON.
    """
    path = Path(path)
    if path.is_file() and path.name in (TRAJECTORIES, METRICS_FILE):
        path = path.parent
    if not path.is_dir():
        raise RunError(f"{path} does not exist; give a run directory written by `agentgym eval --out DIR` or "
                       f"`agentgym train ... --output DIR`")
    trajectories, metrics_path = path / TRAJECTORIES, path / METRICS_FILE
    if not trajectories.is_file() and not metrics_path.is_file():
        raise RunError(f"{path} holds neither {TRAJECTORIES} (an eval run) nor {METRICS_FILE} (a training run)")
    run = Run(label=label or path.resolve().name, path=path)
    run.settings = _read_json(path / RUN_FILE)
    run.summary = _read_json(path / SUMMARY_FILE)
    threshold = _number(run.settings.get("success_threshold"), 1.0)
    if trajectories.is_file():
        offset = 0
        with trajectories.open("rb") as handle:
            for line in handle:
                start, offset = offset, offset + len(line)
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    run.skipped_lines += 1  # a line cut by a crash: eval drops it on resume, so do we
                    continue
                if not isinstance(record, dict):
                    run.skipped_lines += 1
                    continue
                run.rows.append(index_row(record, threshold))
                run.offsets.append(start)
    run.metrics, skipped = _read_metrics(metrics_path)
    run.skipped_lines += skipped
    return run


def expand_paths(paths: Sequence[str | Path]) -> list[Path]:
    """The run directories named by `paths`; a directory holding no run itself but runs one level down (the
    `clean/` and `perturbed/` of `agentgym eval --perturb`) stands for those."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir() and not (path / TRAJECTORIES).is_file() and not (path / METRICS_FILE).is_file():
            children = sorted(child for child in path.iterdir() if child.is_dir()
                              and ((child / TRAJECTORIES).is_file() or (child / METRICS_FILE).is_file()))
            if children:
                found.extend(children)
                continue
        found.append(path)
    return found


def load_runs(paths: Sequence[str | Path]) -> list[Run]:
    """Load every run named by `paths` (see `expand_paths`), labelled by directory name, made unique.

    Raises:
        RunError: for the first path that is not a readable run.
    """
    runs: list[Run] = []
    seen: dict[str, int] = {}
    for path in expand_paths(paths):
        resolved = path.resolve()
        name = resolved.name if resolved.name not in ("clean", "perturbed") else f"{resolved.parent.name}/{resolved.name}"
        count = seen.get(name, 0)
        seen[name] = count + 1
        runs.append(load_run(path, name if count == 0 else f"{name} ({count + 1})"))
    return runs


def gold_of(record: Mapping[str, Any]) -> dict[str, Any]:
    """The gold fields the record itself holds (answer, solution, ...); empty when the run did not keep them."""
    gold: dict[str, Any] = {}
    for name in GOLD_FIELDS:
        if name in record and record[name] is not None:
            gold[name] = record[name]
    task = record.get("task")
    if isinstance(task, Mapping):
        for name in ("answer", "solution"):
            if task.get(name) is not None:
                gold.setdefault(name, task[name])
    return gold
