"""CLI-v0's task families (one module each) and `generate`, which builds and caches the task set.

`generate(seed)` makes `fixtures` workspaces, asks every family for its specs on each, and runs each spec's gold
solution on a fresh copy of its workspace to record the expected answer, file-system changes and passing tests
(see `base.realize`). Workspaces with `index % 5 == 4` form the test split, the others the train split, so the
two splits never share a file tree. The result is cached as JSONL under `~/.cache/agentgym/cli`, keyed by the seed,
the fixture count and a hash of this package's generator sources, so a changed generator is never served stale.
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
    config_edits,
    counting,
    find_filter,
    git_chores,
    organise,
    permissions,
    scripts,
    text_processing,
)
from agentgym_cli.tasks.base import GenerationError, TaskSpec, realize

logger = logging.getLogger(__name__)

FAMILIES: dict[str, ModuleType] = {module.FAMILY: module for module in (
    find_filter, text_processing, organise, permissions, counting, scripts, config_edits, git_chores)}
DEFAULT_FIXTURES = 40

__all__ = ["FAMILIES", "GenerationError", "TaskSpec", "generate", "split_of"]


def split_of(index: int) -> str:
    """The split of workspace `index`: every fifth workspace is held out for test."""
    return "test" if index % 5 == 4 else "train"


def _source_hash() -> str:
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted([*package.glob("tasks/*.py"), package / "data" / "fixtures.py", package / "workspace.py",
                        package / "tools.py"]):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def cache_path(seed: int, fixtures: int) -> Path:
    """Where `generate(seed, fixtures=...)` caches its tasks."""
    from agentgym_cli.data.fixtures import cache_root

    return cache_root() / f"tasks-s{seed}-n{fixtures}-{_source_hash()}.jsonl"


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
             families: list[str] | None = None, workers: int = 2, cache: bool = True) -> list[Task]:
    """Every task of `fixtures` workspaces of `seed` (about 23 per workspace), gold solutions run in `backend`.

    Args:
        seed: Picks the workspaces (and so the tasks); the same seed gives the same tasks.
        fixtures: How many workspaces to make.
        backend: Sandbox backend that runs the gold solutions ("auto": Docker where a daemon answers, as
            episodes do; "local" otherwise. Both run Debian bookworm's tools as an unprivileged user).
        families: Only these families (default: all).
        workers: Sandboxes running gold solutions at once.
        cache: Read and write the JSONL cache (only for the full family list).

    Raises:
        GenerationError: if a gold solution fails or disagrees with its expected answer.
    """
    chosen = list(families or FAMILIES)
    unknown = sorted(set(chosen) - set(FAMILIES))
    if unknown:
        raise ValueError(f"unknown families {unknown}; known: {', '.join(FAMILIES)}")
    use_cache = cache and families is None
    path = cache_path(seed, fixtures)
    if use_cache and path.exists():
        return load_tasks(path)
    from agentgym.cache import building

    lock = threading.Lock()
    done: dict[int, list[Task]] = {}
    what = (f"the CLI-v0 task set ({fixtures} workspaces, every gold solution run in a sandbox)" if use_cache
            else f"CLI-v0 tasks of {fixtures} workspaces (not cached: families chosen)")
    with building(what, path if use_cache else "(kept in memory)", estimate="about 1-3 minutes",
                  total=fixtures, unit="workspaces") as progress:

        def work(index: int) -> None:
            tasks = _fixture_tasks(seed, index, backend, chosen)
            with lock:
                done[index] = tasks
            progress.advance()

        with ThreadPoolExecutor(max_workers=max(1, workers)) as executor:
            list(executor.map(work, range(fixtures)))
        tasks = [task for index in range(fixtures) for task in done[index]]
        if use_cache:
            save_tasks(tasks, path)
        for stale in path.parent.glob(f"tasks-s{seed}-n{fixtures}-*.jsonl"):
            if stale != path:
                stale.unlink(missing_ok=True)  # made by an older version of the generator
    return tasks
