"""Fault injection: each fault a user's training run can meet, and what they must see instead of a hang.

- SQL-v0: the database file missing, locked by a writer, or not a database;
- FHIR-v0 with `server=URL`: the server down when the env is made, and killed mid-episode, then back;
- CLI-v0: the sandbox container killed mid-call (Docker), and a command past its timeout;
and afterwards the pool heals (the next episode runs) and no container of this process is left.

Every step runs under a deadline (`within`), so a hang fails the test with a message instead of stalling CI.
The Docker daemon restarted between episodes is covered by tests/sandbox/test_docker.py (slow).
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import gymnasium as gym
import pytest
from reliability_support import wait_for_no_containers

import agentgym  # noqa: F401  (registers the envs)
from agentgym import Task
from agentgym.agents import OracleAgent
from agentgym.rollout import run_episode

T = TypeVar("T")


def within(seconds: float, call: Callable[[], T], what: str) -> T:
    """Run `call` in a thread; fail the test if it has not returned after `seconds` (a hang)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as error:  # noqa: BLE001 (handed back to the test thread below)
            box["error"] = error

    thread = threading.Thread(target=target, daemon=True, name="reliability-deadline")
    started = time.monotonic()
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{what} did not return within {seconds} s (a hang)"
    box["elapsed"] = time.monotonic() - started
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


# ===================================================================================================== SQL
def _tiny_database(path: Path) -> None:
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA journal_mode = DELETE")
    connection.execute("CREATE TABLE animals (name TEXT, legs INTEGER)")
    connection.executemany("INSERT INTO animals VALUES (?, ?)", [("cat", 4), ("bird", 2), ("snake", 0)])
    connection.commit()
    connection.close()


def _sql_task(path: Path, task_id: str = "tiny-count") -> Task:
    gold = "SELECT COUNT(*) FROM animals"
    return Task(id=task_id, domain="sql", family="count", split="test", prompt="How many animals are there?",
                answer=[[3]], solution=[{"name": "submit", "arguments": {"sql": gold}}],
                verifier={"name": "sql_execution", "params": {"match": "set", "mode": "sql"}},
                metadata={"database_path": str(path), "db_id": "tiny", "dialect": "sqlite",
                          "gold_sql": {"sqlite": gold}})


COUNT = {"name": "execute_sql", "arguments": {"sql": "SELECT COUNT(*) FROM animals"}}


def test_sql_missing_database_is_a_clear_error_at_reset(tmp_path: Path) -> None:
    missing = tmp_path / "gone.sqlite"
    env = gym.make("SQL-v0", tasks=[_sql_task(missing)])
    with pytest.raises(FileNotFoundError, match="gone.sqlite"):
        within(10, lambda: env.reset(seed=0), "reset on a missing database")
    env.close()
    _tiny_database(missing)  # the user fixes the path: a new env works
    env = gym.make("SQL-v0", tasks=[_sql_task(missing)])
    within(10, lambda: env.reset(seed=0), "reset after the fix")
    observation, *_ = within(10, lambda: env.step(COUNT), "a query")
    assert "| 3 |" in observation
    env.close()


def test_sql_same_env_works_after_a_failed_reset(tmp_path: Path) -> None:
    missing = tmp_path / "late.sqlite"
    env = gym.make("SQL-v0", tasks=[_sql_task(missing)])
    with pytest.raises(FileNotFoundError):
        within(10, lambda: env.reset(seed=0), "reset on a missing database")
    _tiny_database(missing)
    within(10, lambda: env.reset(seed=0), "reset after the fix")
    observation, *_ = within(10, lambda: env.step(COUNT), "a query")
    assert "| 3 |" in observation
    env.close()


def test_sql_database_that_is_not_a_database_gives_error_observations(tmp_path: Path) -> None:
    path = tmp_path / "garbage.sqlite"
    path.write_bytes(os.urandom(8192))
    env = gym.make("SQL-v0", tasks=[_sql_task(path)], max_turns=3)
    within(10, lambda: env.reset(seed=0), "reset")
    for action in ({"name": "list_tables", "arguments": {}}, COUNT):
        observation, _reward, _terminated, _truncated, _ = within(10, lambda a=action: env.step(a), "a step")
        assert observation.startswith("Error:") and "not a database" in observation, observation[:300]
    env.close()


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive write lock on a SQLite file, as a user's ETL job writing to it would."""
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")
    writer.execute("INSERT INTO animals VALUES ('ant', 6)")
    try:
        yield
    finally:
        writer.execute("ROLLBACK")
        writer.close()


@pytest.mark.timeout(120)
def test_sql_locked_database_gives_error_observations_not_a_hang_then_recovers(tmp_path: Path) -> None:
    path = tmp_path / "locked.sqlite"
    _tiny_database(path)
    env = gym.make("SQL-v0", tasks=[_sql_task(path)], timeout_s=1.0)
    within(10, lambda: env.reset(seed=0), "reset")
    with locked(path):
        for action in ({"name": "list_tables", "arguments": {}},
                       {"name": "describe_table", "arguments": {"table": "animals"}}):
            observation, _reward, terminated, truncated, _ = within(30, lambda a=action: env.step(a), "a locked call")
            assert observation.startswith("Error:") and "locked" in observation, observation[:300]
            assert not terminated and not truncated
    observation, *_ = within(10, lambda: env.step(COUNT), "the query after the lock is gone")
    assert "| 3 |" in observation
    assert within(30, lambda: run_episode(env, OracleAgent(), seed=0), "an oracle episode").reward == 1.0
    env.close()


@pytest.mark.timeout(120)
def test_sql_locked_database_query_is_an_error_observation(tmp_path: Path) -> None:
    path = tmp_path / "locked.sqlite"
    _tiny_database(path)
    env = gym.make("SQL-v0", tasks=[_sql_task(path)], timeout_s=1.0)
    within(10, lambda: env.reset(seed=0), "reset")
    with locked(path):
        observation, _reward, _terminated, _truncated, _ = within(30, lambda: env.step(COUNT), "a locked query")
        assert observation.startswith("Error:") and "locked" in observation, observation[:300]
    env.close()


def test_sql_database_deleted_mid_run_keeps_serving_open_episodes(tmp_path: Path) -> None:
    path = tmp_path / "deleted.sqlite"
    _tiny_database(path)
    env = gym.make("SQL-v0", tasks=[_sql_task(path)])
    assert run_episode(env, OracleAgent(), seed=0).reward == 1.0
    path.unlink()  # a cleanup job removes the file under a running env
    observation, *_ = (within(10, lambda: env.reset(seed=0), "reset"), None)
    observation, *_ = within(10, lambda: env.step(COUNT), "a query")
    assert "| 3 |" in observation  # the engine holds the file open; the episode is unaffected
    env.close()
    fresh = gym.make("SQL-v0", tasks=[_sql_task(path)])
    with pytest.raises(FileNotFoundError, match="deleted.sqlite"):
        within(10, lambda: fresh.reset(seed=0), "reset of a new env")
    fresh.close()


# ===================================================================================================== FHIR
def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _serve(store: Path, port: int) -> subprocess.Popen[bytes]:
    """`agentgym fhir serve STORE --port P --ephemeral` in its own process group; waits until it answers."""
    command = [str(Path(sys.executable).with_name("agentgym")), "fhir", "serve", str(store), "--port", str(port),
               "--ephemeral"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the FHIR server exited: {process.stderr.read().decode()[-500:]}")  # type: ignore[union-attr]
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return process
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("the FHIR server did not start within 60 s")


def _kill(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


@pytest.fixture
def fhir_server(fhir_store_path: Path) -> Iterator[dict[str, Any]]:
    port = _free_port()
    server = {"port": port, "url": f"http://127.0.0.1:{port}/fhir", "process": _serve(fhir_store_path, port),
              "store": fhir_store_path}
    try:
        yield server
    finally:
        _kill(server["process"])


def test_fhir_server_down_at_make_is_a_clear_error_naming_the_url() -> None:
    url = f"http://127.0.0.1:{_free_port()}/fhir"
    with pytest.raises(Exception) as raised:
        within(60, lambda: gym.make("FHIR-v0", server=url, knowledge=False), "gym.make on a dead server")
    assert url.split("/fhir")[0] in str(raised.value), f"the error does not name the server: {raised.value!r}"


def test_fhir_server_down_at_make_fails_fast() -> None:
    url = f"http://127.0.0.1:{_free_port()}/fhir"
    with pytest.raises(Exception, match="refused|connect"):
        within(60, lambda: gym.make("FHIR-v0", server=url, knowledge=False), "gym.make on a dead server")


@pytest.mark.timeout(240)
def test_fhir_server_killed_mid_episode_gives_error_observations_and_the_env_heals(
        fhir_server: dict[str, Any]) -> None:
    from agentgym_fhir.store import FhirStore
    from agentgym_fhir.tasks import generate

    store = FhirStore.open(fhir_server["store"], readonly=True)
    tasks = generate(seed=0, store=store, verbose=False)
    store.close()
    env = gym.make("FHIR-v0", server=fhir_server["url"], tasks=tasks, knowledge=False, max_turns=50)
    task = next(t for t in tasks if t.metadata.get("patient_id") and t.family == tasks[0].family)
    search = {"name": "fhir_search", "arguments": {"resource_type": "Observation", "params": {
        "patient": task.metadata["patient_id"], "_summary": "count"}}}
    within(30, lambda: env.reset(options={"task_id": task.id}), "reset")
    healthy, *_ = within(30, lambda: env.step(search), "a search")
    assert '"total"' in healthy
    _kill(fhir_server["process"])
    for _ in range(3):
        observation, reward, terminated, truncated, _info = within(60, lambda: env.step(search), "a search, server down")
        assert observation.startswith("Error:"), observation[:300]
        assert not terminated and not truncated
    # the episode can still end (the verifier may fail to read the server: reward 0, never a hang or a raise)
    _, reward, terminated, _, _ = within(60, lambda: env.step({"name": "submit", "arguments": {"answer": "x"}}),
                                         "submit, server down")
    assert terminated and reward == 0.0
    # the server comes back on the same address: the next episode works without remaking the env
    fhir_server["process"] = _serve(fhir_server["store"], fhir_server["port"])
    within(30, lambda: env.reset(options={"task_id": task.id}), "reset, server back")
    observation, *_ = within(30, lambda: env.step(search), "a search, server back")
    assert observation == healthy
    trajectory = within(120, lambda: run_episode(env, OracleAgent(), seed=0, task_id=task.id), "an oracle episode")
    assert trajectory.reward == 1.0, trajectory.reward_breakdown
    env.close()


# ===================================================================================================== CLI
def _cli_env(tasks_path: Path, backend: str, **kwargs: Any) -> Any:
    from agentgym_cli.env import CliEnv

    from agentgym.tasks import load_tasks

    return CliEnv(load_tasks(tasks_path), backend=backend, **kwargs)


@pytest.mark.timeout(180)
def test_cli_command_past_its_timeout_is_stopped_and_the_shell_goes_on(cli_tasks_path: Path,
                                                                       cli_backend: str) -> None:
    env = _cli_env(cli_tasks_path, cli_backend, pool_size=1, command_timeout=2.0)
    task = env.unwrapped.task_set[0]
    within(120, lambda: env.reset(options={"task_id": task.id}), "reset")
    started = time.monotonic()
    observation, _reward, terminated, truncated, _ = within(
        30, lambda: env.step({"name": "run_shell", "arguments": {"command": "echo started; sleep 60"}}), "sleep 60")
    assert time.monotonic() - started < 15
    assert "timed out" in observation and "started" in observation, observation[:300]
    assert not terminated and not truncated
    observation, *_ = within(30, lambda: env.step({"name": "run_shell", "arguments": {"command": "echo alive"}}),
                             "the next command")
    assert "alive" in observation
    trajectory = within(120, lambda: run_episode(env, OracleAgent(), seed=0, task_id=task.id), "an oracle episode")
    assert trajectory.reward == 1.0, trajectory.reward_breakdown
    env.close()


@pytest.mark.docker
@pytest.mark.timeout(300)
def test_cli_container_killed_mid_call_heals_and_leaves_no_container(cli_tasks_path: Path,
                                                                   docker_backend: str) -> None:
    from reliability_support import docker_client

    from agentgym.sandbox import close_pools

    env = _cli_env(cli_tasks_path, docker_backend, pool_size=1, command_timeout=30.0)
    task = next(t for t in env.unwrapped.task_set if t.family == "organise")
    within(120, lambda: env.reset(options={"task_id": task.id}), "reset")
    container_id = env.unwrapped.state.sandbox.container_id
    assert container_id

    def kill_soon() -> None:
        time.sleep(1.0)
        docker_client().containers.get(container_id).kill()

    killer = threading.Thread(target=kill_soon, daemon=True)
    killer.start()
    started = time.monotonic()
    observation, _reward, _terminated, _truncated, _ = within(
        60, lambda: env.step({"name": "run_shell", "arguments": {"command": "echo before; sleep 20"}}),
        "a call whose container is killed")
    killer.join(10)
    assert time.monotonic() - started < 25, "the killed call waited for its full timeout"
    assert isinstance(observation, str) and observation, observation
    # the same episode goes on in a restarted sandbox, or says plainly that its state was lost
    observation, *_ = within(60, lambda: env.step({"name": "run_shell", "arguments": {"command": "echo alive"}}),
                             "the next call")
    assert "alive" in observation or observation.startswith("Error:"), observation[:300]
    # the pool heals: the next episodes run in a healthy container and the oracle solves them
    for _ in range(2):
        trajectory = within(120, lambda: run_episode(env, OracleAgent(), seed=0, task_id=task.id), "an episode")
        assert trajectory.reward == 1.0, trajectory.reward_breakdown
    assert env.unwrapped.state.sandbox.container_id != container_id
    env.close()
    close_pools()
    assert wait_for_no_containers() == []


@pytest.mark.docker
@pytest.mark.timeout(180)
def test_sandbox_restarts_after_a_killed_container_leak_no_file_descriptors(docker_backend: str) -> None:
    from reliability_support import docker_client, open_fds

    from agentgym.sandbox import Sandbox

    client = docker_client()
    sandbox = Sandbox.create(backend=docker_backend)
    sandbox.run("true", timeout=10)
    before = open_fds()
    for _ in range(5):
        client.containers.get(sandbox.container_id).kill()
        result = within(60, lambda: sandbox.run("echo hi", timeout=10), "a call after the kill")
        assert result.exit_code == 137  # the call says the sandbox was restarted and its state lost
        assert within(30, lambda: sandbox.run("echo hi", timeout=10), "the next call").stdout == "hi\n"
    sandbox.close()
    client.close()
    after = open_fds()
    grown = len(after) - len(before)
    assert grown <= 0, f"{grown} more open file descriptors after 5 restarts and close(): " \
                       f"{sorted(set(after) - set(before))[:6]}"
