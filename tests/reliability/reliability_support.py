"""Shared fixtures and probes for the reliability tests: checksums of gold data, process resource counts
(RSS, file descriptors, threads, temp dirs), this process's sandbox containers, and small real data sets
(a generated FHIR store, a two-workspace CLI task set) that every reliability test can afford.
"""

from __future__ import annotations

import gc
import hashlib
import os
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

FHIR_PATIENTS = 30
CLI_FIXTURES = 2


# ----------------------------------------------------------------------------------------------- checksums
def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def checksums(paths: Iterable[Path]) -> dict[str, str]:
    """path -> sha256 for every existing file among `paths` (folders are walked); missing files are named."""
    found: dict[str, str] = {}
    for path in paths:
        if path.is_dir():
            for child in sorted(p for p in path.rglob("*") if p.is_file()):
                found[str(child)] = sha256_file(child)
        elif path.is_file():
            found[str(path)] = sha256_file(path)
        else:
            found[str(path)] = "<missing>"
    return found


def sqlite_family(path: Path) -> list[Path]:
    """A SQLite file and the journal / WAL / shared-memory files that would appear next to it on a write."""
    return [path] + [path.with_name(path.name + suffix) for suffix in ("-journal", "-wal", "-shm")]


# ----------------------------------------------------------------------------------------------- resources
def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def open_fds() -> list[str]:
    """What each open file descriptor of this process points at (sockets, pipes, files)."""
    targets = []
    for name in os.listdir("/proc/self/fd"):
        try:
            targets.append(os.readlink(f"/proc/self/fd/{name}"))
        except FileNotFoundError:  # the descriptor listdir itself used, already closed
            continue
    return sorted(targets)


def os_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def resources() -> dict[str, Any]:
    gc.collect()
    return {"rss": rss_bytes(), "fds": open_fds(), "threads": os_threads(),
            "python_threads": sorted(t.name for t in threading.enumerate())}


# ----------------------------------------------------------------------------------------------- containers
def docker_client() -> Any:
    import docker

    return docker.from_env()


def my_containers() -> list[str]:
    """Containers labelled `agentgym` that this process created (any state, running or not)."""
    from agentgym.sandbox.backends import docker_problem
    from agentgym.sandbox.docker_backend import OWNER_LABEL

    if docker_problem() is not None:
        return []
    containers = docker_client().containers.list(
        all=True, filters={"label": ["agentgym", f"{OWNER_LABEL}={os.getpid()}"]})
    return sorted(f"{c.short_id} ({c.status})" for c in containers)


@pytest.fixture(scope="session")
def docker_backend() -> str:
    """"docker"; skips where no daemon runs (in CI, CI=true, a missing daemon fails instead)."""
    from agentgym.sandbox.backends import docker_problem

    problem = docker_problem()
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the Docker tests, but {problem}")
        pytest.skip(problem)
    return "docker"


@pytest.fixture(scope="session")
def cli_backend() -> str:
    """The sandbox backend benign CLI-v0 episodes use here: Docker when it works, else local."""
    from agentgym.sandbox.backends import docker_problem

    return "docker" if docker_problem() is None else "local"


# ----------------------------------------------------------------------------------------------- data
@pytest.fixture(scope="session")
def fhir_store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated population of 30 patients (seed 0) in a file of its own, so checksums see only our runs."""
    from agentgym_fhir.data.generate import generate_store

    path = tmp_path_factory.mktemp("reliability-fhir") / "population.sqlite"
    generate_store(path, FHIR_PATIENTS, 0, overwrite=True).close()
    return path


@pytest.fixture(scope="session")
def cli_tasks_path(tmp_path_factory: pytest.TempPathFactory, cli_backend: str) -> Path:
    """The tasks of the first two CLI workspaces of seed 0, saved as JSONL (worker processes load the file)."""
    from agentgym_cli.tasks import generate

    from agentgym.tasks import save_tasks

    path = tmp_path_factory.mktemp("reliability-cli") / "tasks.jsonl"
    save_tasks(generate(0, fixtures=CLI_FIXTURES, backend=cli_backend), path)
    return path


@pytest.fixture
def private_tempdir(tmp_path: Path) -> Iterator[Path]:
    """Point `tempfile` at an empty folder of this test, so temp dirs left behind can be counted exactly."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    saved = tempfile.tempdir
    tempfile.tempdir = str(folder)
    try:
        yield folder
    finally:
        tempfile.tempdir = saved


def wait_for_no_containers(timeout: float = 20.0) -> list[str]:
    """This process's containers, polled until none is left or `timeout` passes (removal is asynchronous)."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        left = my_containers()
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)
