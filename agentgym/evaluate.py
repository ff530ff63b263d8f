"""`agentgym eval` and `agentgym export`: run an agent on envs, keep every episode, summarize and report.

A run directory holds:
- `run.json`: what was run (envs, agent, seed, env arguments); a re-run must match it to resume;
- `trajectories.jsonl`: one finished episode per line, appended and fsync'd as each one ends, so an
  interrupted run loses nothing finished and a re-run skips what is there;
- `tools.json`: each env's tool schemas (for export);
- `summary.json`, `report.md` and `plots/*.png`: rewritten at the end of every run.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

import click
import numpy as np

from agentgym.parallel import BACKENDS, EnvSpec, EpisodeResult, EpisodeSpec, RolloutConfig, run_rollouts

TRAJECTORIES = "trajectories.jsonl"
RUN_FILE = "run.json"
TOOLS_FILE = "tools.json"
SUMMARY_FILE = "summary.json"
_DISK_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
WEAK_ISOLATION_ENV = "AGENTGYM_ALLOW_WEAK_ISOLATION"
# run.json keys that define which episodes a run holds; --n and --k may grow between re-runs (and
# allow_weak_isolation, recorded beside them, may change: it decides where sandboxes run, not what is graded)
_IDENTITY = ("envs", "agent", "agent_options", "seed", "tasks", "env_args", "max_turns", "max_repeats",
             "success_threshold", "split")


class RunStoreError(click.ClickException):
    """A run directory that cannot be used as asked (different settings, unreadable file)."""


def episode_seed(seed: int, env_index: int, position: int, sample: int) -> int:
    """The reset seed of one episode. Independent of --n and --k, so growing a run keeps earlier episodes."""
    return int(np.random.SeedSequence([seed, env_index, position, sample]).generate_state(1)[0])


def plan_episodes(task_ids: dict[str, list[str]], *, n: int, samples: int, seed: int,
                  families: dict[str, list[str]] | None = None, per_family: int = 0) -> list[EpisodeSpec]:
    """The episodes of a run: for each env, its tasks drawn round-robin over families (each family in a seeded
    order, families in name order), so any prefix covers the families evenly; at most `per_family` tasks of
    each family when per_family > 0, then the first `n` (all when n <= 0). The first n entries stay the same
    as n grows. `families` gives each env's task families, parallel to `task_ids` (absent: one family).
    Ordered sample-major, so an interrupted run has covered many tasks once rather than few tasks many times."""
    chosen: list[tuple[int, str, int, str]] = []
    for env_index, (env_id, ids) in enumerate(task_ids.items()):
        labels = (families or {}).get(env_id) or [""] * len(ids)
        order = np.random.default_rng(seed + env_index).permutation(len(ids))
        by_family: dict[str, list[int]] = {}
        for index in order:
            by_family.setdefault(labels[int(index)], []).append(int(index))
        queues = [by_family[name][:per_family] if per_family > 0 else by_family[name] for name in sorted(by_family)]
        picked: list[int] = []
        for round_index in range(max((len(queue) for queue in queues), default=0)):
            picked.extend(queue[round_index] for queue in queues if round_index < len(queue))
        if 0 < n < len(picked):
            picked = picked[:n]
        chosen.extend((env_index, env_id, position, ids[index]) for position, index in enumerate(picked))
    return [
        EpisodeSpec(env_id=env_id, task_id=task_id, sample=sample,
                    seed=episode_seed(seed, env_index, position, sample))
        for sample in range(samples)
        for env_index, env_id, position, task_id in chosen
    ]


def reported_ks(k: int) -> list[int]:
    """The k of pass@k reported for --k K: 1, powers of two below K, and K."""
    values = {1, k}
    power = 2
    while power < k:
        values.add(power)
        power *= 2
    return sorted(values)


class TrajectoryLog:
    """The append-only `trajectories.jsonl` of a run.

    Each record is written with one `write` call, flushed and fsync'd, so after a crash or Ctrl-C every line
    but possibly a cut last one is a whole episode; `load` drops a cut last line.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: Any = None

    def load(self) -> dict[tuple[str, str, int], dict[str, Any]]:
        """Finished episodes by (env_id, task_id, sample). Repairs a cut last line left by a crash."""
        records: dict[tuple[str, str, int], dict[str, Any]] = {}
        if not self.path.is_file():
            return records
        data = self.path.read_bytes()
        good_length = 0
        lines = data.split(b"\n")
        for number, line in enumerate(lines, start=1):
            last = number == len(lines)
            if not line.strip():
                if not last:
                    good_length += len(line) + 1
                continue
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                if last:
                    break  # cut short by a crash mid-write: dropped, the episode runs again
                raise RunStoreError(f"{self.path}:{number} is not valid JSON; delete that line or the run "
                                    "directory to start again") from None
            if last:  # a complete record without its newline: keep it, add the newline
                good_length = len(data)
            else:
                good_length += len(line) + 1
            records[(record["env_id"], record["task_id"], int(record["sample"]))] = record
        if good_length < len(data):
            with self.path.open("r+b") as handle:
                handle.truncate(good_length)
        elif data and not data.endswith(b"\n"):
            with self.path.open("ab") as handle:
                handle.write(b"\n")
        return records

    def append(self, record: dict[str, Any]) -> None:
        """Write one finished episode durably."""
        if self._handle is None:
            self._handle = self.path.open("ab")
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8", errors="replace")
        self._handle.write(line)
        self._handle.flush()
        try:
            os.fsync(self._handle.fileno())
        except OSError as error:
            if error.errno not in (errno.EINVAL, errno.ENOTSUP):  # fsync is meaningless on pipes and devices
                raise

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def read_records(run_dir: Path) -> list[dict[str, Any]]:
    """Every finished episode of a run directory, in file order."""
    path = Path(run_dir) / TRAJECTORIES
    if not path.is_file() and (Path(run_dir) / "clean" / TRAJECTORIES).is_file():
        runs = sorted(str(child) for child in Path(run_dir).iterdir() if (child / TRAJECTORIES).is_file())
        raise click.ClickException(f"{run_dir} holds a perturbed comparison, not one run: name one of its runs "
                                   f"({', '.join(runs)})")
    if not path.is_file():
        raise click.ClickException(f"{run_dir} holds no {TRAJECTORIES}; make one with `agentgym eval ... --out "
                                   f"{run_dir}`")
    return list(TrajectoryLog(path).load().values())


def _write_json(path: Path, data: Any) -> None:
    temporary = path.with_name(path.name + ".partial")
    temporary.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    temporary.replace(path)


def _check_identity(run_dir: Path, identity: dict[str, Any]) -> None:
    path = run_dir / RUN_FILE
    if not path.is_file():
        return
    try:
        previous = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        raise RunStoreError(f"{path} is not valid JSON; delete the run directory to start again") from None
    differences = [f"{key}: {previous.get(key)!r} then, {identity.get(key)!r} now"
                   for key in _IDENTITY if previous.get(key) != identity.get(key)]
    if differences:
        raise RunStoreError(f"{run_dir} holds a run with other settings ({'; '.join(differences)}). Use another "
                            "--out, or delete that directory to start again.")


@contextmanager
def _clear_disk_errors(run_dir: Path) -> Iterator[None]:
    try:
        yield
    except OSError as error:
        if error.errno in _DISK_FULL:
            raise click.ClickException(
                f"the disk holding {run_dir} is full ({os.strerror(error.errno)} writing "
                f"{error.filename or run_dir}). Finished episodes already written are kept: free some space "
                "(or choose another --out) and run the same command again to resume."
            ) from None
        raise


def _make_env_for_listing(env_id: str, kwargs: dict[str, Any]) -> Any:
    import gymnasium as gym

    try:
        return gym.make(env_id, **kwargs)
    except (ValueError, TypeError, FileNotFoundError) as error:
        raise click.ClickException(f"could not make {env_id} with {kwargs}: {error}") from None


def _check_remote_agent(agent: str, options: dict[str, Any]) -> None:
    """For an agent behind a server (openai:MODEL), check before the first episode that the server answers and
    takes the key, so a wrong URL fails in seconds with the URL rather than after every episode's retries."""
    if agent.partition(":")[0] != "openai":
        return
    from agentgym.agents.base import make_agent
    from agentgym.rollout import AgentUnavailable

    try:
        remote = make_agent(agent, **options)
    except (TypeError, ValueError) as error:
        raise click.BadParameter(str(error), param_hint="--agent/--agent-arg") from None
    try:
        check = getattr(remote, "check_server", None)
        if check is not None:
            check()
    except AgentUnavailable as error:
        raise click.ClickException(str(error)) from None
    finally:
        remote.close()


def _choose_split(env_id: str, available: set[str], requested: str | None, from_env_args: Any) -> str:
    """The split an eval runs on one env: the one asked for (by --split or --env-arg split=), else "test"
    where the env has it, else "all"."""
    wanted = requested if requested is not None else from_env_args
    if wanted is None:
        return "test" if "test" in available else "all"
    wanted = str(wanted)
    if wanted != "all" and wanted not in available:
        import difflib

        close = difflib.get_close_matches(wanted, sorted(available), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise click.BadParameter(f"{env_id} has no split {wanted!r}{hint}; its splits: "
                                 f"{', '.join(sorted(available))}, or all", param_hint="--split")
    return wanted


class _Progress:
    """A rich progress bar with ETA and the running success rate; silent when `enabled` is false."""

    def __init__(self, total: int, done: int, successes: int, enabled: bool) -> None:
        self.done, self.successes = done, successes
        self.bar: Any = None
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.bar = Progress(TextColumn("[bold]eval[/]"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("success {task.fields[rate]}"), TimeElapsedColumn(),
                            TextColumn("ETA"), TimeRemainingColumn(), console=Console(stderr=True))
        self.task = self.bar.add_task("eval", total=total, completed=done, rate=self._rate())
        self.bar.start()

    def _rate(self) -> str:
        return f"{self.successes / self.done:.1%}" if self.done else "-"

    def advance(self, success: bool) -> None:
        self.done += 1
        self.successes += int(success)
        if self.bar is not None:
            self.bar.update(self.task, advance=1, rate=self._rate())

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()


@contextmanager
def weak_isolation_allowed(enabled: bool) -> Iterator[None]:
    """Within the block, when `enabled`, set AGENTGYM_ALLOW_WEAK_ISOLATION=1 (read by `agentgym.sandbox` and
    inherited by worker processes started inside it); restore the previous value after."""
    if not enabled:
        yield
        return
    previous = os.environ.get(WEAK_ISOLATION_ENV)
    os.environ[WEAK_ISOLATION_ENV] = "1"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(WEAK_ISOLATION_ENV, None)
        else:
            os.environ[WEAK_ISOLATION_ENV] = previous


_Evaluate = TypeVar("_Evaluate", bound=Callable[..., dict[str, Any]])


def _isolation_for_the_run(function: _Evaluate) -> _Evaluate:
    """Wrap `evaluate` so that it runs with AGENTGYM_ALLOW_WEAK_ISOLATION set when the run allows weak isolation:
    asked for, or a privileged agent (the oracle replays trusted gold solutions), or already set."""

    @functools.wraps(function)
    def run(env_ids: Sequence[str], agent: str, out: Path, **settings: Any) -> dict[str, Any]:
        from agentgym.agents.base import agent_is_privileged

        try:
            weak = (bool(settings.get("allow_weak_isolation")) or agent_is_privileged(agent)
                    or os.environ.get(WEAK_ISOLATION_ENV) == "1")
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--agent") from None
        settings["allow_weak_isolation"] = weak
        with weak_isolation_allowed(weak):
            return function(env_ids, agent, out, **settings)

    return cast(_Evaluate, run)


@_isolation_for_the_run
def evaluate(
    env_ids: Sequence[str],
    agent: str,
    out: Path,
    *,
    n: int = 0,
    per_family: int = 0,
    split: str | None = None,
    k: int = 1,
    samples: int | None = None,
    max_turns: int | None = None,
    workers: int = 1,
    backend: str = "auto",
    ray_address: str | None = None,
    tasks: str | None = None,
    env_args: dict[str, Any] | None = None,
    agent_options: dict[str, Any] | None = None,
    secret_options: dict[str, Any] | None = None,
    seed: int = 0,
    max_repeats: int = 0,
    success_threshold: float = 1.0,
    bootstrap: int = 1000,
    progress: bool = True,
    plots: bool = True,
    allow_weak_isolation: bool = False,
) -> dict[str, Any]:
    """Run (or resume) an evaluation into `out` and return its summary. The Python form of `agentgym eval`.

    `split` picks the tasks: a split name, "all", or None for the env's "test" split where it has one (else
    every task). `n` caps the tasks per env and `per_family` the tasks per family; both draw round-robin over
    families (see `plan_episodes`).
    `secret_options` reach the agent but are never written to the run directory (API keys).
    `allow_weak_isolation` lets sandboxes fall back to the local backend (weaker isolation) when Docker is not
    there, by setting `AGENTGYM_ALLOW_WEAK_ISOLATION=1` for this run; it is on by itself for a privileged agent
    (the oracle replays trusted gold solutions), and what was used is recorded in `run.json`.
    Raises `click.ClickException` for bad settings and `KeyboardInterrupt` when interrupted (finished
    episodes are kept). See `agentgym eval --help` for the meaning of each argument.
    """
    for value, name, least in ((n, "--n", 0), (per_family, "--per-family", 0), (workers, "--workers", 1)):
        if value < least:
            meaning = "; 0 means every task" if least == 0 else ""
            raise click.BadParameter(f"{name} must be at least {least}, got {value}{meaning}", param_hint=name)
    import agentgym  # noqa: F401  (registers every plugin's envs)
    from agentgym.cli import known_env
    from agentgym.metrics import record_success, summarize
    from agentgym.report import write_report

    samples = k if samples is None else samples
    if k < 1 or samples < k:
        raise click.BadParameter(f"need 1 <= --k <= --samples, got k={k}, samples={samples}")
    env_kwargs: dict[str, Any] = dict(env_args or {})
    if tasks is not None:
        env_kwargs["tasks"] = str(Path(tasks).resolve())
    if max_turns is not None:
        env_kwargs["max_turns"] = max_turns
    records_by_env: dict[str, EnvSpec] = {}
    task_ids: dict[str, list[str]] = {}
    task_families: dict[str, list[str]] = {}
    used_splits: dict[str, str] = {}
    if split is not None and "split" in env_kwargs and split != env_kwargs["split"]:
        raise click.BadParameter(f"--split {split} and --env-arg split={env_kwargs['split']} disagree; give one",
                                 param_hint="--split")
    tool_schemas: dict[str, Any] = {}
    turn_limit = 0
    for raw_id in env_ids:
        record = known_env(raw_id)
        listing_kwargs = {key: value for key, value in env_kwargs.items() if key != "split"}
        env = _make_env_for_listing(record.id, listing_kwargs)
        inner = env.unwrapped
        chosen_split = _choose_split(record.id, inner.task_set.splits(), split, env_kwargs.get("split"))
        selected = inner.task_set if chosen_split == "all" else inner.task_set.filter(split=chosen_split)
        task_ids[record.id] = [task.id for task in selected]
        task_families[record.id] = [task.family for task in selected]
        used_splits[record.id] = chosen_split
        tool_schemas[record.id] = inner.tool_schemas
        turn_limit = max(turn_limit, int(inner.max_turns))
        env.close()
        # a served env (remote=URL) was made by the server: its episodes are picked by task id alone
        served = chosen_split == "all" or "remote" in listing_kwargs
        run_kwargs = dict(listing_kwargs) if served else {**listing_kwargs, "split": chosen_split}
        records_by_env[record.id] = EnvSpec(record.id, record.entry_point, record.kwargs, run_kwargs)
    identity = {
        "envs": list(records_by_env), "agent": agent, "agent_options": dict(agent_options or {}), "seed": seed,
        "tasks": env_kwargs.get("tasks"), "env_args": dict(env_args or {}), "max_turns": max_turns,
        "max_repeats": max_repeats, "success_threshold": success_threshold,
        "split": split or "auto", "splits": used_splits, "per_family": per_family,
        "allow_weak_isolation": allow_weak_isolation,
    }
    specs = plan_episodes(task_ids, n=n, samples=samples, seed=seed, families=task_families,
                          per_family=per_family)
    _check_remote_agent(agent, {**(agent_options or {}), **(secret_options or {})})
    out = Path(out)
    with _clear_disk_errors(out):
        out.mkdir(parents=True, exist_ok=True)
        _check_identity(out, identity)
        _write_json(out / RUN_FILE, {**identity, "n": n, "k": k, "samples": samples})
        _write_json(out / TOOLS_FILE, tool_schemas)
        log = TrajectoryLog(out / TRAJECTORIES)
        finished = log.load()
        log.path.touch(exist_ok=True)
        todo = [spec for spec in specs if spec.key not in finished]
        config = RolloutConfig(
            envs=tuple(records_by_env.values()), agent=agent,
            agent_options={**(agent_options or {}), **(secret_options or {})}, max_repeats=max_repeats,
            success_threshold=success_threshold,
        )
        planned = {spec.key for spec in specs}
        kept = [record for key, record in finished.items() if key in planned]
        if kept:  # a re-run resumes: say so, and how much was already done
            click.echo(f"resuming {out}: {len(kept)}/{len(specs)} planned episodes are already done; running the "
                       f"remaining {len(todo)}", err=True)
        bar = _Progress(len(specs), len(kept), sum(record_success(record, success_threshold) for record in kept),
                        progress)
        unavailable: list[str] = []

        def on_result(result: EpisodeResult) -> None:
            if result.trajectory is None:
                unavailable.append(f"{result.spec.task_id}#{result.spec.sample}: {result.unavailable}")
                return
            log.append(result.trajectory)
            finished[result.spec.key] = result.trajectory
            bar.advance(record_success(result.trajectory, success_threshold))

        started = time.perf_counter()
        interrupted = False
        try:
            used_backend = run_rollouts(config, todo, on_result, workers=workers, backend=backend,
                                        ray_address=ray_address)
        except KeyboardInterrupt:
            interrupted = True
            used_backend = "interrupted"
        finally:
            bar.stop()
            log.close()
        elapsed = time.perf_counter() - started
        records = [finished[spec.key] for spec in specs if spec.key in finished]
        summary = summarize(records, reported_ks(k), max_turns=turn_limit, resamples=bootstrap, seed=seed,
                            success_threshold=success_threshold)
        summary = {
            "run": {**identity, "n": n, "k": k, "samples": samples, "workers": workers, "backend": used_backend,
                    "episodes_planned": len(specs), "episodes_run_now": len(todo) - len(unavailable),
                    "seconds": round(elapsed, 3)},
            "complete": len(records) == len(specs),
            "missing_episodes": len(specs) - len(records),
            "k": k,
            **summary,
        }
        _write_json(out / SUMMARY_FILE, summary)
        write_report(out, summary, records, plots=plots)
    if interrupted:
        raise KeyboardInterrupt
    if unavailable:
        summary["unavailable"] = unavailable
    return summary


@click.command("eval")
@click.argument("envs")
@click.option("--agent", default="oracle", show_default=True,
              help="oracle | random | openai:MODEL | hf:PATH")
@click.option("--n", "n", default=0, show_default=True,
              help="Tasks per env (0 = every task), drawn round-robin over the task families.")
@click.option("--per-family", default=0, show_default=True, help="At most this many tasks per family (0 = no cap).")
@click.option("--split", default=None, metavar="NAME|all",
              help="Tasks of this split. Default: the env's test split where it has one, else every task.")
@click.option("--k", "k", default=1, show_default=True, help="pass@k up to this k; samples per task default to it.")
@click.option("--samples", default=None, type=int, help="Samples per task (>= --k; default --k).")
@click.option("--max-turns", default=None, type=int, help="Turns before an episode is cut (default: the env's).")
@click.option("--workers", default=1, show_default=True, help="Episodes played at once.")
@click.option("--backend", type=click.Choice(BACKENDS), default="auto", show_default=True,
              help="auto: serial for 1 worker, threads for openai/hf agents, else processes.")
@click.option("--ray", "ray_address", default=None, metavar="ADDRESS|local", help="Run on Ray actors.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="Run directory.")
@click.option("--tasks", default=None, type=click.Path(dir_okay=False), help="A JSONL task file (to gym.make).")
@click.option("--env-arg", "env_args", multiple=True, help="KEY=VALUE passed to gym.make (repeatable).")
@click.option("--agent-arg", "agent_args", multiple=True,
              help="KEY=VALUE passed to the agent (repeatable), e.g. temperature=0.7 tool_mode=text.")
@click.option("--base-url", default=None, help="OpenAI-compatible server (default: $OPENAI_BASE_URL).")
@click.option("--api-key", default=None, help="API key (default: $OPENAI_API_KEY). Never written to RUN.")
@click.option("--seed", default=0, show_default=True)
@click.option("--max-repeats", default=0, show_default=True,
              help="End an episode once the agent repeats the same action this many times (0 = never).")
@click.option("--success-threshold", default=1.0, show_default=True,
              help="Verifier score (not the shaped reward) counted as a success.")
@click.option("--allow-weak-isolation", is_flag=True,
              help="Let sandboxes use the local backend (weaker isolation) when Docker is not there. On by "
                   "itself for the oracle; recorded in run.json.")
@click.option("--bootstrap", default=1000, show_default=True, help="Bootstrap resamples for the intervals.")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@click.option("--no-plots", is_flag=True, help="Skip the PNG plots.")
@click.option("--perturb", default=None, metavar="KIND[,KIND]",
              help="Also run with these perturbations (agentgym.wrappers) and compare clean and perturbed success.")
@click.option("--perturb-seed", default=0, show_default=True, help="Seed of the perturbations.")
@click.option("--remote", default=None, metavar="URL",
              help="Play every episode on the env served at URL (agentgym serve ENV); recorded in run.json.")
@click.option("--token", default=None, help="The served env's token (default: $AGENTGYM_SERVE_TOKEN). Never written.")
def eval_command(envs: str, agent: str, n: int, per_family: int, split: str | None, k: int, samples: int | None, max_turns: int | None, workers: int,
                 backend: str, ray_address: str | None, out: Path, tasks: str | None, env_args: tuple[str, ...],
                 agent_args: tuple[str, ...], base_url: str | None, api_key: str | None, seed: int,
                 max_repeats: int, success_threshold: float, allow_weak_isolation: bool, bootstrap: int,
                 no_progress: bool, no_plots: bool, perturb: str | None, perturb_seed: int, remote: str | None,
                 token: str | None) -> None:
    """Evaluate an agent on one or more envs (ENV or ENV1,ENV2); write RUN/trajectories.jsonl,
    summary.json, report.md and plots. Re-running the same command resumes.

    \b
    Examples:
      agentgym eval SQL-v0 --agent oracle --n 20 --out runs/oracle
      agentgym eval SQL-v0,FHIR-v0 --agent openai:Qwen/Qwen3-8B --base-url http://localhost:8000/v1 \\
          --n 200 --k 4 --max-turns 10 --workers 16 --out runs/qwen
      agentgym eval SQL-v0 --agent hf:./checkpoint --tasks my_tasks.jsonl --env-arg split=test --out runs/ckpt
      agentgym eval SQL-v0 --remote ws://envhost:8000 --token "$SECRET" --agent oracle --n 20 --out runs/served
    """
    from agentgym.cli import parse_assignments

    options = parse_assignments(agent_args)
    secrets: dict[str, Any] = {}
    if base_url is not None:
        options["base_url"] = base_url
    if api_key is not None:
        secrets["api_key"] = api_key
    env_ids = [item.strip() for item in envs.split(",") if item.strip()]
    if not env_ids:
        raise click.BadParameter("name at least one env, e.g. SQL-v0 or SQL-v0,FHIR-v0")
    base_args = parse_assignments(env_args)
    if remote is not None:
        from agentgym.serving.cli import remote_env_args

        base_args.update(remote_env_args(remote, token, env_ids, agent))
    runs: list[tuple[Path, dict[str, Any]]] = [(Path(out), base_args)]
    if perturb:
        from agentgym.wrappers import PERTURBATIONS

        kinds = [kind.strip() for kind in perturb.split(",") if kind.strip()]
        unknown = [kind for kind in kinds if kind not in PERTURBATIONS]
        if unknown:
            raise click.BadParameter(f"unknown perturbation(s) {unknown}; choose from {', '.join(PERTURBATIONS)}",
                                     param_hint="--perturb")
        runs = [(Path(out) / "clean", base_args),
                (Path(out) / "perturbed", {**base_args, "perturb": kinds, "perturb_seed": perturb_seed})]
        if len(kinds) > 1:  # one run per kind too, so the report can say which perturbation costs what
            runs += [(Path(out) / f"perturbed-{kind}", {**base_args, "perturb": [kind], "perturb_seed": perturb_seed})
                     for kind in kinds]
    summaries = []
    for out_path, run_env_args in runs:
        try:
            summary = evaluate(
                env_ids, agent, out_path, n=n, per_family=per_family, split=split, k=k, samples=samples,
                max_turns=max_turns, workers=workers,
                backend=backend, ray_address=ray_address, tasks=tasks, env_args=run_env_args,
                agent_options=options, secret_options=secrets, seed=seed, max_repeats=max_repeats,
                success_threshold=success_threshold, bootstrap=bootstrap, progress=not no_progress,
                plots=not no_plots, allow_weak_isolation=allow_weak_isolation,
            )
        except KeyboardInterrupt:
            kept = len(TrajectoryLog(out_path / TRAJECTORIES).load())
            click.echo(f"\ninterrupted: {kept} finished episodes are kept in {out_path / TRAJECTORIES}; run the "
                       "same command again to resume.", err=True)
            sys.exit(130)
        _print_summary(summary, out_path)
        summaries.append(summary)
    if perturb:
        from agentgym.report import write_perturbation_report

        comparison = {
            "perturbations": kinds, "perturb_seed": perturb_seed,
            "clean_success_rate": summaries[0]["success_rate"],
            "perturbed_success_rate": summaries[1]["success_rate"],
            "drop": summaries[0]["success_rate"] - summaries[1]["success_rate"],
            "clean_mean_reward": summaries[0]["mean_reward"],
            "perturbed_mean_reward": summaries[1]["mean_reward"],
            "by_kind": {"+".join(kinds): _comparison_row(summaries[1])},
        }
        for kind, kind_summary in zip(kinds if len(kinds) > 1 else [], summaries[2:]):
            comparison["by_kind"][kind] = _comparison_row(kind_summary)
        _write_json(Path(out) / "perturbation.json", comparison)
        report = write_perturbation_report(Path(out), summaries[0], comparison["by_kind"])
        click.echo(f"clean success {comparison['clean_success_rate']:.1%}, perturbed "
                   f"{comparison['perturbed_success_rate']:.1%} ({perturb}); wrote {Path(out) / 'perturbation.json'}"
                   f" and {report}")
    summary = summaries[-1]
    if summary.get("unavailable"):
        problems = summary["unavailable"]
        click.echo(f"{len(problems)} episodes could not be played because the agent's server did not answer "
                   f"(first: {problems[0]}). Run the same command again to retry them.", err=True)
        sys.exit(1)


def _comparison_row(summary: dict[str, Any]) -> dict[str, Any]:
    """What the perturbation report needs of one run: success and mean reward, overall and per family."""
    return {"success_rate": summary["success_rate"], "mean_reward": summary["mean_reward"],
            "by_family": {family: {"success_rate": group["success_rate"], "mean_reward": group["mean_reward"]}
                          for family, group in summary["by_family"].items()}}


def _print_summary(summary: dict[str, Any], out: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{summary['run']['agent']} on {', '.join(summary['run']['envs'])}")
    ks = list(summary["pass_at_k"])
    consistent = [k for k in ks if k != "1"]  # pass^1 is pass@1
    for column in ["group", "tasks", "episodes", "success", "mean reward", *[f"pass@{k}" for k in ks],
                   *[f"pass^{k}" for k in consistent], "turns", "tool errors"]:
        table.add_column(column)

    def number(value: Any, percent: bool = True) -> str:
        if value is None:
            return "-"
        return f"{value:.1%}" if percent else f"{value:.2f}"

    def add(name: str, group: dict[str, Any]) -> None:
        table.add_row(name, str(group["tasks"]), str(group["episodes"]), number(group["success_rate"]),
                      number(group.get("mean_reward"), False),
                      *[number(group["pass_at_k"][k]) for k in ks],
                      *[number(group.get("pass_hat_k", {}).get(k)) for k in consistent],
                      number(group["mean_turns"], False), number(group["tool_error_rate"]))

    add("all", summary)
    for family, group in summary["by_family"].items():
        add(f"  {family}", group)
    Console().print(table)
    labels = summary.get("diagnosis", {}).get("episodes", {})
    if labels:  # the most frequent episode labels (docs/diagnosis.md); the report has them per env and family
        click.echo("diagnosis: " + ", ".join(f"{label} {count}" for label, count in list(labels.items())[:6]))
    infra = summary.get("infra_failed") or {}
    if infra.get("episodes"):  # not the agent's zeros: left out of the table above (docs/diagnosis.md, infra_error)
        click.echo(f"infra-failed: {infra['episodes']} episodes ({infra['share']:.1%}) left out of the metrics "
                   "above: the environment failed while grading them, not the agent; see each record's diagnosis")
    splits = summary["run"].get("splits") or {}
    click.echo("split: " + ", ".join(f"{env_id} {name}" for env_id, name in splits.items())
               + ("" if summary["run"].get("split") not in (None, "auto") else
                  " (the default: the test split where an env has one; choose with --split)"))
    missing = summary["missing_episodes"]
    click.echo(f"wrote {out / SUMMARY_FILE} and {out / 'report.md'}"
               + (f" ({missing} episodes missing; re-run to finish)" if missing else ""))


def export_records(run_dir: Path, out: Path, *, only_success: bool = False) -> int:
    """Write a run's trajectories as a Hugging Face `datasets.DatasetDict` (`save_to_disk`), one dataset per
    split the tasks belong to ("train", "test", ...), and return the number of rows.

    Columns: env_id, task_id, family, difficulty, split, sample, seed, reward, success, turns, messages,
    tools and reward_breakdown. `messages` (role, content, tool_calls with function name and arguments as a
    dict, tool_call_id, name) and `tools` (the env's OpenAI tool schemas) are structured, so a row goes as it
    is to `tokenizer.apply_chat_template(row["messages"], tools=row["tools"])` and to TRL's trainers.
    Rows are sorted by (env_id, task_id, sample), so the same run exports the same dataset.
    """
    try:
        import datasets
    except ImportError:
        raise click.ClickException("export needs `datasets`: pip install 'agentgym[hf]'") from None
    from agentgym.metrics import record_success

    records = sorted(read_records(run_dir), key=lambda item: (item["env_id"], item["task_id"], item["sample"]))
    tools_path = Path(run_dir) / TOOLS_FILE
    tools = _read_json(tools_path) if tools_path.is_file() else {}
    run_path = Path(run_dir) / RUN_FILE
    run = _read_json(run_path) if run_path.is_file() else {}
    threshold = float(run.get("success_threshold", 1.0))
    rows_by_split: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        success = record_success(record, threshold)
        if only_success and not success:
            continue
        rows_by_split.setdefault(str(record["split"]), []).append({
            "env_id": record["env_id"], "task_id": record["task_id"], "family": record["family"],
            "difficulty": record["difficulty"], "split": record["split"], "sample": int(record["sample"]),
            "seed": record["seed"], "reward": float(record["reward"]), "success": success,
            "turns": int(record["turns"]), "messages": [_flat_message(message) for message in record["messages"]],
            "tools": list(tools.get(record["env_id"], [])),
            "reward_breakdown": dict(record["reward_breakdown"]),
        })
    if not rows_by_split:
        raise click.ClickException(f"{run_dir} has no episodes to export"
                                   + (" that succeeded (drop --only-success to export all)" if only_success else ""))
    features = datasets.Features({
        "env_id": datasets.Value("string"), "task_id": datasets.Value("string"),
        "family": datasets.Value("string"), "difficulty": datasets.Value("string"),
        "split": datasets.Value("string"), "sample": datasets.Value("int64"), "seed": datasets.Value("int64"),
        "reward": datasets.Value("float64"), "success": datasets.Value("bool"), "turns": datasets.Value("int64"),
        "messages": datasets.List({
            "role": datasets.Value("string"), "content": datasets.Value("string"),
            "tool_calls": datasets.List({"id": datasets.Value("string"), "type": datasets.Value("string"),
                                         "function": {"name": datasets.Value("string"),
                                                      "arguments": datasets.Json()}}),
            "tool_call_id": datasets.Value("string"), "name": datasets.Value("string"),
        }),
        # Each tool's JSON schema has its own properties: stored as JSON objects, read back as the same dicts
        "tools": datasets.List(datasets.Json()), "reward_breakdown": datasets.Json(),
    })
    dataset = datasets.DatasetDict({split: datasets.Dataset.from_list(rows, features=features)
                                    for split, rows in sorted(rows_by_split.items())})
    dataset.save_to_disk(str(out))
    return sum(len(rows) for rows in rows_by_split.values())


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise RunStoreError(f"{path} is not valid JSON; re-run the eval into a new --out to rebuild it") from None


def _flat_message(message: dict[str, Any]) -> dict[str, Any]:
    calls = [{"id": str(call.get("id", "")), "type": str(call.get("type", "function")),
              "function": {"name": str(call["function"]["name"]),
                           "arguments": _arguments(call["function"].get("arguments"))}}
             for call in message.get("tool_calls") or []]
    return {"role": message["role"], "content": str(message.get("content") or ""), "tool_calls": calls,
            "tool_call_id": message.get("tool_call_id"), "name": message.get("name")}


def _arguments(value: Any) -> Any:
    """A tool call's arguments as a dict (chat templates take dicts); text that is not a JSON object is kept
    as {"raw": text} so nothing the agent sent is lost."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value) if value.strip() else {}
        except json.JSONDecodeError:
            return {"raw": value}
        return parsed if isinstance(parsed, dict) else {"raw": value}
    return {} if value is None else {"raw": str(value)}


@click.command("export")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--format", "export_format", type=click.Choice(["hf"]), default="hf", show_default=True)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
@click.option("--only-success", is_flag=True, help="Keep only successful episodes (for SFT).")
def export_command(run_dir: Path, export_format: str, out: Path, only_success: bool) -> None:
    """Export a run's trajectories as a Hugging Face DatasetDict, one split per task split (load it with
    `datasets.load_from_disk(OUT)`; messages and tools go as they are to `apply_chat_template` and TRL).

    Example: agentgym export runs/qwen --format hf --out datasets/qwen-sql
    """
    with _clear_disk_errors(out):
        count = export_records(run_dir, out, only_success=only_success)
    click.echo(f"wrote {count} trajectories to {out} (datasets.load_from_disk({str(out)!r}))")
