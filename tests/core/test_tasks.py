"""Task files: round trips, and invalid files rejected with file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentgym import Task, TaskSet, load_tasks, save_tasks
from agentgym.tasks import TaskFileError


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


GOOD = {"id": "t1", "domain": "d", "family": "f", "prompt": "p", "answer": 1}


def test_round_trip(tmp_path: Path) -> None:
    tasks = [Task(**{**GOOD, "id": f"t{i}", "solution": [{"name": "submit", "arguments": {"answer": i}}]})
             for i in range(3)]
    path = tmp_path / "t.jsonl"
    assert save_tasks(tasks, path) == 3
    assert load_tasks(path) == tasks


@pytest.mark.parametrize("line, message", [
    (json.dumps({**GOOD, "promtp": "typo"}), "t.jsonl:2: field 'promtp': Extra inputs are not permitted"),
    (json.dumps({k: v for k, v in GOOD.items() if k != "prompt"}), "t.jsonl:2: field 'prompt': Field required"),
    ('{"id": "t2", ', "t.jsonl:2: invalid JSON"),
    (json.dumps({**GOOD, "solution": [{"arguments": {}}]}), "t.jsonl:2: field 'solution'"),
    (json.dumps({**GOOD, "verifier": {"name": "exact", "parms": {}}}), "t.jsonl:2: field 'verifier.parms'"),
    (json.dumps(GOOD), "t.jsonl:2: duplicate task id 't1' (first on line 1)"),
])
def test_invalid_files_name_file_line_and_field(tmp_path: Path, line: str, message: str) -> None:
    path = write_lines(tmp_path / "t.jsonl", [json.dumps(GOOD), line])
    with pytest.raises(TaskFileError) as caught:
        load_tasks(path)
    assert message in str(caught.value)


def test_non_utf8_and_missing_files(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"id": "\xff"}\n')
    with pytest.raises(TaskFileError, match="bad.jsonl:1: not valid UTF-8"):
        load_tasks(path)
    with pytest.raises(TaskFileError, match="no such task file"):
        load_tasks(tmp_path / "absent.jsonl")


def test_envs_made_from_one_file_share_one_task_set(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    save_tasks([Task(**GOOD)], path)
    assert TaskSet.from_file(path) is TaskSet.from_file(str(path))
    save_tasks([Task(**GOOD), Task(**{**GOOD, "id": "t2"})], path)  # a changed file is re-read
    assert len(TaskSet.from_file(path)) == 2


def test_sampling_is_seeded() -> None:
    import numpy as np

    tasks = TaskSet([Task(**{**GOOD, "id": f"t{i}"}) for i in range(50)])
    first = [tasks.sample(np.random.default_rng(3)).id for _ in range(5)]
    assert first == [tasks.sample(np.random.default_rng(3)).id for _ in range(5)]
    assert tasks.counts("split") == {"train": 50}


def _mixed_tasks() -> TaskSet:
    levels = ["easy", "medium", "hard", "challenging"]  # "challenging" is BIRD's name for hard
    return TaskSet([
        Task(**{**GOOD, "id": f"t{i}", "family": f"fam{i % 3}", "split": ("train", "test")[i % 2],
                "difficulty": levels[i % 4]})
        for i in range(24)
    ])


def test_filter_by_difficulty_reads_synonyms_and_comma_lists() -> None:
    tasks = _mixed_tasks()
    hard = tasks.filter(difficulty="hard")
    assert len(hard) == 12 and {task.difficulty for task in hard} == {"hard"}
    assert len(tasks.filter(difficulty="challenging")) == 12
    assert len(tasks.filter(difficulty="easy,medium")) == 12
    assert len(tasks.filter(split="test", difficulty=["hard"])) == 6  # odd i with i % 4 == 3


def test_families_given_as_one_string_match_whole_names() -> None:
    tasks = TaskSet([Task(**{**GOOD, "id": "a", "family": "agg"}), Task(**{**GOOD, "id": "b", "family": "aggregates"})])
    # `--env-arg families=aggregates` arrives as a string: it must not match "agg" as a substring
    assert [task.id for task in tasks.filter(families="aggregates")] == ["b"]
    assert [task.id for task in tasks.filter(families="agg, aggregates")] == ["a", "b"]


def test_filter_that_matches_nothing_lists_the_difficulties() -> None:
    with pytest.raises(ValueError, match=r"difficulties: \['easy', 'hard', 'medium'\]"):
        _mixed_tasks().filter(split="test", difficulty="extra-hard")


def test_env_and_reset_take_a_difficulty() -> None:
    from agentgym import ToolEnv

    env = ToolEnv(_mixed_tasks(), split="test", difficulty="hard")
    assert {env.reset(seed=seed)[1]["difficulty"] for seed in range(10)} == {"hard"}
    env = ToolEnv(_mixed_tasks())
    _, info = env.reset(seed=1, options={"difficulty": "easy"})
    assert info["difficulty"] == "easy"
