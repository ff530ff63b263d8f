"""The `agentgym` command line. Plugins add verbs through the `agentgym.commands` entry-point group and task
formats through `agentgym.importers`; both are loaded only when used."""

from __future__ import annotations

import contextlib
import difflib
import inspect
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from agentgym.registry import COMMAND_GROUP, IMPORTER_GROUP, entry_points, resolve_callable

console = Console()

# Verbs of the core distribution that live in their own modules (imported only when used).
_BUILTIN_COMMANDS = {
    "sandbox": "agentgym.sandbox.cli:sandbox",
    "eval": "agentgym.evaluate:eval_command",
    "export": "agentgym.evaluate:export_command",
}


class LazyGroup(click.Group):
    """A click group whose extra commands are imported on first use, so `agentgym --help` stays fast."""

    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, entry_point_group: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})
        self.entry_point_group = entry_point_group

    def _lazy_commands(self) -> dict[str, str]:
        found = dict(self.lazy)
        if self.entry_point_group:
            for entry_point in entry_points(self.entry_point_group):
                found.setdefault(entry_point.name, entry_point.value)
        return found

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self._lazy_commands()))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        if command is not None:
            return command
        reference = self._lazy_commands().get(name)
        if reference is None:
            return None
        try:
            loaded = resolve_callable(reference)
        except (ImportError, AttributeError) as error:
            message = f"the command {name!r} ({reference}) could not be loaded: {error}"

            @click.command(name=name, help=f"(unavailable: {error})")
            def unavailable() -> None:
                raise click.ClickException(message + ". Reinstall with `make install`.")

            return unavailable
        if not isinstance(loaded, click.Command):
            raise click.ClickException(f"{reference} is not a click command")
        return loaded


def did_you_mean(name: str, choices: Any) -> str:
    """' (did you mean 'X'?)' for the choice closest to `name`, or '' when none is close."""
    close = difflib.get_close_matches(str(name), [str(choice) for choice in choices], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def known_env(env_id: str) -> Any:
    """The registry record of `env_id`, or a one-line ClickException naming the close id and the known ones."""
    import agentgym  # noqa: F401  (registers every plugin's envs)
    from agentgym.registry import env_record, registered

    try:
        return env_record(env_id)
    except KeyError as error:
        ids = [record.id for record in registered()]
        if not ids:
            raise click.ClickException(str(error.args[0])) from None
        raise click.ClickException(f"unknown environment {env_id!r}{did_you_mean(env_id, ids)}; registered: "
                                   f"{', '.join(sorted(ids))} (see `agentgym list`)") from None


def parse_assignments(pairs: tuple[str, ...]) -> dict[str, Any]:
    """`KEY=VALUE` pairs to a dict; values are JSON when they parse as JSON, else strings."""
    result: dict[str, Any] = {}
    for pair in pairs:
        key, separator, value = pair.partition("=")
        if not separator or not key:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE (e.g. --env-arg split=test)")
        try:
            result[key] = json.loads(value)
        except json.JSONDecodeError:
            result[key] = value
    return result


def make_env(env_id: str, env_args: tuple[str, ...] = ()) -> Any:
    import gymnasium as gym

    known_env(env_id)
    try:
        return gym.make(env_id, **parse_assignments(env_args))
    except KeyError as error:
        raise click.ClickException(f"could not make {env_id}: {error.args[0] if error.args else error}") from None
    except (ValueError, TypeError, FileNotFoundError) as error:
        raise click.ClickException(f"could not make {env_id}: {error}") from None


@click.group(cls=LazyGroup, lazy=_BUILTIN_COMMANDS, entry_point_group=COMMAND_GROUP,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="agentgym")
def main() -> None:
    """agentgym: verifiable tool-use environments for training LLM agents with RL.

    \b
    Examples:
      agentgym list
      agentgym info SQL-v0
      agentgym play SQL-v0 --seed 3
      agentgym check SQL-v0
      agentgym eval SQL-v0 --agent oracle --n 20 --out runs/oracle
    """


@main.command("list")
@click.argument("env_ids", nargs=-1, metavar="[ENV_ID]...")
@click.option("--count/--no-count", default=None,
              help="--count: count every env's tasks, building what is not cached yet (minutes on a fresh "
                   "machine); --no-count: no counts. Default: counts of envs whose data is already cached.")
def list_command(env_ids: tuple[str, ...], count: bool | None) -> None:
    """List every registered env (or the ENV_IDs given), its task count and the distribution that registered it.

    \b
    An env whose data (databases, task sets, stores) is not built yet shows
    "not built" instead of a count: `agentgym list --count` builds it.
    Examples:
      agentgym list
      agentgym list --count SQL-v0
    """
    from agentgym.cache import NotBuilt, no_builds
    from agentgym.registry import plugin_failures, registered

    records = [known_env(env_id) for env_id in env_ids] if env_ids else registered()
    table = Table(title="agentgym environments")
    for column in ("env", "tasks", "families", "distribution", "description"):
        table.add_column(column)
    unbuilt = False
    for record in records:
        tasks = families = "-"
        if count is not False:
            try:
                with contextlib.nullcontext() if count else no_builds():
                    env = make_env(record.id)
                task_set = env.unwrapped.task_set
                tasks, families = str(len(task_set)), str(len(task_set.families()))
                env.close()
            except NotBuilt:
                tasks, unbuilt = "not built", True
            except Exception as error:  # noqa: BLE001 - one broken env must not hide the others
                tasks = f"error: {getattr(error, 'message', error)}"[:80]
        table.add_row(record.id, tasks, families, record.distribution, record.description)
    console.print(table)
    if unbuilt:
        console.print("not built: its data is made on first use; `agentgym list --count` builds it now and "
                      "counts (minutes on a fresh machine).", highlight=False)
    failures = plugin_failures()
    if failures:
        console.print("[bold red]Plugins that failed to load:[/]")
        for failure in failures:
            console.print(f"  {failure.name} ({failure.distribution}, {failure.value}): {failure.error}")


@main.command()
@click.argument("env_id")
@click.option("--env-arg", "env_args", multiple=True, help="KEY=VALUE passed to gym.make (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def info(env_id: str, env_args: tuple[str, ...], as_json: bool) -> None:
    """Show an env's tools (with JSON schemas), task families and splits.

    Example: agentgym info SQL-v0
    """
    from agentgym.registry import env_record

    env = make_env(env_id, env_args)
    inner = env.unwrapped
    task_set = inner.task_set
    record = env_record(env_id)
    summary = {
        "id": record.id, "distribution": record.distribution, "tasks": len(task_set),
        "families": task_set.counts("family"), "splits": task_set.counts("split"),
        "difficulty": task_set.counts("difficulty"), "max_turns": inner.max_turns, "tools": inner.tool_schemas,
    }
    env.close()
    if as_json:
        click.echo(json.dumps(summary, indent=1))
        return
    console.print(f"[bold]{record.id}[/] from {record.distribution}: {len(task_set)} tasks, "
                  f"max {inner.max_turns} turns")
    for key in ("splits", "families", "difficulty"):
        console.print(f"[bold]{key}:[/] " + ", ".join(f"{name} ({n})" for name, n in summary[key].items()),
                      soft_wrap=True)
    console.print("[bold]tools[/] (each description whole, as a model receives it; then its parameters):")
    for schema in summary["tools"]:
        function = schema["function"]
        console.print(f"  [cyan]{function['name']}[/]")
        # Printed as plain text: rich markup would read "(Cel, [degF])" as a tag and drop it.
        description = str(function.get("description") or "").strip()
        click.echo("\n".join("    " + line if line.strip() else "" for line in description.splitlines()))
        click.echo("    " + json.dumps(function["parameters"]))  # one line, never wrapped: copyable JSON


@main.command()
@click.argument("env_id")
@click.option("--seed", default=0, show_default=True)
@click.option("--task-id", default=None, help="Play this task instead of a seeded random one.")
@click.option("--env-arg", "env_args", multiple=True, help="KEY=VALUE passed to gym.make (repeatable).")
def play(env_id: str, seed: int, task_id: str | None, env_args: tuple[str, ...]) -> None:
    """Play an env yourself: type tool calls, read observations, rewards and the reward breakdown.

    \b
    Type a call as JSON ({"name": "list_tables", "arguments": {}}), as
    NAME key=value ... (describe_table table=patients; shell quoting:
    run_shell command='ls -la'), or NAME VALUE for a one-argument tool
    (describe_table patients). Commands: :help, :tools, :quit. Mistakes
    caught before the call cost no turn; the gold answer and solution are
    shown when the episode ends.
    Example: agentgym play SQL-v0 --seed 3
    """
    from agentgym.play import run_play

    run_play(env_id, seed, task_id, env_args)


@main.command()
@click.argument("env_id")
@click.option("--samples", default=20, show_default=True, help="Tasks the oracle must solve (0 = all).")
@click.option("--seed", default=0, show_default=True)
@click.option("--env-arg", "env_args", multiple=True, help="KEY=VALUE passed to gym.make (repeatable).")
def check(env_id: str, samples: int, seed: int, env_args: tuple[str, ...]) -> None:
    """Run Gymnasium's check_env plus agentgym's invariants; exit 1 if any fails.

    Example: agentgym check SQL-v0 --samples 50
    """
    from agentgym.check import run_checks

    make_env(env_id, env_args).close()  # a clear error for an unknown env before the checks start
    results = run_checks(env_id, samples=samples, seed=seed, env_kwargs=parse_assignments(env_args))
    for result in results:
        mark = "[green]PASS[/]" if result.ok else "[red]FAIL[/]"
        console.print(f"{mark} {result.name}: {result.detail}", highlight=False)
    if not all(result.ok for result in results):
        sys.exit(1)


@main.group(cls=LazyGroup)
def tasks() -> None:
    """Generate and import task sets (JSONL)."""


@tasks.command("generate")
@click.argument("env_id")
@click.option("--seed", default=0, show_default=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--store", default=None, help="Data to build tasks over (e.g. a FHIR store directory).")
@click.option("--option", "options", multiple=True, help="KEY=VALUE passed to the generator (repeatable).")
def tasks_generate(env_id: str, seed: int, out: Path, store: str | None, options: tuple[str, ...]) -> None:
    """Generate an env's tasks deterministically from a seed.

    Example: agentgym tasks generate SQL-v0 --seed 0 --out sql.jsonl
    """
    from agentgym.tasks import TaskSet, save_tasks

    record = known_env(env_id)
    if record.generator is None:
        raise click.ClickException(f"{env_id} does not generate tasks (its plugin registered no generator)")
    arguments = parse_assignments(options)
    if store is not None:
        arguments["store"] = store
    generator = resolve_callable(record.generator)
    _check_generator_options(env_id, generator, arguments)
    try:
        generated = generator(seed=seed, **arguments)
    except (ValueError, TypeError, FileNotFoundError) as error:
        raise click.ClickException(f"could not generate {env_id} tasks with {arguments}: {error}") from None
    written = save_tasks(generated, out)
    task_set = TaskSet.from_file(out)
    console.print(f"wrote {written} tasks to {out}")
    for family, n in task_set.counts("family").items():
        console.print(f"  {family}: {n}")


def _check_generator_options(env_id: str, generator: Any, arguments: dict[str, Any]) -> None:
    """Refuse --option keys the generator does not take (unless it takes **options), naming the close one."""
    try:
        parameters = inspect.signature(generator).parameters
    except (TypeError, ValueError):
        return
    if any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters.values()):
        return
    accepted = [name for name in parameters if name != "seed"]
    for name in arguments:
        if name not in parameters:
            flag = "--store" if name == "store" else f"--option {name}"
            raise click.BadParameter(
                f"{env_id}'s generator takes no {flag!r}{did_you_mean(name, accepted)}; it takes: "
                + (", ".join(accepted) or "no options"), param_hint="--option")


tasks.add_command(LazyGroup(name="import", entry_point_group=IMPORTER_GROUP,
                            help="Import a public benchmark's files as a task set: agentgym tasks import FORMAT SRC "
                                 "--out T.jsonl"))


@main.command("new")
@click.argument("name")
@click.option("--dir", "directory", type=click.Path(path_type=Path), default=None,
              help="Where to write the distribution (default: ./agentgym-NAME).")
def new_command(name: str, directory: Path | None) -> None:
    """Write a new env's plugin distribution, a small working domain to grow into yours.

    \b
    Example:
      agentgym new pharmacy && pip install -e agentgym-pharmacy
      agentgym check Pharmacy-v0 && python -m pytest agentgym-pharmacy/tests
    Then follow docs/new-env.md.
    """
    from agentgym.registry import registered
    from agentgym.scaffold import Names, render

    try:
        names = Names.of(name)
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    import agentgym  # noqa: F401  (registers the installed envs, to refuse a taken id)

    taken = {record.id.lower(): record.id for record in registered()}
    if names.env_id.lower() in taken:
        raise click.ClickException(f"{taken[names.env_id.lower()]} is already registered (see `agentgym list`); "
                                   "choose another name")
    target = directory if directory is not None else Path(names.dist)
    try:
        written = render(names, target)
    except (FileExistsError, OSError) as error:
        raise click.ClickException(str(error)) from None
    console.print(f"wrote {len(written)} files to {target}/ ({names.dist}, package {names.package}, "
                  f"env {names.env_id}). Next:", highlight=False)
    console.print(f"  pip install -e {target}\n  agentgym check {names.env_id}\n  python -m pytest {target}/tests\n"
                  "  then docs/new-env.md: your data, tools, tasks, verifier and attacks", highlight=False)


@main.command()
@click.option("--episodes", default=20, show_default=True, help="Episodes per agent and env.")
@click.option("--seed", default=0, show_default=True)
def demo(episodes: int, seed: int) -> None:
    """Run the oracle and random agents on every registered env and print a table.

    Example: agentgym demo --episodes 20
    """
    import gymnasium as gym

    from agentgym.agents import OracleAgent, RandomAgent
    from agentgym.registry import plugin_failures, registered
    from agentgym.rollout import run_episode

    # The demo's two agents are harmless to run with weak isolation: the oracle replays the tasks' own trusted
    # gold solutions and the random agent sends garbage, so where Docker is missing the local sandbox may run
    # them (model agents never get this; see `agentgym eval --allow-weak-isolation`).
    os.environ.setdefault("AGENTGYM_ALLOW_WEAK_ISOLATION", "1")
    table = Table(title="agentgym demo")
    for column in ("env", "tasks", "oracle success", "random success"):
        table.add_column(column)
    failed = False
    envs = registered()
    for number, record in enumerate(envs, start=1):
        # One line per env as it starts, so the table's minute of work is never silent.
        console.print(f"demo {number}/{len(envs)}: {record.id}: oracle and random agents, {episodes} episodes each",
                      highlight=False)
        try:
            env = gym.make(record.id)
        except Exception as error:  # noqa: BLE001 - show the broken env in the table and go on with the others
            table.add_row(record.id, f"error: {error}"[:60], "-", "-")
            failed = True
            continue
        count = len(env.unwrapped.task_set)  # type: ignore[attr-defined]
        rates = []
        for name, agent in (("oracle", OracleAgent()), ("random", RandomAgent(seed=seed))):
            started = time.perf_counter()
            wins = sum(run_episode(env, agent, seed=seed + index).success for index in range(episodes))
            rates.append(wins / episodes)
            console.print(f"  {name}: {wins}/{episodes} solved ({time.perf_counter() - started:.1f} s)",
                          highlight=False)
        env.close()
        table.add_row(record.id, str(count), f"{rates[0]:.2f}", f"{rates[1]:.2f}")
        failed |= rates[0] < 1.0
    console.print(table)
    for failure in plugin_failures():
        console.print(f"[red]plugin {failure.name} failed to load: {failure.error}[/]")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
