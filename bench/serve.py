"""Serving speed and footprint: `agentgym serve` over WebSocket on loopback, against the same steps in process.

Figures (issue 17's targets), all measured in one run against real `agentgym serve` processes:
- per-step overhead on a no-op tool: median remote step (RemoteEnv over WebSocket) minus median local step;
- 256 concurrent sessions on SQL-v0 stepping `list_tables`: steps/s in all, errors, p50/p99 step latency;
- server memory per idle session (open and reset, then idle);
- a 1,000-session soak (open, reset, step, close; 50 at a time): the server's memory after the first 250 and after
  all 1,000, and the sessions and threads left behind.
Prints one JSON object with "figures".

Run: `python bench/serve.py` (needs the serve extra). `--quick` runs smaller counts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from _timing import figure

NOOP_ENV = "ServeBenchNoop-v0"
ROOT = Path(__file__).resolve().parent.parent


# --------------------------------------------------------------------------- the no-op env, for the overhead
def make_noop_env(**kwargs: Any) -> Any:
    from agentgym import Task, ToolEnv, tool

    @tool
    def noop() -> str:
        """Do nothing and say so."""
        return "ok"

    task = Task(id="noop", domain="bench", family="noop", split="test", prompt="Call noop.", answer="ok",
                verifier={"name": "exact"}, solution=[{"name": "submit", "arguments": {"answer": "ok"}}])
    return ToolEnv(tasks=[task], tools=[noop], max_turns=1_000_000, **kwargs)


def register_noop() -> None:
    import agentgym

    agentgym.register(id=NOOP_ENV, entry_point=make_noop_env)


# --------------------------------------------------------------------------- servers in their own processes
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Served:
    """`agentgym serve ENV` in a child process (this script re-run with --server for the no-op env)."""

    def __init__(self, env_id: str, max_sessions: int) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, __file__, "--server", env_id, str(self.port), str(max_sessions)]
        # The server's log goes to a file: a pipe nobody reads would fill and stall the server.
        self.log = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (open for the server's life; closed in stop)
        self.process = subprocess.Popen(command, stdout=self.log, stderr=self.log, text=True, cwd=ROOT)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        self.process.kill()
        raise RuntimeError(f"the server did not start: {self.log_tail()}")

    def log_tail(self) -> str:
        self.log.seek(0)
        return self.log.read()[-2000:]

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def threads(self) -> int:
        return len(os.listdir(f"/proc/{self.process.pid}/task"))

    def health(self) -> dict[str, Any]:
        return dict(httpx.get(self.url + "/health", timeout=10).json())

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)
        self.log.close()


def run_server(env_id: str, port: int, max_sessions: int) -> None:
    from agentgym.serving.server import ServeConfig, serve

    register_noop()
    serve(ServeConfig(env_id=env_id, max_sessions=max_sessions, idle_timeout=600), port=port)


# --------------------------------------------------------------------------- measurements
EPISODE_STEPS = 20  # steps between resets: info carries the whole conversation, so its size grows per turn


def _step_median_ms(env: Any, repeats: int) -> float:
    """Median time of one no-op step, over episodes of EPISODE_STEPS steps (the reset is not timed)."""
    action = {"name": "noop", "arguments": {}}
    samples = []
    for index in range(repeats + 50):
        if index % EPISODE_STEPS == 0:
            env.reset(seed=0)
        start = time.perf_counter()
        env.step(action)
        if index >= 50:  # warm-up
            samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def overhead(repeats: int) -> dict[str, float]:
    import gymnasium as gym

    register_noop()
    local = gym.make(NOOP_ENV)
    local_ms = _step_median_ms(local, repeats)
    local.close()
    server = Served(NOOP_ENV, 4)
    try:
        remote = gym.make(NOOP_ENV, remote=server.url)
        remote_ms = _step_median_ms(remote, repeats)
        remote.close()
    finally:
        server.stop()
    return {"local_ms": local_ms, "remote_ms": remote_ms, "overhead_ms": remote_ms - local_ms,
            "episode_steps": EPISODE_STEPS}


async def _session(url: str, steps: int, latencies: list[float], errors: list[str], start: asyncio.Event) -> None:
    from websockets.asyncio.client import connect

    step = json.dumps({"type": "step", "data": {"action": {"name": "list_tables", "arguments": {}}}})
    async with connect(url.replace("http://", "ws://") + "/ws", max_size=None, compression=None) as connection:
        seed = 0

        async def reset() -> None:
            nonlocal seed
            seed += 1
            # compact_info: what RemoteEnv asks for (each answer carries only the new messages)
            await connection.send(json.dumps({"type": "reset", "data": {"seed": seed, "compact_info": True}}))
            answer = json.loads(await connection.recv())
            if answer["type"] != "observation":
                errors.append(str(answer)[:200])

        await reset()
        await start.wait()
        for _ in range(steps):
            began = time.perf_counter()
            await connection.send(step)
            answer = json.loads(await connection.recv())
            latencies.append(time.perf_counter() - began)
            if answer["type"] != "observation":
                errors.append(str(answer)[:200])
                continue
            if answer["data"]["done"]:
                await reset()
        await connection.send(json.dumps({"type": "close"}))


def concurrent(sessions: int, steps: int) -> dict[str, Any]:
    server = Served("SQL-v0", sessions + 8)
    latencies: list[float] = []
    errors: list[str] = []

    async def main() -> float:
        start = asyncio.Event()
        tasks = [asyncio.create_task(_session(server.url, steps, latencies, errors, start)) for _ in range(sessions)]
        while server.health()["sessions"]["active"] < sessions and not any(task.done() for task in tasks):
            await asyncio.sleep(0.2)
        began = time.perf_counter()
        start.set()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        errors.extend(repr(result)[:200] for result in results if isinstance(result, BaseException))
        return time.perf_counter() - began

    try:
        elapsed = asyncio.run(main())
    finally:
        server.stop()
    ordered = sorted(latencies)
    return {"sessions": sessions, "steps": len(latencies), "steps_per_s": len(latencies) / elapsed,
            "errors": len(errors), "first_errors": errors[:3],
            "p50_ms": 1000 * ordered[len(ordered) // 2] if ordered else float("nan"),
            "p99_ms": 1000 * ordered[int(len(ordered) * 0.99)] if ordered else float("nan")}


def footprint(idle_sessions: int, soak_sessions: int) -> dict[str, Any]:
    server = Served("SQL-v0", max(idle_sessions, 64) + 8)
    try:
        base_mb, base_threads = server.rss_mb(), server.threads()

        async def idle() -> float:
            from websockets.asyncio.client import connect

            url = server.url.replace("http://", "ws://") + "/ws"
            connections = [await connect(url) for _ in range(idle_sessions)]
            for index, connection in enumerate(connections):
                await connection.send(json.dumps({"type": "reset", "data": {"seed": index}}))
                await connection.recv()
            await asyncio.sleep(1)
            held = server.rss_mb()
            for connection in connections:
                await connection.send(json.dumps({"type": "close"}))
                await connection.close()
            return held

        held_mb = asyncio.run(idle())
        per_session_kb = (held_mb - base_mb) * 1024 / idle_sessions

        async def soak() -> list[tuple[float, int]]:
            marks = []
            done = 0
            errors: list[str] = []
            while done < soak_sessions:
                batch = min(50, soak_sessions - done)
                await asyncio.gather(*(_session(server.url, 3, [], errors, _set_event()) for _ in range(batch)))
                done += batch
                if done in (250, soak_sessions):
                    await asyncio.sleep(0.5)
                    marks.append((server.rss_mb(), server.threads()))
            if errors:
                raise RuntimeError(f"soak errors: {errors[:3]}")
            return marks

        (after_250, threads_250), (after_all, _) = asyncio.run(soak())
        time.sleep(1)
        health = server.health()
        # The server keeps a fixed set of worker threads (started by the first sessions): threads left behind are
        # those beyond the count after the first 250 sessions.
        return {"base_mb": base_mb, "idle_sessions": idle_sessions, "held_mb": held_mb,
                "per_idle_session_kb": per_session_kb, "soak_sessions": soak_sessions,
                "rss_after_250_mb": after_250, "rss_after_all_mb": after_all,
                "sessions_left": health["sessions"]["active"], "threads_at_start": base_threads,
                "threads_after_250": threads_250, "threads_left": server.threads()}
    finally:
        server.stop()


def _set_event() -> asyncio.Event:
    event = asyncio.Event()
    event.set()
    return event


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Smaller counts (a smoke run).")
    parser.add_argument("--server", nargs=3, metavar=("ENV", "PORT", "MAX_SESSIONS"), help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.server:
        env_id, port, max_sessions = arguments.server
        run_server(env_id, int(port), int(max_sessions))
        return
    quick = arguments.quick
    step = overhead(300 if quick else 2000)
    load = concurrent(32 if quick else 256, 20 if quick else 40)
    memory = footprint(32 if quick else 200, 300 if quick else 1000)
    soak_growth = memory["rss_after_all_mb"] - memory["rss_after_250_mb"]
    figures = {
        "ws_step_overhead_ms": figure(step["overhead_ms"], "<= 0.5 ms median", step["overhead_ms"] <= 0.5),
        "concurrent_steps_per_s": figure(load["steps_per_s"], ">= 1000 steps/s (256 sessions, SQL-v0)",
                                         load["steps_per_s"] >= 1000 and not quick, digits=0),
        "concurrent_errors": figure(load["errors"], "0", load["errors"] == 0, digits=0),
        "concurrent_p99_ms": figure(load["p99_ms"], "reported", True),
        "idle_session_kb": figure(memory["per_idle_session_kb"], "reported", True, digits=0),
        "soak_memory_growth_mb": figure(soak_growth, "flat (< 20 MB from 250 to 1,000 sessions)", soak_growth < 20),
        "soak_left_behind": figure(memory["sessions_left"] + max(0, memory["threads_left"]
                                                                 - memory["threads_after_250"]),
                                   "0 sessions and no extra threads", memory["sessions_left"] == 0
                                   and memory["threads_left"] <= memory["threads_after_250"], digits=0),
    }
    # The machine may be shared: its load average says how much of the 2 cores the run had.
    print(json.dumps({"figures": figures, "overhead": step, "concurrent": load, "memory": memory,
                      "cpus": os.cpu_count(), "load_average": os.getloadavg(), "quick": quick}, indent=1,
                     default=float))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
