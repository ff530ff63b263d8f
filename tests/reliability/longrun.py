"""The long run: many oracle and random episodes across SQL-v0, FHIR-v0 and CLI-v0 in one process, with faults
injected along the way, measuring what a days-long training run would suffer from: memory growth after
warm-up, and leaked file descriptors, threads, temp dirs and containers.

Used by tests/reliability/test_long_run.py (2,000 episodes in `make test`, 100,000 in the slow suite) and
runnable on its own; it prints one JSON object:

    python tests/reliability/longrun.py --episodes 100000

The mix puts most episodes on the cheap envs (SQL-v0 at a few ms per episode), fewer on FHIR-v0 and the
fewest on CLI-v0 (a sandbox per episode). Faults injected: transient errors and timeouts (the `Perturb`
wrapper) on a share of the random SQL episodes, and, where Docker runs, the CLI sandbox's container killed
in the middle of an episode every `kill_every` CLI episodes.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym

import agentgym  # noqa: F401  (registers the envs)
from agentgym.agents import OracleAgent, RandomAgent
from agentgym.rollout import run_episode

# share of the episodes per (env, agent, perturbed); sums to 1
MIX: dict[tuple[str, str, bool], float] = {
    ("SQL-v0", "oracle", False): 0.40,
    ("SQL-v0", "random", False): 0.20,
    ("SQL-v0", "random", True): 0.20,
    ("FHIR-v0", "random", False): 0.15,
    ("FHIR-v0", "oracle", False): 0.02,
    ("CLI-v0", "random", False): 0.02,
    ("CLI-v0", "oracle", False): 0.01,
}
PERTURBATIONS = ["transient_errors", "timeouts", "typos", "tool_reorder"]
FAULT_MARKERS = ("temporarily unavailable (503)", "the call timed out. Retry")
WARMUP_ROUNDS = 2


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd")) - 1  # less the one listdir holds


def thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


def my_containers() -> list[str]:
    from agentgym.sandbox.backends import docker_problem
    from agentgym.sandbox.docker_backend import OWNER_LABEL

    if docker_problem() is not None:
        return []
    import docker

    client = docker.from_env()
    try:
        containers = client.containers.list(all=True, filters={"label": ["agentgym",
                                                                          f"{OWNER_LABEL}={os.getpid()}"]})
        return sorted(f"{c.short_id} ({c.status})" for c in containers)
    finally:
        client.close()


@dataclass
class Report:
    """What the run did and measured; `to_json` is what the run prints."""

    episodes: dict[str, int] = field(default_factory=dict)
    actions_fuzzed: int = 0
    faults_injected: dict[str, int] = field(default_factory=dict)
    oracle_failures: list[str] = field(default_factory=list)
    envs_made_and_closed: int = 0
    rss_after_warmup: int = 0
    rss_end: int = 0
    rss_peak_after_warmup: int = 0
    fds: dict[str, int] = field(default_factory=dict)
    threads: dict[str, int] = field(default_factory=dict)
    temp_entries_left: list[str] = field(default_factory=list)
    containers_left: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def memory_growth(self) -> float:
        return (self.rss_end - self.rss_after_warmup) / self.rss_after_warmup

    def to_json(self) -> dict[str, Any]:
        return {
            "episodes_run": sum(self.episodes.values()), "episodes": dict(sorted(self.episodes.items())),
            "actions_fuzzed": self.actions_fuzzed, "faults_injected": sum(self.faults_injected.values()),
            "faults": dict(sorted(self.faults_injected.items())),
            "oracle_failures": len(self.oracle_failures), "envs_made_and_closed": self.envs_made_and_closed,
            "memory_growth": round(self.memory_growth, 4), "memory_growth_target": 0.05,
            "rss_after_warmup_mb": round(self.rss_after_warmup / 2**20, 1),
            "rss_end_mb": round(self.rss_end / 2**20, 1),
            "rss_peak_after_warmup_mb": round(self.rss_peak_after_warmup / 2**20, 1),
            "fds": self.fds, "threads": self.threads, "temp_entries_left": len(self.temp_entries_left),
            "containers_left": len(self.containers_left), "seconds": round(self.seconds, 1),
            "ok": self.ok,
        }

    @property
    def ok(self) -> bool:
        return (self.memory_growth < 0.05 and not self.oracle_failures and not self.temp_entries_left
                and not self.containers_left and self.fds.get("end", 0) <= self.fds.get("after_warmup", 0)
                and self.threads.get("end", 0) <= self.threads.get("after_warmup", 0))


class LongRun:
    """Holds one env per (env id, perturbed) for the whole run, as a training loop would."""

    def __init__(self, *, fhir_store: Path, cli_tasks: Path, cli_backend: str, kill_every: int = 25,
                 task_limit: int | None = None) -> None:
        self.makers: dict[tuple[str, bool], Callable[[], Any]] = {
            ("SQL-v0", False): lambda: gym.make("SQL-v0"),
            ("SQL-v0", True): lambda: gym.make("SQL-v0", perturb=PERTURBATIONS, perturb_seed=1),
            ("FHIR-v0", False): lambda: gym.make("FHIR-v0", store=str(fhir_store), knowledge=False),
            # pool_size 3: a pool of its own (get_pool is keyed by size), made under this run's temp dir
            ("CLI-v0", False): lambda: gym.make("CLI-v0", tasks=str(cli_tasks), backend=cli_backend, pool_size=3,
                                                command_timeout=10.0),
        }
        self.cli_backend = cli_backend
        self.kill_every = kill_every
        self.envs: dict[tuple[str, bool], Any] = {}
        self.report = Report()
        self.seed = 0
        self.cli_episodes = 0
        self.task_limit = task_limit
        self.task_ids: dict[str, list[str]] = {}

    def env(self, env_id: str, perturbed: bool) -> Any:
        key = (env_id, perturbed)
        if key not in self.envs:
            self.envs[key] = self.makers[key]()
        return self.envs[key]

    def episode(self, env_id: str, agent_name: str, perturbed: bool) -> None:
        env = self.env(env_id, perturbed)
        self.seed += 1
        name = f"{env_id}/{agent_name}" + ("/perturbed" if perturbed else "")
        self.report.episodes[name] = self.report.episodes.get(name, 0) + 1
        if env_id == "CLI-v0":
            self.cli_episodes += 1
            if self.cli_backend == "docker" and self.kill_every and self.cli_episodes % self.kill_every == 0:
                self.killed_container_episode(env)
                return
        agent = OracleAgent() if agent_name == "oracle" else RandomAgent(seed=self.seed)
        trajectory = run_episode(env, agent, seed=self.seed, task_id=self.task_id(env_id, env))
        if agent_name == "oracle" and trajectory.reward < 1.0:
            self.report.oracle_failures.append(f"{env_id} {trajectory.task_id} seed {self.seed}: "
                                               f"{trajectory.reward}")
        if agent_name == "random":
            self.report.actions_fuzzed += trajectory.turns
        if perturbed:
            for message in trajectory.messages:
                if message["role"] == "tool":
                    for marker in FAULT_MARKERS:
                        if marker in str(message.get("content", "")):
                            kind = "transient_error" if "503" in marker else "timeout"
                            self.report.faults_injected[kind] = self.report.faults_injected.get(kind, 0) + 1

    def task_id(self, env_id: str, env: Any) -> str | None:
        """With `task_limit`, episodes cycle through a fixed seeded subset of tasks, so that the caches every
        env keeps on purpose (parsed gold queries, SQLite page caches) are full after warm-up and what still
        grows is a leak; without it, each episode draws from every task."""
        if self.task_limit is None:
            return None
        if env_id not in self.task_ids:
            import numpy as np

            ids = [task.id for task in env.unwrapped.task_set]
            order = np.random.default_rng(0).permutation(len(ids))[:self.task_limit]
            self.task_ids[env_id] = [ids[int(index)] for index in order]
        chosen = self.task_ids[env_id]
        return chosen[self.seed % len(chosen)]

    def killed_container_episode(self, env: Any) -> None:
        """Kill the episode's container mid-episode; the step answers, the episode ends, the pool heals."""
        import docker

        env.reset(seed=self.seed)
        container_id = env.unwrapped.state.sandbox.container_id
        client = docker.from_env()
        try:
            client.containers.get(container_id).kill()
        finally:
            client.close()
        observation, *_ = env.step({"name": "run_shell", "arguments": {"command": "echo after-kill"}})
        if not isinstance(observation, str):
            raise AssertionError(  # noqa: TRY004 (a failed check, reported as one)
                f"a step after the container was killed returned {observation!r}")
        env.step({"name": "submit", "arguments": {}})
        self.report.faults_injected["container_killed"] = self.report.faults_injected.get("container_killed", 0) + 1

    def fresh_envs(self) -> None:
        """Make, use and close one new env of each kind: `close` must release all it took."""
        for make in self.makers.values():
            env = make()
            run_episode(env, OracleAgent(), seed=self.seed)
            env.close()
            env.close()  # idempotent
            self.report.envs_made_and_closed += 1

    def close(self) -> None:
        for env in self.envs.values():
            env.close()
        self.envs.clear()


def plan_rounds(total: int, rounds: int) -> list[list[tuple[str, str, bool]]]:
    """Each round: the mix's episodes for total/rounds, interleaved so every kind runs throughout."""
    per_round = max(1, total // rounds)
    counts = {kind: max(1, round(share * per_round)) for kind, share in MIX.items()}
    plan: list[tuple[str, str, bool]] = []
    remaining = dict(counts)
    while any(remaining.values()):
        for kind in MIX:
            if remaining[kind]:
                step = max(1, counts[kind] // 20)
                take = min(step, remaining[kind])
                plan.extend([kind] * take)
                remaining[kind] -= take
    return [plan for _ in range(rounds)]


def run(total: int, *, fhir_store: Path, cli_tasks: Path, cli_backend: str, rounds: int = 10,
        task_limit: int | None = None, kill_every: int = 25,
        progress: Callable[[str], None] | None = None) -> Report:
    """Play about `total` episodes in `rounds` rounds; the first WARMUP_ROUNDS rounds are warm-up.
    `task_limit`: see `LongRun.task_id`. `kill_every`: kill a CLI container every that many CLI episodes."""
    from agentgym.sandbox import close_pools
    from agentgym.sandbox.local_backend import work_root

    started = time.monotonic()
    # Local sandboxes live under a work root their dropped uid can enter, which a private temp dir is not: count
    # what this run leaves there too (named by this process's pid: other processes' sandboxes come and go).
    sandbox_root = work_root(os.geteuid() == 0) if cli_backend == "local" else None
    sandboxes_before = set(os.listdir(sandbox_root)) if sandbox_root else set()
    temp_root = Path(tempfile.mkdtemp(prefix="agentgym-longrun-"))
    saved_tempdir = tempfile.tempdir
    tempfile.tempdir = str(temp_root)
    long_run = LongRun(fhir_store=fhir_store, cli_tasks=cli_tasks, cli_backend=cli_backend, kill_every=kill_every,
                       task_limit=task_limit)
    report = long_run.report
    try:
        for number, plan in enumerate(plan_rounds(total, rounds), start=1):
            for env_id, agent, perturbed in plan:
                long_run.episode(env_id, agent, perturbed)
            long_run.fresh_envs()
            gc.collect()
            rss = rss_bytes()
            if number == WARMUP_ROUNDS:
                report.rss_after_warmup = rss
                report.fds["after_warmup"] = fd_count()
                report.threads["after_warmup"] = thread_count()
            if number > WARMUP_ROUNDS:
                report.rss_peak_after_warmup = max(report.rss_peak_after_warmup, rss)
            if progress:
                progress(f"round {number}/{rounds}: {sum(report.episodes.values())} episodes, "
                         f"rss {rss / 2**20:.1f} MB, fds {fd_count()}, threads {thread_count()}")
        report.rss_end = rss_bytes()
        report.fds["end"] = fd_count()
        report.threads["end"] = thread_count()
        long_run.close()
        close_pools()
        gc.collect()
        report.fds["after_close"] = fd_count()
        report.threads["after_close"] = thread_count()
        deadline = time.monotonic() + 20
        report.containers_left = my_containers()
        while report.containers_left and time.monotonic() < deadline:
            time.sleep(0.5)
            report.containers_left = my_containers()
        # The local backend's per-user work root (`agentgym-sandboxes-UID`) is shared by every sandbox of the
        # user and stays; what must not stay is a sandbox inside it. Without root the backend makes that root
        # in the caller's temp dir (no other uid has to enter it), so look inside instead of counting it.
        report.temp_entries_left = []
        for name in sorted(os.listdir(temp_root)):
            path = temp_root / name
            if name == f"agentgym-sandboxes-{os.geteuid()}" and path.is_dir():
                report.temp_entries_left += sorted(str(path / inner) for inner in os.listdir(path))
            else:
                report.temp_entries_left.append(name)
        if sandbox_root is not None:
            mine = {name for name in set(os.listdir(sandbox_root)) - sandboxes_before
                    if name.startswith(f"sandbox-{os.getpid()}-")}
            report.temp_entries_left += sorted(str(sandbox_root / name) for name in mine)
    finally:
        long_run.close()
        tempfile.tempdir = saved_tempdir
    report.seconds = time.monotonic() - started
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--fhir-patients", type=int, default=30)
    parser.add_argument("--task-limit", type=int, default=None, help="cycle through this many tasks per env")
    parser.add_argument("--kill-every", type=int, default=25, help="kill a CLI container every N CLI episodes (0: never)")
    arguments = parser.parse_args()
    from agentgym_cli.tasks import generate
    from agentgym_fhir.data.generate import generate_store

    from agentgym.sandbox.backends import docker_problem
    from agentgym.tasks import save_tasks

    backend = "docker" if docker_problem() is None else "local"
    with tempfile.TemporaryDirectory(prefix="agentgym-longrun-data-") as folder:
        store = Path(folder) / "population.sqlite"
        generate_store(store, arguments.fhir_patients, 0, overwrite=True).close()
        tasks = Path(folder) / "cli-tasks.jsonl"
        save_tasks(generate(0, fixtures=2, backend=backend), tasks)
        report = run(arguments.episodes, fhir_store=store, cli_tasks=tasks, cli_backend=backend,
                     rounds=arguments.rounds, task_limit=arguments.task_limit, kill_every=arguments.kill_every,
                     progress=lambda line: print(line, file=sys.stderr, flush=True))
    print(json.dumps(report.to_json()))


if __name__ == "__main__":
    threading.current_thread().name = "longrun"
    main()
