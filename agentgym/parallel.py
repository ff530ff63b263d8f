"""Running many episodes at once: in this process, on a pool of threads or processes, or as Ray actors.

Every episode is fully determined by its `EpisodeSpec` (env, task, sample, seed), so the results do not depend
on the backend or the number of workers; only the order in which they arrive does. A worker process or actor
that dies is replaced and its episode retried (up to `MAX_ATTEMPTS` times). At most two episodes per worker
are in flight, so a huge plan never floods a queue (backpressure).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

from agentgym.agents.base import Agent, make_agent
from agentgym.rollout import AgentUnavailable, run_episode

MAX_ATTEMPTS = 3
BACKENDS = ("auto", "serial", "thread", "process", "ray")


@dataclass(frozen=True)
class EnvSpec:
    """How a worker makes one env: its registered entry point (so a worker process can register it again)
    and the keyword arguments for `gym.make`."""

    env_id: str
    entry_point: str
    registered_kwargs: dict[str, Any] = field(default_factory=dict)
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EpisodeSpec:
    """One episode to play: sample `sample` of task `task_id` of env `env_id`, reset with `seed`."""

    env_id: str
    task_id: str
    sample: int
    seed: int

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.env_id, self.task_id, self.sample)


@dataclass(frozen=True)
class RolloutConfig:
    """What every worker needs to play any episode of a run (picklable, sent once per worker)."""

    envs: tuple[EnvSpec, ...]
    agent: str
    agent_options: dict[str, Any] = field(default_factory=dict)
    max_repeats: int = 0
    success_threshold: float = 1.0


@dataclass
class EpisodeResult:
    """A finished episode (`trajectory`, a `Trajectory.to_dict()`) or why it could not be played
    (`unavailable`: the agent's backend did not answer; the episode should be retried later)."""

    spec: EpisodeSpec
    trajectory: dict[str, Any] | None = None
    unavailable: str | None = None


class _StoppableAgent(Agent):
    """Passes calls through to the real agent, but stops an episode between turns once the run is stopping."""

    def __init__(self, inner: Agent, stop: Any) -> None:
        self.inner = inner
        self.stop = stop
        self.privileged = inner.privileged
        self.name = inner.name

    def reset(self, task: Any = None, *, seed: int | None = None) -> None:
        self.inner.reset(task, seed=seed)

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        if self.stop is not None and self.stop.is_set():
            raise AgentUnavailable("the run was interrupted")
        return self.inner.act(messages, tools)

    def close(self) -> None:
        self.inner.close()


class RolloutWorker:
    """Plays episodes one at a time, keeping one env instance per env id and one agent."""

    def __init__(self, config: RolloutConfig, stop: Any = None) -> None:
        self.config = config
        self._specs = {spec.env_id: spec for spec in config.envs}
        self._envs: dict[str, Any] = {}
        self._agent = _StoppableAgent(make_agent(config.agent, **config.agent_options), stop)

    def _env(self, env_id: str) -> Any:
        if env_id not in self._envs:
            import gymnasium as gym

            import agentgym

            spec = self._specs[env_id]
            if env_id not in gym.registry:  # a worker process that did not see the driver's registration
                agentgym.register(id=env_id, entry_point=spec.entry_point, kwargs=spec.registered_kwargs)
            self._envs[env_id] = gym.make(env_id, **spec.kwargs)
        return self._envs[env_id]

    def run(self, spec: EpisodeSpec) -> EpisodeResult:
        """Play one episode. Never raises for an unreachable model (see `EpisodeResult.unavailable`)."""
        try:
            trajectory = run_episode(
                self._env(spec.env_id), self._agent, env_id=spec.env_id, seed=spec.seed, task_id=spec.task_id,
                sample=spec.sample, success_threshold=self.config.success_threshold,
                max_repeats=self.config.max_repeats,
            )
        except AgentUnavailable as error:
            return EpisodeResult(spec, unavailable=str(error))
        return EpisodeResult(spec, trajectory=trajectory.to_dict())

    def close(self) -> None:
        for env in self._envs.values():
            env.close()
        self._envs.clear()
        self._agent.close()


# ----------------------------------------------------------------------------- process workers
_PROCESS_WORKER: RolloutWorker | None = None


def _init_process(config: RolloutConfig, stop: Any, path: list[str]) -> None:
    global _PROCESS_WORKER
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver decides what Ctrl-C means
    for entry in reversed(path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    _PROCESS_WORKER = RolloutWorker(config, stop)


def _run_in_process(spec: EpisodeSpec) -> EpisodeResult:
    assert _PROCESS_WORKER is not None, "the worker process was not initialised"
    return _PROCESS_WORKER.run(spec)


class WorkerLost(RuntimeError):
    """A worker died on the same episode `MAX_ATTEMPTS` times."""


def _resolve_backend(backend: str, workers: int, agent: str, ray_address: str | None) -> str:
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")
    if ray_address is not None:
        return "ray"
    if backend != "auto":
        return backend
    if workers <= 1:
        return "serial"
    # model agents wait on the network (threads share one connection pool and concurrency limit);
    # the oracle, random and local models spend their time in Python, where processes scale
    return "thread" if agent.split(":", 1)[0] in ("openai", "hf") else "process"


def run_rollouts(
    config: RolloutConfig,
    specs: Sequence[EpisodeSpec],
    on_result: Callable[[EpisodeResult], None],
    *,
    workers: int = 1,
    backend: str = "auto",
    ray_address: str | None = None,
) -> str:
    """Play every episode of `specs`, calling `on_result` in the calling thread as each one finishes.

    Args:
        config: The envs and agent every worker builds.
        specs: The episodes to play.
        on_result: Receives each `EpisodeResult` (in completion order).
        workers: How many episodes run at once.
        backend: "auto" (serial for one worker; threads for network-bound model agents; else processes),
            "serial", "thread", "process" or "ray".
        ray_address: Run on Ray actors: a cluster address, or "local" to start Ray here.

    Returns the backend used. On KeyboardInterrupt, running episodes are stopped at their next turn (and not
    reported), pending ones are dropped, and the interrupt is re-raised.

    Raises:
        WorkerLost: a worker died on the same episode `MAX_ATTEMPTS` times.
    """
    chosen = _resolve_backend(backend, workers, config.agent, ray_address)
    workers = max(1, workers)
    if chosen == "serial":
        worker = RolloutWorker(config)
        try:
            for spec in specs:
                on_result(worker.run(spec))
        finally:
            worker.close()
    elif chosen == "thread":
        _run_threads(config, specs, on_result, workers)
    elif chosen == "process":
        _run_processes(config, specs, on_result, workers)
    else:
        _run_ray(config, specs, on_result, workers=workers, address=ray_address or "local")
    return chosen


def _run_threads(config: RolloutConfig, specs: Sequence[EpisodeSpec],
                 on_result: Callable[[EpisodeResult], None], workers: int) -> None:
    stop = threading.Event()
    local = threading.local()
    made: list[RolloutWorker] = []
    made_lock = threading.Lock()

    def play(spec: EpisodeSpec) -> EpisodeResult:
        worker = getattr(local, "worker", None)
        if worker is None:
            worker = local.worker = RolloutWorker(config, stop)
            with made_lock:
                made.append(worker)
        result: EpisodeResult = worker.run(spec)
        return result

    executor = futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="agentgym-rollout")
    try:
        _drive(specs, lambda spec: executor.submit(play, spec), on_result, capacity=2 * workers)
    except BaseException:
        stop.set()
        raise
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
        for worker in made:
            worker.close()


def _run_processes(config: RolloutConfig, specs: Sequence[EpisodeSpec],
                   on_result: Callable[[EpisodeResult], None], workers: int) -> None:
    context = multiprocessing.get_context("spawn")  # fork is unsafe once threads (progress bar, Ray) exist
    stop = context.Event()

    def new_pool() -> futures.ProcessPoolExecutor:
        return futures.ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_init_process,
                                           initargs=(config, stop, list(sys.path)))

    pool = [new_pool()]

    def submit(spec: EpisodeSpec) -> futures.Future[EpisodeResult]:
        return pool[0].submit(_run_in_process, spec)

    def replace_pool() -> None:
        pool[0].shutdown(wait=False, cancel_futures=True)
        pool[0] = new_pool()

    try:
        _drive(specs, submit, on_result, capacity=2 * workers, on_broken=replace_pool)
    except BaseException:
        stop.set()
        raise
    finally:
        pool[0].shutdown(wait=True, cancel_futures=True)


def _drive(specs: Sequence[EpisodeSpec], submit: Callable[[EpisodeSpec], futures.Future[EpisodeResult]],
           on_result: Callable[[EpisodeResult], None], *, capacity: int,
           on_broken: Callable[[], None] | None = None) -> None:
    """Keep at most `capacity` episodes in flight; resubmit the episodes of a broken process pool."""
    queue = list(reversed(specs))
    attempts: dict[tuple[str, str, int], int] = {}
    in_flight: dict[futures.Future[EpisodeResult], EpisodeSpec] = {}
    replacements = 0
    while queue or in_flight:
        broken = False
        while queue and len(in_flight) < capacity:
            spec = queue.pop()
            try:
                future = submit(spec)
            except futures.process.BrokenProcessPool:  # the pool died since the last wait
                queue.append(spec)
                broken = True
                break
            attempts[spec.key] = attempts.get(spec.key, 0) + 1
            in_flight[future] = spec
        if not broken:
            done, _ = futures.wait(in_flight, return_when=futures.FIRST_COMPLETED)
            for future in done:
                spec = in_flight.pop(future)
                try:
                    result = future.result()
                except futures.process.BrokenProcessPool:
                    broken = True
                    if attempts[spec.key] >= MAX_ATTEMPTS:
                        raise WorkerLost(f"a worker process died {attempts[spec.key]} times playing {spec}") from None
                    queue.append(spec)
                    continue
                on_result(result)
        if broken:
            if on_broken is None or replacements >= MAX_ATTEMPTS * max(1, len(specs)):
                raise WorkerLost("the worker processes keep dying; see the output above for why")
            replacements += 1
            # every other episode of the dead pool is lost too: play them again on a fresh pool
            for future, spec in list(in_flight.items()):
                future.cancel()
                queue.append(spec)
            in_flight.clear()
            on_broken()


_CARRIED_ENV = ("AGENTGYM_SANDBOX", "AGENTGYM_ALLOW_WEAK_ISOLATION", "AGENTGYM_CACHE")


class _RayWorkerPool:
    """`workers` Ray actors each holding a `RolloutWorker`; a dead actor is replaced by a fresh one."""

    def __init__(self, config: RolloutConfig, workers: int) -> None:
        import ray

        self.ray = ray
        self.config = config
        self.actor_class = ray.remote(num_cpus=1, max_restarts=0)(RolloutWorker)
        self.actors = [self.new_actor() for _ in range(workers)]

    def new_actor(self) -> Any:
        # Actors on other machines do not inherit this process's environment: carry over the variables that
        # choose and allow a sandbox backend, so a remote worker grades under the same isolation as this one.
        carried = {name: os.environ[name] for name in _CARRIED_ENV if name in os.environ}
        options = {"runtime_env": {"env_vars": carried}} if carried else {}
        return self.actor_class.options(**options).remote(self.config)

    def kill(self, actor: Any) -> None:
        self.ray.kill(actor, no_restart=True)

    def close(self) -> None:
        for actor in self.actors:
            self.kill(actor)


def _ray_init(address: str) -> None:
    import ray

    if ray.is_initialized():
        return
    if address == "local":
        # workers started here see the driver's import path, so envs registered from local modules load
        ray.init(include_dashboard=False, log_to_driver=False,
                 job_config=ray.job_config.JobConfig(code_search_path=[p for p in sys.path if p]))
    else:
        ray.init(address=address, log_to_driver=False)


def _run_ray(config: RolloutConfig, specs: Sequence[EpisodeSpec], on_result: Callable[[EpisodeResult], None],
             *, workers: int, address: str) -> None:
    """One episode per actor at a time (backpressure: nothing waits in a Ray queue); a dead actor is
    replaced and its episode retried."""
    try:
        import ray
        from ray.exceptions import RayActorError
    except ImportError:
        raise RuntimeError("--ray needs Ray: pip install 'agentgym[ray]'") from None
    _ray_init(address)
    pool = _RayWorkerPool(config, workers)
    queue = list(reversed(specs))
    attempts: dict[tuple[str, str, int], int] = {}
    idle = list(range(workers))
    in_flight: dict[Any, tuple[int, EpisodeSpec]] = {}
    try:
        while queue or in_flight:
            while queue and idle:
                slot, spec = idle.pop(), queue.pop()
                attempts[spec.key] = attempts.get(spec.key, 0) + 1
                in_flight[pool.actors[slot].run.remote(spec)] = (slot, spec)
            done, _ = ray.wait(list(in_flight), num_returns=1)
            for reference in done:
                slot, spec = in_flight.pop(reference)
                try:
                    result = ray.get(reference)
                except RayActorError:
                    if attempts[spec.key] >= MAX_ATTEMPTS:
                        raise WorkerLost(f"a Ray worker died {attempts[spec.key]} times playing {spec}") from None
                    pool.kill(pool.actors[slot])
                    pool.actors[slot] = pool.new_actor()
                    queue.append(spec)
                else:
                    on_result(result)
                idle.append(slot)
    finally:
        pool.close()


def default_workers() -> int:
    """A sensible worker count for this machine (the CPUs this process may use)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
