"""Fixtures for the FHIR-v0 environment tests: a small generated population, its tasks, and a store imported
from the Synthea sample bundles (real Synthea output, read from ../shared)."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentgym_fhir.data.generate import generate_store
from agentgym_fhir.store import FhirStore
from agentgym_fhir.tasks import generate

from agentgym.tasks import Task

SYNTHEA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "samples" / "synthea"


@pytest.fixture(scope="session")
def small_store(tmp_path_factory: pytest.TempPathFactory) -> FhirStore:
    path = tmp_path_factory.mktemp("fhir_env") / "population.sqlite"
    generate_store(path, 40, 3, overwrite=True).close()
    return FhirStore.open(path, readonly=True)


@pytest.fixture(scope="session")
def small_tasks(small_store: FhirStore) -> list[Task]:
    return generate(seed=0, store=small_store, verbose=False)


@pytest.fixture(scope="session")
def synthea_store(tmp_path_factory: pytest.TempPathFactory) -> FhirStore:
    if not SYNTHEA.is_dir():
        pytest.skip(f"the Synthea samples are not at {SYNTHEA}")
    from agentgym_fhir.data.importers import import_files

    path = tmp_path_factory.mktemp("synthea") / "synthea.sqlite"
    store = FhirStore.create(path)
    import_files(store, SYNTHEA)
    store.close()
    return FhirStore.open(path, readonly=True)


@pytest.fixture(scope="session")
def play():  # type: ignore[no-untyped-def]
    """play(env, task, agent) -> (final reward, info) of one episode."""
    return _play


def _play(env, task: Task, agent) -> tuple[float, dict]:  # type: ignore[no-untyped-def]
    observation, info = env.reset(options={"task_id": task.id})
    agent.reset(task)
    reward, done = 0.0, False
    while not done:
        observation, reward, terminated, truncated, info = env.step(agent.act(info["messages"], info["tools"]))
        done = terminated or truncated
    return reward, info
