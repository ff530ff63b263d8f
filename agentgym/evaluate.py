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
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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
             "success_threshold")


class RunStoreError(click.ClickException):
    """A run directory that cannot be used as asked (different settings, unreadable file)."""


def episode_seed(seed: int, env_index: int, position: int, sample: int) -> int:
    """The reset seed of one episode. Independent of --n and --k, so growing a run keeps earlier episodes."""
    return int(np.random.SeedSequence([seed, env_index, position, sample]).generate_state(1)[0])


def plan_episodes(task_ids: dict[str, list[str]], *, n: int, samples: int, seed: int) -> list[EpisodeSpec]:
    """The episodes of a run: for each env, `n` tasks (all when n <= 0 or n >= the task count; otherwise a
    seeded choice whose first n entries stay the same as n grows) times `samples` samples each. Ordered
    sample-major, so an interrupted run has covered many tasks once rather than few tasks many times."""
    chosen: list[tuple[int, str, int, str]] = []
    for env_index, (env_id, ids) in enumerate(task_ids.items()):
        order = np.random.default_rng(seed + env_index).permutation(len(ids))
        if 0 < n < len(ids):
            order = order[:n]
        else:
            order = np.arange(len(ids))
        chosen.extend((env_index, env_id, position, ids[int(index)]) for position, index in enumerate(order))
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


def evaluate(
    env_ids: Sequence[str],
    agent: str,
    out: Path,
    *,
    n: int = 0,
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

    `secret_options` reach the agent but are never written to the run directory (API keys).
    `allow_weak_isolation` lets sandboxes fall back to the local backend (weaker isolation) when Docker is not
    there, by setting `AGENTGYM_ALLOW_WEAK_ISOLATION=1` for this run; it is on by itself for a privileged agent
    (the oracle replays trusted gold solutions), and what was used is recorded in `run.json`.
    Raises `click.ClickException` for bad settings and `KeyboardInterrupt` when interrupted (finished
    episodes are kept). See `agentgym eval --help` for the meaning of each argument.
    """
    from agentgym.agents.base import agent_is_privileged

    try:
        weak = allow_weak_isolation or agent_is_privileged(agent) or os.environ.get(WEAK_ISOLATION_ENV) == "1"
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--agent") from None
    with weak_isolation_allowed(weak):
        return _run_evaluation(
            env_ids, agent, out, n=n, k=k, samples=samples, max_turns=max_turns, workers=workers, backend=backend,
            ray_address=ray_address, tasks=tasks, env_args=env_args, agent_options=agent_options,
            secret_options=secret_options, seed=seed, max_repeats=max_repeats, success_threshold=success_threshold,
            bootstrap=bootstrap, progress=progress, plots=plots, allow_weak_isolation=weak,
        )


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


def _run_evaluation(
    env_ids: Sequence[str],
    agent: str,
    out: Path,
    *,
    n: int = 0,
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
    allow_weak_isolation: bool,
) -> dict[str, Any]:
    """The body of `evaluate`, run with the weak-isolation setting already in the environment."""
    import agentgym  # noqa: F401  (registers every plugin's envs)
    from agentgym.metrics import record_success, summarize
    from agentgym.registry import env_record
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
    tool_schemas: dict[str, Any] = {}
    turn_limit = 0
    for raw_id in env_ids:
        try:
            record = env_record(raw_id)
        except KeyError as error:
            raise click.ClickException(str(error.args[0])) from None
        env = _make_env_for_listing(record.id, env_kwargs)
        inner = env.unwrapped
        task_ids[record.id] = [task.id for task in inner.task_set]
        tool_schemas[record.id] = inner.tool_schemas
        turn_limit = max(turn_limit, int(inner.max_turns))
        env.close()
        records_by_env[record.id] = EnvSpec(record.id, record.entry_point, record.kwargs, env_kwargs)
    identity = {
        "envs": list(records_by_env), "agent": agent, "agent_options": dict(agent_options or {}), "seed": seed,
        "tasks": env_kwargs.get("tasks"), "env_args": dict(env_args or {}), "max_turns": max_turns,
        "max_repeats": max_repeats, "success_threshold": success_threshold,
        "allow_weak_isolation": allow_weak_isolation,
    }
    specs = plan_episodes(task_ids, n=n, samples=samples, seed=seed)
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
@click.option("--n", "n", default=0, show_default=True, help="Tasks per env (0 = every task).")
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
def eval_command(envs: str, agent: str, n: int, k: int, samples: int | None, max_turns: int | None, workers: int,
                 backend: str, ray_address: str | None, out: Path, tasks: str | None, env_args: tuple[str, ...],
                 agent_args: tuple[str, ...], base_url: str | None, api_key: str | None, seed: int,
                 max_repeats: int, success_threshold: float, allow_weak_isolation: bool, bootstrap: int,
                 no_progress: bool, no_plots: bool, perturb: str | None, perturb_seed: int) -> None:
    """Evaluate an agent on one or more envs (ENV or ENV1,ENV2); write RUN/trajectories.jsonl,
    summary.json, report.md and plots. Re-running the same command resumes.

    \b
    Examples:
      agentgym eval SQL-v0 --agent oracle --n 20 --out runs/oracle
      agentgym eval SQL-v0,FHIR-v0 --agent openai:Qwen/Qwen3-8B --base-url http://localhost:8000/v1 \\
          --n 200 --k 4 --max-turns 10 --workers 16 --out runs/qwen
      agentgym eval SQL-v0 --agent hf:./checkpoint --tasks my_tasks.jsonl --env-arg split=test --out runs/ckpt
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
    summaries = []
    for out_path, run_env_args in runs:
        try:
            summary = evaluate(
                env_ids, agent, out_path, n=n, k=k, samples=samples, max_turns=max_turns, workers=workers,
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
        comparison = {
            "perturbations": perturb.split(","), "perturb_seed": perturb_seed,
            "clean_success_rate": summaries[0]["success_rate"],
            "perturbed_success_rate": summaries[1]["success_rate"],
            "drop": summaries[0]["success_rate"] - summaries[1]["success_rate"],
        }
        _write_json(Path(out) / "perturbation.json", comparison)
        click.echo(f"clean success {comparison['clean_success_rate']:.1%}, perturbed "
                   f"{comparison['perturbed_success_rate']:.1%} ({perturb}); wrote {Path(out) / 'perturbation.json'}")
    summary = summaries[-1]
    if summary.get("unavailable"):
        problems = summary["unavailable"]
        click.echo(f"{len(problems)} episodes could not be played because the agent's server did not answer "
                   f"(first: {problems[0]}). Run the same command again to retry them.", err=True)
        sys.exit(1)


def _print_summary(summary: dict[str, Any], out: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{summary['run']['agent']} on {', '.join(summary['run']['envs'])}")
    ks = list(summary["pass_at_k"])
    for column in ["group", "tasks", "episodes", "success", *[f"pass@{k}" for k in ks], "turns", "tool errors"]:
        table.add_column(column)

    def number(value: Any, percent: bool = True) -> str:
        if value is None:
            return "-"
        return f"{value:.1%}" if percent else f"{value:.2f}"

    def add(name: str, group: dict[str, Any]) -> None:
        table.add_row(name, str(group["tasks"]), str(group["episodes"]), number(group["success_rate"]),
                      *[number(group["pass_at_k"][k]) for k in ks], number(group["mean_turns"], False),
                      number(group["tool_error_rate"]))

    add("all", summary)
    for family, group in summary["by_family"].items():
        add(f"  {family}", group)
    Console().print(table)
    missing = summary["missing_episodes"]
    click.echo(f"wrote {out / SUMMARY_FILE} and {out / 'report.md'}"
               + (f" ({missing} episodes missing; re-run to finish)" if missing else ""))


def export_records(run_dir: Path, out: Path, *, only_success: bool = False) -> int:
    """Write a run's trajectories as a Hugging Face `datasets` dataset (`save_to_disk`) and return its size.

    Columns: env_id, task_id, family, difficulty, split, sample, seed, reward, success, turns, messages (role,
    content, tool_calls, tool_call_id, name), tools (JSON schemas as a JSON string), reward_breakdown (JSON
    string). Rows are sorted by (env_id, task_id, sample), so the same run exports the same dataset.
    """
    try:
        import datasets
    except ImportError:
        raise click.ClickException("export needs `datasets`: pip install 'agentgym[hf]'") from None
    from agentgym.metrics import record_success

    records = sorted(read_records(run_dir), key=lambda item: (item["env_id"], item["task_id"], item["sample"]))
    tools_path = Path(run_dir) / TOOLS_FILE
    tools = json.loads(tools_path.read_text(encoding="utf-8")) if tools_path.is_file() else {}
    run_path = Path(run_dir) / RUN_FILE
    run = json.loads(run_path.read_text(encoding="utf-8")) if run_path.is_file() else {}
    threshold = float(run.get("success_threshold", 1.0))
    rows = []
    for record in records:
        success = record_success(record, threshold)
        if only_success and not success:
            continue
        rows.append({
            "env_id": record["env_id"], "task_id": record["task_id"], "family": record["family"],
            "difficulty": record["difficulty"], "split": record["split"], "sample": int(record["sample"]),
            "seed": record["seed"], "reward": float(record["reward"]), "success": success,
            "turns": int(record["turns"]), "messages": [_flat_message(message) for message in record["messages"]],
            "tools": json.dumps(tools.get(record["env_id"], []), ensure_ascii=False),
            "reward_breakdown": json.dumps(record["reward_breakdown"], ensure_ascii=False),
        })
    features = datasets.Features({
        "env_id": datasets.Value("string"), "task_id": datasets.Value("string"),
        "family": datasets.Value("string"), "difficulty": datasets.Value("string"),
        "split": datasets.Value("string"), "sample": datasets.Value("int64"), "seed": datasets.Value("int64"),
        "reward": datasets.Value("float64"), "success": datasets.Value("bool"), "turns": datasets.Value("int64"),
        "messages": datasets.List({
            "role": datasets.Value("string"), "content": datasets.Value("string"),
            "tool_calls": datasets.List({"id": datasets.Value("string"), "type": datasets.Value("string"),
                                         "function": {"name": datasets.Value("string"),
                                                      "arguments": datasets.Value("string")}}),
            "tool_call_id": datasets.Value("string"), "name": datasets.Value("string"),
        }),
        "tools": datasets.Value("string"), "reward_breakdown": datasets.Value("string"),
    })
    dataset = datasets.Dataset.from_list(rows, features=features)
    dataset.save_to_disk(str(out))
    return len(rows)


def _flat_message(message: dict[str, Any]) -> dict[str, Any]:
    calls = [{"id": str(call.get("id", "")), "type": str(call.get("type", "function")),
              "function": {"name": str(call["function"]["name"]),
                           "arguments": str(call["function"].get("arguments", ""))}}
             for call in message.get("tool_calls") or []]
    return {"role": message["role"], "content": str(message.get("content") or ""), "tool_calls": calls,
            "tool_call_id": message.get("tool_call_id"), "name": message.get("name")}


@click.command("export")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--format", "export_format", type=click.Choice(["hf"]), default="hf", show_default=True)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
@click.option("--only-success", is_flag=True, help="Keep only successful episodes (for SFT).")
def export_command(run_dir: Path, export_format: str, out: Path, only_success: bool) -> None:
    """Export a run's trajectories as a Hugging Face dataset (load it with `datasets.load_from_disk(OUT)`).

    Example: agentgym export runs/qwen --format hf --out datasets/qwen-sql
    """
    with _clear_disk_errors(out):
        count = export_records(run_dir, out, only_success=only_success)
    click.echo(f"wrote {count} trajectories to {out} (datasets.load_from_disk({str(out)!r}))")
