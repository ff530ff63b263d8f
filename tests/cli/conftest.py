"""Fixtures for the CLI-v0 tests: the backend to run episodes in, and a small generated task set.

Episodes run in Docker where a daemon answers (as users run them) and in the local backend otherwise; tests that
need Docker itself (hostile commands such as `rm -rf /`) are marked `docker` and use `docker_backend`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from agentgym import Task
from agentgym.sandbox.backends import docker_problem

SMALL_FIXTURES = 2  # workspaces in the task set most tests use: 46 tasks, every family


@pytest.fixture(scope="session")
def backend() -> str:
    """The backend episodes use here: Docker when it works, else the local backend."""
    return "docker" if docker_problem() is None else "local"


@pytest.fixture(scope="session")
def docker_backend() -> str:
    """Skip where no Docker daemon runs; in CI (CI=true) a missing daemon is a failure."""
    problem = docker_problem()
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the Docker tests, but {problem}")
        pytest.skip(problem)
    return "docker"


@pytest.fixture(scope="session")
def small_tasks(backend: str) -> list[Task]:
    """The tasks of the first two workspaces of seed 0 (generated once, then cached on disk)."""
    from agentgym_cli.tasks import generate

    return generate(0, fixtures=SMALL_FIXTURES, backend=backend)


@pytest.fixture
def make_cli_env(backend: str, small_tasks: list[Task]) -> Iterator[object]:
    """A factory of CLI-v0 envs over `small_tasks`; every env made is closed after the test."""
    from agentgym_cli.env import make_env

    made = []

    def factory(**kwargs: object) -> object:
        kwargs.setdefault("backend", backend)
        env = make_env(kwargs.pop("tasks", small_tasks), **kwargs)  # type: ignore[arg-type]
        made.append(env)
        return env

    yield factory
    for env in made:
        env.close()  # type: ignore[attr-defined]
