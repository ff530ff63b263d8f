"""Fixtures for the sandbox tests: the Docker daemon check, shared sandboxes, and the end-of-session leak check."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agentgym.sandbox import Sandbox, close_pools
from agentgym.sandbox.backends import docker_problem

SESSION_START = time.time()


def _docker_client() -> Any:
    import docker

    return docker.from_env()


@pytest.fixture(scope="session")
def docker_ready() -> None:
    """Skip Docker tests where no daemon runs; in CI (CI=true) a missing daemon or image is a failure."""
    problem = docker_problem()
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the Docker tests, but {problem}")
        pytest.skip(problem)


@pytest.fixture(scope="module")
def docker_sandbox(docker_ready: None) -> Iterator[Sandbox]:
    """One Docker sandbox per module; tests that dirty it call reset() themselves."""
    with Sandbox.create(backend="docker") as sandbox:
        yield sandbox


@pytest.fixture
def sandbox(docker_sandbox: Sandbox) -> Sandbox:
    """The module's Docker sandbox, reset to a clean state."""
    docker_sandbox.reset()
    return docker_sandbox


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@pytest.fixture(scope="session", autouse=True)
def no_container_left_behind() -> Iterator[None]:
    """At the end of the session, fail if a container labelled ``agentgym`` was left by this run.

    A container counts as left behind if it was made by this process, or made during the session by a process
    that has since exited (a CLI subprocess, say); other live processes' containers are theirs to clean up.
    The process-wide pools of ``get_pool`` live until interpreter exit by design, so they are closed first.
    """
    yield
    close_pools()
    import docker.errors
    import requests.exceptions

    from agentgym.sandbox.docker_backend import OWNER_LABEL

    try:
        containers = _docker_client().containers.list(all=True, filters={"label": "agentgym"})
    except (docker.errors.DockerException, requests.exceptions.ConnectionError):
        return  # no daemon: nothing can have been left in it
    leaked = []
    for container in containers:
        owner = int(container.labels.get(OWNER_LABEL, "0") or 0)
        created = container.attrs.get("Created", "")
        mine = owner == os.getpid()
        orphan = owner and not _pid_alive(owner) and _created_after(created, SESSION_START)
        if mine or orphan:
            leaked.append(f"{container.short_id} (owner pid {owner}, {container.status})")
    assert not leaked, f"containers labelled agentgym left behind: {', '.join(leaked)}"


def _created_after(created: str, start: float) -> bool:
    from datetime import datetime

    try:
        stamp = datetime.fromisoformat(created[:26].rstrip("Z") + "+00:00").timestamp()
    except ValueError:
        return True
    return stamp >= start - 1
