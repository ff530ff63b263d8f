"""`agentgym serve ENV --workers N`: several server processes sharing one port, run as a user runs them (a
subprocess of the real CLI), played through `gym.make(ID, remote=URL)` and stopped with SIGTERM and SIGINT."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import gymnasium as gym
import httpx
import pytest
from click.testing import CliRunner

from tests.serve.conftest import SERVE_EXTRA

for _module in ("openenv", "uvicorn", "websockets"):
    pytest.importorskip(_module, reason=SERVE_EXTRA)
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

import agentgym  # noqa: F401
from agentgym.serving.cli import serve_command

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "workers-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class Served:
    """A running `agentgym serve` process: its pid, its URL once announced, and what it wrote to stderr."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: list[str] = []
        self.url: str | None = None
        self._announced = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)
            if line.startswith("serving ") and " at ws://" in line:
                self.url = line.split(" at ", 1)[1].split(" ", 1)[0].replace("ws://", "http://")
                self._announced.set()
        self._announced.set()

    def wait_ready(self, timeout: float = 60) -> str:
        self._announced.wait(timeout)
        if self.url is None:
            raise AssertionError(f"the server did not announce its address:\n{''.join(self.lines)}")
        return self.url


def _children(pid: int) -> list[int]:
    """The live processes whose parent is `pid` (read from /proc; zombies count as gone)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, parent = stat.rsplit(")", 1)[1].split()[:2]
        if int(parent) == pid and state != "Z":
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _stop_and_check(server: Served, signum: int, workers: list[int]) -> None:
    """Send `signum` to the CLI process: it must exit with status 0 and take every worker with it."""
    server.process.send_signal(signum)
    assert server.process.wait(timeout=20) == 0, "".join(server.lines)
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in workers if _alive(pid)], "worker processes outlived the server"


@contextmanager
def serve_workers(*options: str) -> Iterator[Served]:
    command = [sys.executable, "-m", "agentgym.cli", "serve", "SQL-v0", "--port", "0", *options]
    process = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        yield Served(process)
    finally:
        if process.poll() is None:
            for child in _children(process.pid):
                os.kill(child, signal.SIGKILL)
            process.kill()
            process.wait(timeout=10)


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    with serve_workers("--workers", "2", "--token", TOKEN, "--max-sessions", "8", "--idle-timeout", "60") as server:
        server.wait_ready()
        yield server


def _health_pids(url: str, *, want: int, timeout: float = 20) -> dict[int, dict[str, Any]]:
    """Ask /health on a new connection each time until `want` different pids have answered (or time runs out)."""
    answers: dict[int, dict[str, Any]] = {}
    deadline = time.monotonic() + timeout
    while len(answers) < want and time.monotonic() < deadline:
        response = httpx.get(f"{url}/health", headers=AUTH, timeout=10)
        assert response.status_code == 200, response.text
        health = response.json()
        answers[health["worker"]["pid"]] = health
    return answers


def _play(url: str, seed: int) -> tuple[float, bool]:
    local = gym.make("SQL-v0")
    local.reset(seed=seed)
    solution = local.unwrapped.task.solution
    local.close()
    env = gym.make("SQL-v0", remote=url.replace("http://", "ws://"), remote_token=TOKEN)
    try:
        env.reset(seed=seed)
        reward, terminated = 0.0, False
        for call in solution:
            _, reward, terminated, _, _ = env.step(call)
        return float(reward), bool(terminated)
    finally:
        env.close()


def test_two_workers_answer_and_concurrent_sessions_score_one(served: Served) -> None:
    url = served.wait_ready()
    answers = _health_pids(url, want=2)
    workers = _children(served.process.pid)
    assert len(answers) == 2, f"/health answered only from pids {sorted(answers)}"
    assert set(answers) <= set(workers), (answers.keys(), workers)  # the workers are the CLI's own children
    assert all(health["worker"]["workers"] == 2 and health["sessions"]["max"] == 8 for health in answers.values())

    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(lambda seed: _play(url, seed), range(6)))
    assert results == [(1.0, True)] * 6


def test_every_worker_refuses_requests_without_the_token(served: Served) -> None:
    url = served.wait_ready()
    assert len(_health_pids(url, want=2)) == 2  # both workers are up and answer the token
    # Each request is a new connection, so the kernel spreads them over both workers: none lets one through.
    statuses = {httpx.get(f"{url}/health", timeout=10).status_code for _ in range(30)}
    statuses |= {httpx.get(f"{url}/health", headers={"Authorization": "Bearer wrong"}, timeout=10).status_code
                 for _ in range(10)}
    assert statuses == {401}
    for _ in range(10):
        with pytest.raises(InvalidStatus) as refused:
            connect(url.replace("http://", "ws://") + "/ws", open_timeout=10).close()
        assert refused.value.response.status_code == 401


def test_sigterm_stops_the_parent_and_every_worker(served: Served) -> None:
    served.wait_ready()
    workers = _children(served.process.pid)
    assert len(workers) >= 2
    _stop_and_check(served, signal.SIGTERM, workers)


def test_sigint_stops_the_parent_and_every_worker() -> None:
    with serve_workers("--workers", "2") as server:
        url = server.wait_ready()
        health = httpx.get(f"{url}/health", timeout=10).json()
        assert health["worker"]["workers"] == 2
        workers = _children(server.process.pid)
        assert health["worker"]["pid"] in workers
        _stop_and_check(server, signal.SIGINT, workers)
        assert not any("Traceback" in line for line in server.lines), "".join(server.lines)


@pytest.mark.parametrize(("arguments", "expected"), [
    (["--workers", "0"], "--workers must be 1 or more"),
    (["--workers", "2", "--ray"], "with --ray use --replicas N instead"),
])
def test_bad_workers_options_are_refused_in_one_line(arguments: list[str], expected: str) -> None:
    result = CliRunner().invoke(serve_command, ["SQL-v0", *arguments])
    assert result.exit_code != 0
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and expected in lines[0], result.output


def test_a_worker_reads_its_settings_and_drops_them_from_its_environment() -> None:
    """What a spawned worker does first (in a fresh interpreter, as uvicorn starts one): it builds the app of the
    settings the parent wrote, and the token is no longer in its environment for anything it starts later."""
    from agentgym.serving.server import ServeConfig
    from agentgym.serving.workers import SETTINGS_VARIABLE, settings_text

    settings = settings_text(ServeConfig(env_id="SQL-v0", token=TOKEN, workers=3, max_sessions=5))
    probe = ("import os, json\n"
             "from fastapi.testclient import TestClient\n"
             "from agentgym.serving.workers import make_app, SETTINGS_VARIABLE\n"
             "app = make_app()\n"
             "client = TestClient(app)\n"
             f"health = client.get('/health', headers={AUTH!r}).json()\n"
             "print(json.dumps({'left': SETTINGS_VARIABLE in os.environ, 'unauthorized': client.get('/health')"
             ".status_code, 'worker': health['worker'], 'max': health['sessions']['max']}))\n")
    result = subprocess.run([sys.executable, "-c", probe], check=False, cwd=ROOT, capture_output=True, text=True,
                            timeout=60, env={**os.environ, SETTINGS_VARIABLE: settings})
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert answer == {"left": False, "unauthorized": 401, "worker": {"pid": answer["worker"]["pid"], "workers": 3},
                      "max": 5}
