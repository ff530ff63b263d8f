"""Ray rollouts with real Ray (`ray.init(num_cpus=2)`): same results as local, dead actors replaced.
Kept to one Ray session for the module: starting Ray costs seconds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

HERE = Path(__file__).resolve().parent

from agentgym.cli import main

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def ray_session() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             job_config=ray.job_config.JobConfig(code_search_path=[str(HERE)]))
    yield
    ray.shutdown()


def _run(out: Path, *arguments: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(main, ["eval", "EvalToy-v0", "--agent", "random", "--k", "2", "--out", str(out),
                                       "--no-progress", "--no-plots", *arguments])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    for record in records:
        record.pop("timings")
    return sorted(records, key=lambda record: (record["task_id"], record["sample"]))


def test_ray_results_equal_local_and_a_dead_actor_is_replaced(ray_session: None, tmp_path: Path) -> None:
    local = _run(tmp_path / "local", "--workers", "2")
    on_ray = _run(tmp_path / "ray", "--workers", "2", "--ray", "auto-connected")
    assert on_ray == local and len(local) == 24
    summary = json.loads((tmp_path / "ray" / "summary.json").read_text())
    assert summary["run"]["backend"] == "ray"

    marker = tmp_path / "crashed"
    crashed = _run(tmp_path / "crash", "--workers", "2", "--ray", "auto-connected", "--env-arg",
                   f"crash_marker={marker}")
    assert marker.exists()  # an actor process really died
    crashed_local = _run(tmp_path / "crash-local", "--workers", "2", "--env-arg", f"crash_marker={marker}")
    assert [(r["task_id"], r["sample"], r["reward"]) for r in crashed] == \
        [(r["task_id"], r["sample"], r["reward"]) for r in crashed_local]
