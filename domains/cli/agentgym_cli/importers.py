"""Importers: InterCode-Bash and Terminal-Bench task files become CLI-v0 task sets.

Both run each task's gold solution twice, each time on a fresh copy of its file tree in a sandbox, exactly as for
generated tasks (`tasks.base.realize`), so the oracle scores 1.0 on every imported task; a task whose gold
solution fails, or whose two runs disagree (answer, final state or tests), is reported and left out. An
InterCode gold that runs a command in the background (`... | tee out &`) is left out before it runs: whether
its output exists when the task is graded is a race. The file tree travels inside each task (gzipped tar in `metadata`), so the
JSONL file is all a user needs.

Paths: both benchmarks assume an absolute directory (`/testbed`, `/app`) that a read-only sandbox root cannot
have. The tree is placed in the work dir instead and the absolute prefix is rewritten to a relative path in the
prompt, the gold solution and the tests (`/testbed/x` -> `testbed/x`, `/app/x` -> `x`).

Real files: text may start with a UTF-8 byte-order mark or be latin-1 (read as such, with a warning); a bad
record or task folder is skipped with its reason, never ends the import; the end of an import counts what was
skipped per reason, with examples.
"""

from __future__ import annotations

import json
import logging
import re
import tarfile
from pathlib import Path
from typing import Any

import click

from agentgym import Task
from agentgym_cli.tasks.base import GenerationError


class UnstableGold(GenerationError):
    """A gold solution whose runs on fresh copies of the tree gave different results."""

logger = logging.getLogger(__name__)
SKIP_EXAMPLES = 5  # ids shown per reason in the summary of what was skipped

TB_SPECIAL = {"task.yaml", "task.yml", "solution.sh", "solution.yaml", "run-tests.sh", "tests", "Dockerfile",
              "docker-compose.yaml", "docker-compose.yml"}


def read_text(path: Path) -> str:
    """A text file's content: UTF-8 (a byte-order mark dropped), else latin-1, which every byte decodes."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        click.echo(f"warning: {path}: not UTF-8, read as latin-1", err=True)
        return data.decode("latin-1")


def report_skipped(skipped: list[tuple[str, str, str]]) -> None:
    """Print each skipped (id, reason, detail), then how many were skipped per reason."""
    by_reason: dict[str, list[str]] = {}
    for task_id, reason, detail in skipped:
        click.echo(f"skipped {task_id}: {reason}{': ' + detail[:300] if detail else ''}", err=True)
        by_reason.setdefault(reason, []).append(task_id)
    if skipped:
        click.echo(f"skipped {len(skipped)} tasks, by reason:", err=True)
    for reason, ids in sorted(by_reason.items(), key=lambda item: -len(item[1])):
        more = f" and {len(ids) - SKIP_EXAMPLES} more" if len(ids) > SKIP_EXAMPLES else ""
        click.echo(f"  {len(ids)} x {reason} (e.g. {', '.join(ids[:SKIP_EXAMPLES])}{more})", err=True)


def tree_entries(source: Path) -> list[Any]:
    """The entries of a file tree given as a folder or a (compressed) tar archive."""
    from agentgym_cli.data.fixtures import Entry

    entries = []
    if source.is_dir():
        for path in sorted(source.rglob("*")):
            relative = path.relative_to(source).as_posix()
            mode = path.lstat().st_mode & 0o7777
            if path.is_symlink():
                entries.append(Entry(relative, kind="symlink", target=str(path.readlink())))
            elif path.is_dir():
                entries.append(Entry(relative, kind="dir", mode=mode))
            else:
                entries.append(Entry(relative, data=path.read_bytes(), mode=mode, mtime=int(path.stat().st_mtime)))
        return entries
    with tarfile.open(source) as archive:
        for member in archive.getmembers():
            name = member.name[2:] if member.name.startswith("./") else member.name.lstrip("/")
            if name in ("", "."):
                continue
            if member.issym():
                entries.append(Entry(name, kind="symlink", target=member.linkname))
            elif member.isdir():
                entries.append(Entry(name, kind="dir", mode=member.mode & 0o7777, mtime=int(member.mtime)))
            elif member.isfile():
                handle = archive.extractfile(member)
                data = handle.read() if handle is not None else b""
                entries.append(Entry(name, data=data, mode=member.mode & 0o7777, mtime=int(member.mtime)))
    return entries


def rewrite_root(text: str, root: str, replacement: str) -> str:
    """Replace the absolute directory `root` with a relative path in `text` (`/app/x` -> `x` for `.`)."""
    pattern = re.compile(r"(?<![\w.\-/])" + re.escape(root.rstrip("/")) + r"(?=/|\b|$)(/)?")
    if replacement in (".", ""):
        return pattern.sub(lambda match: "" if match.group(1) else ".", text)
    return pattern.sub(lambda match: replacement + (match.group(1) or ""), text)


GOLD_RUNS = 2  # every gold solution runs this often; a task whose runs disagree is left out
UNSTABLE_REASON = "the gold solution's result differs between two runs (no fixed answer to grade)"
BACKGROUND_REASON = "the gold runs a command in the background (&): whether its result exists at grading is a race"


def _realize_all(items: list[tuple[str, Any]], fixture: Any, backend: str, split: str, strict: bool,
                 skipped: list[tuple[str, str, str]]) -> list[Task]:
    from agentgym.sandbox import SandboxError
    from agentgym_cli.env import encode_fixture
    from agentgym_cli.tasks.base import realize
    from agentgym_cli.workspace import Workspace

    metadata = encode_fixture(fixture.tar)
    tasks = []
    with click.progressbar(items, label="running gold solutions (twice each)") as progress:
        for task_id, spec in progress:
            runs: list[Task] = []
            try:
                for _ in range(GOLD_RUNS):  # each on a fresh copy of the tree
                    workspace = Workspace.open(fixture, backend=backend, allow_weak_isolation=True)
                    try:
                        runs.append(realize(spec, fixture, workspace, task_id=task_id, split=split,
                                            metadata={**metadata, "source": spec.template}))
                    finally:
                        workspace.close()
                differs = next((run for run in runs[1:] if _outcome(run) != _outcome(runs[0])), None)
                if differs is not None:
                    raise UnstableGold(f"first run: {_outcome(runs[0])!r:.150}; another: {_outcome(differs)!r:.150}")
                tasks.append(runs[0])
            except (GenerationError, SandboxError) as error:
                if strict:
                    raise click.ClickException(f"{task_id}: {error}") from None
                reason = ("the gold solution fails in the sandbox" if isinstance(error, SandboxError)
                          else UNSTABLE_REASON if isinstance(error, UnstableGold)
                          else "the gold solution does not reproduce")
                skipped.append((task_id, reason, str(error)))
    return tasks


def _outcome(task: Task) -> tuple[Any, str]:
    """What grading a task compares with: its answer and the verifier's expectations (state, tests)."""
    return task.answer, json.dumps(task.verifier.params, sort_keys=True, default=str)


# A `&` that sends a command to the background: not `&&`, `|&`, `>&`, `&>` (`2>&1`, `&>file`).
_BACKGROUND = re.compile(r"(?<![&|>])&(?![&>])")
_QUOTED = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"")


def runs_in_background(command: str) -> bool:
    """Whether a shell command sends part of itself to the background (`... | tee out &`): what it writes or
    prints may or may not be there when the task is graded, so its result is a race."""
    return _BACKGROUND.search(_QUOTED.sub("''", command.replace("\\&", ""))) is not None


def import_intercode(source: Path, tree: Path, *, root: str = "/testbed", backend: str = "auto",
                     split: str = "test", strict: bool = False) -> list[Task]:
    """InterCode-Bash `[{query, gold}]` JSON plus the file tree it assumes -> tasks (answer: the gold's stdout).

    Args:
        source: The JSON file (a list of objects with `query` and `gold`).
        tree: The file tree: a folder or tar archive whose top level is the file system root the tasks see.
        root: The absolute folder the gold commands use; rewritten to a relative path.
        backend: Sandbox backend that runs the gold commands.
        split: Split given to every task.
        strict: Fail on the first task whose gold command cannot run, instead of skipping it.
    """
    from agentgym_cli.data.fixtures import Fixture, pack
    from agentgym_cli.tasks.base import TaskSpec, shell

    try:
        records = json.loads(read_text(source))
    except json.JSONDecodeError as error:
        raise click.ClickException(f"{source}: not valid JSON ({error})") from None
    if not isinstance(records, list):
        raise click.ClickException(f"{source}: expected a JSON list of objects with 'query' and 'gold' "
                                   "(InterCode-Bash format)")
    entries = tree_entries(tree)
    fixture = Fixture(name="intercode", entries=entries, tar=pack(entries))
    relative = root.strip("/")
    items, skipped = [], []
    for number, record in enumerate(records):
        task_id = f"intercode-{source.stem}-{number:04d}"
        if not (isinstance(record, dict) and isinstance(record.get("query"), str)
                and isinstance(record.get("gold"), str) and record["query"].strip() and record["gold"].strip()):
            skipped.append((task_id, "not an object with non-empty text 'query' and 'gold'", ""))
            continue
        gold = rewrite_root(str(record["gold"]), root, relative)
        if runs_in_background(gold):
            skipped.append((task_id, BACKGROUND_REASON, gold))
            continue
        query = rewrite_root(str(record["query"]), root, relative)
        prompt = (f"{query}\n\n(The `{relative}/` folder is in your working directory; where the task says "
                  f"`{root}`, use `{relative}`. The output of your last command is your answer, or submit it.)")
        spec = TaskSpec("intercode_bash", f"intercode:{source.name}:{number}", prompt, [shell(gold)],
                        answer_kind="output", allow_failure=True, ordered=output_is_ordered(gold))
        items.append((task_id, spec))
    tasks = _realize_all(items, fixture, backend, split, strict, skipped)
    report_skipped(skipped)
    return tasks


def _tb_difficulty(folder: Path) -> str:
    """The task.yaml's `difficulty` (Terminal-Bench: easy/medium/hard; agentgym.tasks maps other labels and
    keeps them in metadata), or "medium" when it gives none. Unreadable YAML is _tb_instruction's error."""
    import yaml

    for name in ("task.yaml", "task.yml"):
        path = folder / name
        if path.exists():
            try:
                data = yaml.safe_load(read_text(path)) or {}
            except yaml.YAMLError:
                return "medium"
            label = data.get("difficulty") if isinstance(data, dict) else None
            return label.strip() if isinstance(label, str) and label.strip() else "medium"
    return "medium"


def _tb_instruction(folder: Path) -> str:
    import yaml

    for name in ("task.yaml", "task.yml"):
        path = folder / name
        if path.exists():
            try:
                data = yaml.safe_load(read_text(path)) or {}
            except yaml.YAMLError as error:
                raise click.ClickException(f"{path}: not valid YAML ({str(error).splitlines()[0]})") from None
            if not isinstance(data, dict):
                raise click.ClickException(f"{path}: expected a mapping with an 'instruction' field")
            if isinstance(data.get("instruction"), str):
                return str(data["instruction"]).strip()
            for item in data.get("descriptions") or []:
                if isinstance(item, dict) and isinstance(item.get("description"), str):
                    return str(item["description"]).strip()
            raise click.ClickException(f"{path}: no 'instruction' (or descriptions[].description) field")
    instruction = folder / "instruction.md"
    if instruction.exists():
        return read_text(instruction).strip()
    raise click.ClickException(f"{folder}: no task.yaml or instruction.md; is this a Terminal-Bench task folder?")


_PY_RUNNER = r'''
import importlib.util, inspect, sys, traceback
failed = 0
for path in sys.argv[1:]:
    spec = importlib.util.spec_from_file_location("tb_test_" + str(abs(hash(path))), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, function in sorted(vars(module).items()):
        if name.startswith("test") and inspect.isfunction(function):
            try:
                function()
            except Exception:
                failed += 1
                print("FAILED", name); traceback.print_exc()
sys.exit(1 if failed else 0)
'''


def output_is_ordered(command: str) -> bool:
    """Whether the order of `command`'s output lines means something: not when it lists directories without
    sorting (`find`, `ls -U`, globs fed to a loop), whose order is the file system's and differs between the
    Docker and local backends; then an InterCode output answer is compared as a multiset of lines."""
    unordered_source = re.search(r"\bfind\b|\bls\s+-\w*[Uf]|\blocate\b|\bdu\b", command) is not None
    return not unordered_source or re.search(r"\bsort\b", command) is not None


def _tb_tests(folder: Path, root: str) -> list[dict[str, str]]:
    """Hidden test scripts from a task's tests/ folder: pytest-style files run with pytest when the sandbox has it,
    else with a small runner calling every `test*` function; shell scripts run with bash."""
    tests_dir = folder / "tests"
    scripts = []
    for path in sorted(tests_dir.glob("*")) if tests_dir.is_dir() else []:
        if not path.is_file():
            continue
        text = rewrite_root(read_text(path), root, ".")
        # Test files go to the grader's scratch folder (outside the work dir, made after the episode); Python runs
        # isolated (-I) and pytest loads no conftest.py, pytest.py or plugin the agent may have planted.
        target = f"$AGENTGYM_SCRATCH/tb/{path.name}"
        quoted = f'"{target}"'
        write = f'mkdir -p "$AGENTGYM_SCRATCH/tb" && cat > {quoted} <<\'AGENTGYM_EOF\'\n{text}\nAGENTGYM_EOF\n'
        if path.suffix == ".py" and path.name.startswith("test"):
            runner = f'cat > "$AGENTGYM_SCRATCH/tb/_runner.py" <<\'AGENTGYM_EOF\'\n{_PY_RUNNER}\nAGENTGYM_EOF\n'
            run = ("if python3 -I -c 'import pytest' 2>/dev/null; then python3 -I -m pytest -q -p no:cacheprovider "
                   f'--rootdir "$AGENTGYM_SCRATCH/tb" --confcutdir "$AGENTGYM_SCRATCH/tb" --noconftest {quoted}; '
                   f'else python3 -I "$AGENTGYM_SCRATCH/tb/_runner.py" {quoted}; fi\n')
            scripts.append({"name": path.name, "script": write + runner + run})
        elif path.suffix == ".sh":
            scripts.append({"name": path.name, "script": write + f"bash {quoted}\n"})
    run_tests = folder / "run-tests.sh"
    if not scripts and run_tests.exists():
        scripts.append({"name": "run-tests.sh", "script": rewrite_root(read_text(run_tests), root, ".")})
    return scripts


def import_terminal_bench(source: Path, *, root: str = "/app", backend: str = "auto", split: str = "test",
                          strict: bool = False) -> list[Task]:
    """Terminal-Bench task folders (instruction, reference solution, tests, environment files) -> tasks.

    `source` is one task folder or a folder of them. The files next to the task definition (other than the
    solution, tests and Docker files) form the starting file tree. A Dockerfile's `RUN` steps cannot run in the
    offline sandbox image; such tasks are imported with a warning and kept only if their solution and tests pass.
    """
    from agentgym_cli.data.fixtures import Entry, Fixture, pack
    from agentgym_cli.tasks.base import TaskSpec, shell

    folders = [source] if any((source / name).exists() for name in ("task.yaml", "task.yml", "instruction.md")) \
        else sorted(path for path in source.iterdir() if path.is_dir())
    if not folders:
        raise click.ClickException(f"{source}: no Terminal-Bench task folders found")
    tasks: list[Task] = []
    skipped: list[tuple[str, str, str]] = []
    for folder in folders:
        try:
            instruction = rewrite_root(_tb_instruction(folder), root, ".")
        except click.ClickException as error:
            if strict:
                raise
            skipped.append((f"tb-{folder.name}", "no readable instruction", error.message))
            continue
        solution_path = folder / "solution.sh"
        if not solution_path.exists():
            skipped.append((f"tb-{folder.name}", "no solution.sh (the oracle needs a reference solution)", ""))
            continue
        solution = rewrite_root(read_text(solution_path), root, ".")
        dockerfile = folder / "Dockerfile"
        if dockerfile.exists() and re.search(r"^\s*RUN\s", read_text(dockerfile), re.MULTILINE):
            click.echo(f"warning: {folder.name}: its Dockerfile has RUN steps the sandbox image does not run",
                       err=True)
        entries = []
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(folder)
            if relative.parts[0] in TB_SPECIAL or path.is_dir():
                continue
            entries.append(Entry(relative.as_posix(), data=path.read_bytes(), mode=path.stat().st_mode & 0o777
                                 if path.stat().st_mode & 0o777 in (0o644, 0o755) else 0o644))
        tests = _tb_tests(folder, root)
        if not tests:
            skipped.append((f"tb-{folder.name}", "no tests", ""))
            continue
        fixture = Fixture(name=f"tb-{folder.name}", entries=entries, tar=pack(entries))
        step = shell(f"bash <<'AGENTGYM_SOLUTION'\n{solution}\nAGENTGYM_SOLUTION")
        spec = TaskSpec("terminal_bench", f"terminal-bench:{folder.name}", instruction, [step], check_state=False,
                        tests=tests, difficulty=_tb_difficulty(folder))
        tasks += _realize_all([(f"tb-{folder.name}", spec)], fixture, backend, split, strict, skipped)
    report_skipped(skipped)
    return tasks


def _write(tasks: list[Task], out: Path) -> None:
    from agentgym.tasks import save_tasks

    count = save_tasks(tasks, out)
    click.echo(f"wrote {count} tasks to {out}")


@click.command("intercode-bash")
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--fs", "tree", type=click.Path(exists=True, path_type=Path), required=True,
              help="The file tree the tasks assume: a folder or a tar archive (such as nl2bash_fs_1_tree.tar.gz).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--root", default="/testbed", show_default=True, help="Absolute folder the gold commands use.")
@click.option("--backend", default="auto", show_default=True, type=click.Choice(["auto", "docker", "local"]))
@click.option("--split", default="test", show_default=True)
@click.option("--strict", is_flag=True, help="Fail on a gold command that cannot run instead of skipping it.")
def intercode_command(source: Path, tree: Path, out: Path, root: str, backend: str, split: str, strict: bool) -> None:
    """Import InterCode-Bash tasks: gold commands run on a fresh copy of the tree give the expected state and output.

    Example: agentgym tasks import intercode-bash nl2bash_fs_1.json --fs nl2bash_fs_1_tree.tar.gz --out ic.jsonl
    """
    _write(import_intercode(source, tree, root=root, backend=backend, split=split, strict=strict), out)


@click.command("terminal-bench")
@click.argument("source", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--root", default="/app", show_default=True, help="Absolute folder the tasks work in.")
@click.option("--backend", default="auto", show_default=True, type=click.Choice(["auto", "docker", "local"]))
@click.option("--split", default="test", show_default=True)
@click.option("--strict", is_flag=True, help="Fail on a task whose solution does not pass its tests.")
def terminal_bench_command(source: Path, out: Path, root: str, backend: str, split: str, strict: bool) -> None:
    """Import Terminal-Bench task folders (task.yaml, solution.sh, tests/, files); each solution must pass its tests.

    Example: agentgym tasks import terminal-bench ./terminal-bench/tasks --out tb.jsonl
    """
    _write(import_terminal_bench(source, root=root, backend=backend, split=split, strict=strict), out)
