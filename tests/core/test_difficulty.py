"""One difficulty vocabulary across envs (easy, medium, hard): benchmark labels are mapped in one place
(`agentgym.tasks`) and kept in metadata, unknown labels are kept and reported, and eval summaries and the
viewer group by the shared level."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from agentgym.tasks import DIFFICULTY_LEVELS, Task, UnknownDifficultyWarning, load_tasks


def _task(difficulty: str, **extra: object) -> Task:
    return Task(id="t", domain="d", family="f", prompt="p", difficulty=difficulty, **extra)  # type: ignore[arg-type]


@pytest.mark.parametrize(("label", "level"), [("simple", "easy"), ("moderate", "medium"), ("challenging", "hard"),
                                              ("extra", "hard"), ("Moderate ", "medium")])
def test_benchmark_labels_map_to_the_shared_level_and_are_kept(label: str, level: str) -> None:
    task = _task(label, metadata={"source": "bird"})
    assert task.difficulty == level
    assert task.metadata == {"source_difficulty": label, "source": "bird"}
    again = Task.model_validate_json(task.model_dump_json())  # a saved task reads back the same
    assert again == task


def test_shared_labels_are_left_alone() -> None:
    for level in DIFFICULTY_LEVELS:
        task = _task(level)
        assert task.difficulty == level and task.metadata == {}


def test_a_label_an_importer_recorded_itself_wins() -> None:
    task = _task("challenging", metadata={"source_difficulty": "extra hard (Spider)"})
    assert task.difficulty == "hard" and task.metadata["source_difficulty"] == "extra hard (Spider)"


def test_unknown_labels_are_kept_and_reported_once() -> None:
    with pytest.warns(UnknownDifficultyWarning, match="'nightmare-7' is not one of easy, medium, hard"):
        task = _task("nightmare-7")
    assert task.difficulty == "nightmare-7" and task.metadata == {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _task("nightmare-7")  # reported once per process, not once per task


def test_a_plugins_task_file_is_normalised_on_load(tmp_path: Path) -> None:
    rows = [{"id": f"z{n}", "domain": "zoo", "family": "count", "prompt": "?", "difficulty": label}
            for n, label in enumerate(("simple", "challenging", "hard"))]
    path = tmp_path / "zoo.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    assert [task.difficulty for task in load_tasks(path)] == ["easy", "hard", "hard"]


def test_eval_summary_and_viewer_group_by_the_shared_level(tmp_path: Path) -> None:
    from agentgym.evaluate import evaluate
    from agentgym.viewer.runs import index_row, load_run

    evaluate(["SQL-v0"], "oracle", tmp_path / "run", n=12, progress=False, plots=False, bootstrap=20)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text(encoding="utf-8"))
    assert summary["by_difficulty"] and set(summary["by_difficulty"]) <= set(DIFFICULTY_LEVELS)
    records = [json.loads(line) for line in (tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()]
    assert {record["difficulty"] for record in records} <= set(DIFFICULTY_LEVELS)
    assert {row["difficulty"] for row in load_run(tmp_path / "run").rows} <= set(DIFFICULTY_LEVELS)
    # a run written before the labels were shared is grouped the same way in the viewer
    assert index_row({"difficulty": "challenging"}, 1.0)["difficulty"] == "hard"
    assert index_row({"difficulty": "level-9"}, 1.0)["difficulty"] == "level-9"


def test_terminal_bench_difficulty_is_read_from_task_yaml(tmp_path: Path) -> None:
    from agentgym_cli.importers import _tb_difficulty

    (tmp_path / "task.yaml").write_text("instruction: do it\ndifficulty: hard\n", encoding="utf-8")
    assert _tb_difficulty(tmp_path) == "hard"
    (tmp_path / "task.yaml").write_text("instruction: do it\n", encoding="utf-8")
    assert _tb_difficulty(tmp_path) == "medium"
