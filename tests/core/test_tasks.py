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
