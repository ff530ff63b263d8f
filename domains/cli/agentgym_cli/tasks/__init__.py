"""CLI-v0's task families (one module each) and `generate`, which builds and caches the task set.

`generate(seed)` makes `fixtures` workspaces, asks every family for its specs on each, and runs each spec's gold
solution on a fresh copy of its workspace to record the expected answer, file-system changes and passing tests
(see `base.realize`). Workspaces with `index % 4 == 3` form the test split, the others the train split, so the
two splits never share a file tree. The result is cached as JSONL under `~/.cache/agentgym/cli/tasks`, one file per
family and workspace, in a folder keyed by a hash of that family's module and of the sources every family shares
(a changed generator is never served stale, and editing one family rebuilds only its tasks); asking for one split
builds only its workspaces.
"""

from __future__ import annotations

import hashlib
import logging
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

from agentgym import Task
from agentgym.sandbox import SandboxError
from agentgym.tasks import load_tasks, save_tasks
from agentgym_cli.tasks import (
    awkward_files,
    config_edits,
    counting,
    debugging,
    find_filter,
    git_chores,
    git_history,
    organise,
    permissions,
    pipeline,
    scripts,
    service_config,
    text_processing,
)
from agentgym_cli.tasks.base import GenerationError, TaskSpec, realize

logger = logging.getLogger(__name__)

FAMILIES: dict[str, ModuleType] = {module.FAMILY: module for module in (
    find_filter, text_processing, organise, permissions, counting, scripts, config_edits, git_chores,
    pipeline, awkward_files, debugging, git_history, service_config)}
DEFAULT_FIXTURES = 100  # 25 test workspaces: over 400 distinct test prompts, over 100 hard test tasks

__all__ = ["FAMILIES", "GenerationError", "TaskSpec", "cache_folder", "generate", "split_of"]


def split_of(index: int) -> str:
    """The split of workspace `index`: every fourth workspace is held out for test (25 of the default 100)."""
    return "test" if index % 4 == 3 else "train"


def _digest(paths: list[Path], extra: str = "") -> str:
    digest = hashlib.sha256(extra.encode())
    for path in sorted(paths):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _shared_hash() -> str:
    """What every family's tasks depend on: the fixtures, `realize`, the workspace, the tools, the split rule."""
    package = Path(__file__).resolve().parents[1]
    shared = [*package.glob("data/*.py"), package / "tasks" / "base.py", package / "workspace.py",
              package / "tools.py"]
    return _digest(shared, "splits:" + "".join(split_of(index)[:2] for index in range(8)))


def _family_hash(family: str, shared: str) -> str:
    return _digest([Path(str(FAMILIES[family].__file__))], shared)


def cache_folder() -> Path:
    """Where `generate` caches its tasks: `FAMILY-HASH/sSEED-INDEX.jsonl`, one file per family and workspace,
    the hash taken over that family's generator and the sources all families share. Editing one family's module
    rebuilds only its tasks; editing a shared source rebuilds them all; nothing stale is ever served."""
    from agentgym_cli.data.fixtures import cache_root

    return cache_root() / "tasks"


def _cached(family_key: str, seed: int, index: int) -> Path:
    return cache_folder() / family_key / f"s{seed}-{index:03d}.jsonl"


def _save(tasks: list[Task], path: Path) -> None:
    try:
        save_tasks(tasks, path)
    except FileExistsError:
        pass  # another process is writing the same workspace's tasks at this moment: it will be there


def _remove_stale(current: set[str]) -> None:
    """Delete cached tasks that an older generator made (other family keys, and older cache layouts)."""
    from agentgym_cli.data.fixtures import cache_root

    stale = [path for path in cache_folder().glob("*") if path.name not in current]
    stale += [path for path in cache_root().glob("tasks-*")]  # the layouts before per-family files
    for path in stale:
        if path.is_dir():
            for old in path.glob("*"):
                old.unlink(missing_ok=True)
            path.rmdir()
        else:
            path.unlink(missing_ok=True)


def _fixture_tasks(seed: int, index: int, backend: str, families: list[str]) -> list[Task]:
    from agentgym_cli.data.fixtures import get_workspace, workspace_name
    from agentgym_cli.workspace import Workspace

    fixture = get_workspace(workspace_name(seed, index))
    made: list[Task] = []
    for family in families:
        rng = random.Random(f"{fixture.name}:{family}")
        for spec in FAMILIES[family].specs(fixture, rng):
            task_id = f"cli-{fixture.name}-{family}-{spec.template}"
            for attempt in range(3):
                workspace = Workspace.open(fixture, backend=backend, allow_weak_isolation=True)
                try:
                    made.append(realize(spec, fixture, workspace, task_id=task_id, split=split_of(index),
                                        metadata={"fixture": fixture.name, "fixture_digest": fixture.digest,
                                                  "template": spec.template}))
                    break
                except (GenerationError, SandboxError) as error:
                    # A broken gold solution fails every time; a sandbox hiccup (fork refused under load) does not.
                    if attempt == 2:
                        raise
                    logger.warning("%s: %s; retrying in a fresh sandbox", task_id, error)
                finally:
                    workspace.close()
    return made


def generate(seed: int = 0, *, fixtures: int = DEFAULT_FIXTURES, backend: str = "auto",
             families: list[str] | None = None, workers: int = 2, cache: bool = True,
             split: str | None = None) -> list[Task]:
    """Every task of `fixtures` workspaces of `seed` (about 37 per workspace), gold solutions run in `backend`.

    Args:
        seed: Picks the workspaces (and so the tasks); the same seed gives the same tasks.
        fixtures: How many workspaces to make (every fourth is a test workspace).
        backend: Sandbox backend that runs the gold solutions ("auto": Docker where a daemon answers, as
            episodes do; "local" otherwise. Both run Debian bookworm's tools as an unprivileged user).
        families: Only these families (default: all).
        workers: Sandboxes running gold solutions at once.
        cache: Read and write the cache (one file per family and workspace).
        split: Only the workspaces of this split ("train" or "test"; default both): `gym.make("CLI-v0",
            split="test")` builds the 25 test workspaces only.

    Raises:
        GenerationError: if a gold solution fails or disagrees with its expected answer.
    """
    chosen = list(families or FAMILIES)
    unknown = sorted(set(chosen) - set(FAMILIES))
    if unknown:
        raise ValueError(f"unknown families {unknown}; known: {', '.join(FAMILIES)}")
    indexes = [index for index in range(fixtures) if split is None or split_of(index) == split]
    shared = _shared_hash()
    keys = {family: f"{family}-{_family_hash(family, shared)}" for family in chosen}
    done: dict[tuple[int, str], list[Task]] = {}
    if cache:
        for index in indexes:
            for family in chosen:
                path = _cached(keys[family], seed, index)
                if path.exists():
                    done[index, family] = load_tasks(path)
    missing: dict[int, list[str]] = {}
    for index in indexes:
        families_left = [family for family in chosen if (index, family) not in done]
        if families_left:
            missing[index] = families_left
    if missing:
        from agentgym.cache import building

        lock = threading.Lock()
        count = sum(len(left) for left in missing.values())
        what = (f"CLI-v0 tasks ({count} family sets of {len(missing)} of {len(indexes)} workspaces, every gold "
                "solution run in a sandbox)")
        # About 10 s of sandbox work per workspace of 13 families on an idle machine (hidden tests included).
        minutes = max(1, round(count * 10 / len(FAMILIES) / 60 / max(1, workers)))
        with building(what, cache_folder() if cache else "(kept in memory)",
                      estimate=f"about {minutes}-{3 * minutes} minutes", total=len(missing),
                      unit="workspaces") as progress:

            def work(index: int) -> None:
                tasks = _fixture_tasks(seed, index, backend, missing[index])
                for family in missing[index]:
                    made = [task for task in tasks if task.family == family]
                    if cache:
                        _save(made, _cached(keys[family], seed, index))
                    with lock:
                        done[index, family] = made
                progress.advance()

            with ThreadPoolExecutor(max_workers=max(1, workers)) as executor:
                list(executor.map(work, sorted(missing)))
        if cache and families is None:
            _remove_stale(set(keys.values()))
    return [task for index in indexes for family in chosen for task in done[index, family]]
