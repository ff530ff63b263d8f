"""CLI-v0's task families (one module each) and `generate`, which builds and caches the task set.

`generate(seed)` makes `fixtures` workspaces, asks every family for its specs on each, and runs each spec's gold
solution on a fresh copy of its workspace to record the expected answer, file-system changes and passing tests
(see `base.realize`). Workspaces with `index % 4 == 3` form the test split, the others the train split, so the
two splits never share a file tree. The result is cached as JSONL under `~/.cache/agentgym/cli`, one file per
workspace in a folder keyed by a hash of this package's generator sources (a changed generator is never served
stale); asking for one split builds only its workspaces.
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


def _source_hash() -> str:
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted([*package.glob("tasks/*.py"), *package.glob("data/*.py"), package / "workspace.py",
                        package / "tools.py"]):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def cache_folder() -> Path:
    """Where `generate` caches its tasks: one JSONL file per workspace, in a folder named after the hash of the
    generator's sources (a changed generator is never served stale)."""
    from agentgym_cli.data.fixtures import cache_root

    return cache_root() / f"tasks-{_source_hash()}"


def _cached(seed: int, index: int) -> Path:
    return cache_folder() / f"s{seed}-{index:03d}.jsonl"


def _save(tasks: list[Task], path: Path) -> None:
    try:
        save_tasks(tasks, path)
    except FileExistsError:
        pass  # another process is writing the same workspace's tasks at this moment: it will be there


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
    """Every task of `fixtures` workspaces of `seed` (about 34 per workspace), gold solutions run in `backend`.

    Args:
        seed: Picks the workspaces (and so the tasks); the same seed gives the same tasks.
        fixtures: How many workspaces to make (every fifth is a test workspace).
        backend: Sandbox backend that runs the gold solutions ("auto": Docker where a daemon answers, as
            episodes do; "local" otherwise. Both run Debian bookworm's tools as an unprivileged user).
        families: Only these families (default: all).
        workers: Sandboxes running gold solutions at once.
        cache: Read and write the cache, one file per workspace (only for the full family list).
        split: Only the workspaces of this split ("train" or "test"; default both): `gym.make("CLI-v0",
            split="test")` builds the 25 test workspaces only.

    Raises:
        GenerationError: if a gold solution fails or disagrees with its expected answer.
    """
    chosen = list(families or FAMILIES)
    unknown = sorted(set(chosen) - set(FAMILIES))
    if unknown:
        raise ValueError(f"unknown families {unknown}; known: {', '.join(FAMILIES)}")
    use_cache = cache and families is None
    indexes = [index for index in range(fixtures) if split is None or split_of(index) == split]
    done: dict[int, list[Task]] = {}
    if use_cache:
        for index in indexes:
            if _cached(seed, index).exists():
                done[index] = load_tasks(_cached(seed, index))
    missing = [index for index in indexes if index not in done]
    if missing:
        from agentgym.cache import building

        lock = threading.Lock()
        what = (f"the CLI-v0 task set ({len(missing)} of {len(indexes)} workspaces to build, every gold solution "
                "run in a sandbox)" if use_cache else
                f"CLI-v0 tasks of {len(missing)} workspaces (not cached: families chosen)")
        # About 10 s of sandbox work per workspace on an idle machine (38 gold runs, hidden tests included).
        minutes = max(1, round(len(missing) * 10 / 60 / max(1, workers)))
        with building(what, cache_folder() if use_cache else "(kept in memory)",
                      estimate=f"about {minutes}-{3 * minutes} minutes", total=len(missing),
                      unit="workspaces") as progress:

            def work(index: int) -> None:
                tasks = _fixture_tasks(seed, index, backend, chosen)
                if use_cache:
                    _save(tasks, _cached(seed, index))
                with lock:
                    done[index] = tasks
                progress.advance()

            with ThreadPoolExecutor(max_workers=max(1, workers)) as executor:
                list(executor.map(work, missing))
        if use_cache:
            for stale in cache_folder().parent.glob("tasks-*"):
                if stale != cache_folder():  # made by an older version of the generator
                    if stale.is_dir():
                        for old in stale.glob("*"):
                            old.unlink(missing_ok=True)
                        stale.rmdir()
                    else:
                        stale.unlink(missing_ok=True)
    return [task for index in indexes for task in done[index]]
