"""`CLI-v0`: the env class, fixture lookup for a task, and the factory `gym.make` calls.

Each episode takes a sandbox from the process-wide warm pool, streams the task's fixture into it as a tar, and
gives it back (reset) when the episode ends. The verifier (`verify.py`) grades in the same sandbox after `submit`,
once every process of the episode has been ended (`Workspace.seal`).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import agentgym_cli.verify  # noqa: F401  (registers the `cli` verifier)
from agentgym import Task, TaskSet, ToolEnv
from agentgym.actions import ToolCall
from agentgym.answers import answer_schema
from agentgym.diagnosis import TurnRecord
from agentgym.rewards import Score
from agentgym.tools import ToolOutcome
from agentgym_cli.data.fixtures import Fixture, fixture_from_tar, get_workspace
from agentgym_cli.diagnosis import cli_labels
from agentgym_cli.tools import TOOLS
from agentgym_cli.workspace import Workspace

SYSTEM_PROMPT = (
    "You are an agent working in a Linux shell. Your working directory is the root of a workspace that holds the "
    "files of the task. Use run_shell to run bash commands (the shell keeps its directory and variables between "
    "calls; there is no terminal, so interactive programs such as editors or pagers do not work), read_file, "
    "write_file and list_dir for files (paths relative to the workspace root). When the task is done, call submit: "
    "with the answer for a question, with no answer for a task that changes files."
)

# Turns per episode: the oracle needs at most 3 on any task, a careful agent on the hard tier (pipeline, debugging,
# git history) about 10-20 (explore, write a program, run it, fix it, check the edge cases, submit): room for it.
MAX_TURNS = 40

# The answer contract (`agentgym.answers.ANSWER_SCHEMAS`) of each of the `cli` verifier's answer kinds.
ANSWER_KINDS = {"number": "number", "text": "text", "lines": "list", "output": "text", "none": "none"}

_inline_fixtures: dict[str, Fixture] = {}
_inline_lock = threading.Lock()


def encode_fixture(tar_bytes: bytes) -> dict[str, str]:
    """Task metadata that carries a file tree inside the task (importers): its name and gzipped, base64 tar."""
    digest = hashlib.sha256(tar_bytes).hexdigest()[:16]
    return {"fixture": f"inline-{digest}",
            "fixture_tar": base64.b64encode(gzip.compress(tar_bytes, mtime=0)).decode()}


def fixture_for(task: Task) -> Fixture:
    """The file tree `task` starts from: a generated workspace by name, or the tree carried in its metadata.

    Raises:
        ValueError: if the task names no fixture, or its generated workspace no longer matches the task file.
    """
    metadata = task.metadata
    name = metadata.get("fixture")
    if not isinstance(name, str):
        raise ValueError(  # noqa: TRY004  (a bad task file is a value problem, as gym.make reports them)
            f"task {task.id!r} has no metadata.fixture; CLI-v0 tasks come from `agentgym tasks generate CLI-v0` "
            "or `agentgym tasks import intercode-bash|terminal-bench`")
    if "fixture_tar" in metadata:
        with _inline_lock:
            fixture = _inline_fixtures.get(name)
            if fixture is None:
                tar_bytes = gzip.decompress(base64.b64decode(metadata["fixture_tar"]))
                fixture = _inline_fixtures[name] = fixture_from_tar(name, tar_bytes)
        return fixture
    fixture = get_workspace(name)
    expected = metadata.get("fixture_digest")
    if expected and expected != fixture.digest:
        raise ValueError(f"task {task.id!r} was generated from workspace {name} with digest {expected}, but this "
                         f"version of agentgym-cli makes digest {fixture.digest}; regenerate the task file with "
                         "`agentgym tasks generate CLI-v0`")
    return fixture


class CliEnv(ToolEnv):
    """Shell tasks in a sandbox. See `make_env` for the arguments."""

    def __init__(self, tasks: TaskSet | Sequence[Task] | str | Path, *, backend: str = "auto",
                 command_timeout: float = 20.0, pool_size: int = 2, allow_weak_isolation: bool = False,
                 **kwargs: Any) -> None:
        kwargs.setdefault("system_prompt", SYSTEM_PROMPT)
        kwargs.setdefault("max_turns", MAX_TURNS)
        super().__init__(tasks, TOOLS, **kwargs)
        self.backend = backend
        self.command_timeout = command_timeout
        self.pool_size = pool_size
        self.allow_weak_isolation = allow_weak_isolation

    def begin_episode(self, task: Task) -> Workspace:
        return Workspace.open(fixture_for(task), backend=self.backend, pool_size=self.pool_size,
                              command_timeout=self.command_timeout, allow_weak_isolation=self.allow_weak_isolation)

    def end_episode(self, state: Any) -> None:
        if isinstance(state, Workspace):
            state.close()

    def answer_schema(self, task: Task) -> dict[str, Any] | None:
        """`submit`'s `answer` typed by the task's answer kind: an array of strings for a list of paths, a number,
        a string for a text or a command's output, null for a task graded on its files."""
        kind = task.verifier.params.get("answer_kind", "none")
        return answer_schema(ANSWER_KINDS.get(kind, "text")) if task.verifier.name == "cli" else None

    def diagnose_extra(self, turns: Sequence[TurnRecord], score: Score) -> list[str]:
        """CLI-v0's diagnosis labels (`agentgym_cli.diagnosis`, docs/diagnosis.md)."""
        assert self.task is not None
        return cli_labels(self.task, self.state, turns, score)

    def process_signals(self, call: ToolCall, outcome: ToolOutcome, state: Any) -> dict[str, float]:
        """`shell_ok`: the share of `run_shell` calls whose command exited with status 0."""
        if call.name != "run_shell":
            return {}
        text = outcome.text  # the exit-code note starts a line (no copy of a long output to find it)
        return {"shell_ok": float(outcome.ok and not text.startswith("[exit code ") and "\n[exit code " not in text)}

    def feedback_hints(self, call: ToolCall, outcome: ToolOutcome, view: Any) -> list[Any]:
        """CLI-v0's hints (`agentgym_cli.feedback`, docs/feedback.md): installed commands, the graded work dir."""
        from agentgym_cli.feedback import hints

        return hints(call, outcome, view)


FIXTURES_VARIABLE = "AGENTGYM_CLI_FIXTURES"


def _fixtures_from_environment() -> int | None:
    """`$AGENTGYM_CLI_FIXTURES`: a smaller default world (its first N workspaces, the same tasks as the full
    set's), for test suites and quick looks; building all 100 takes minutes."""
    value = os.environ.get(FIXTURES_VARIABLE, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 4:
        raise ValueError(f"${FIXTURES_VARIABLE}={value!r}: give a whole number of workspaces, at least 4 (every "
                         "4th is a test workspace)")
    return int(value)


def make_env(tasks: TaskSet | Sequence[Task] | str | Path | None = None, *, backend: str = "auto",
             seed: int = 0, fixtures: int | None = None, **kwargs: Any) -> CliEnv:
    """Make CLI-v0.

    Args:
        tasks: A task file or list (from `agentgym tasks generate|import`); default: the generated set of `seed`
            (made on first use, then cached; see `agentgym_cli.tasks.generate`).
        backend: Sandbox backend, "docker", "local" or "auto" (Docker where a daemon answers; the weaker local
            backend only with `allow_weak_isolation=True`, `AGENTGYM_ALLOW_WEAK_ISOLATION=1`, or by name).
        seed: Seed of the generated task set when `tasks` is not given.
        fixtures: Workspaces in the generated task set (default `$AGENTGYM_CLI_FIXTURES`, else 100, about 3,400
            tasks; with `split`, only that split's workspaces are built).
        **kwargs: `split`, `families`, `max_turns` (default 40), `command_timeout` (seconds per shell call,
            default 20), `pool_size` (warm sandboxes, default 2), `allow_weak_isolation` (default False) and the
            other `ToolEnv` options.
    """
    if tasks is None:
        from agentgym_cli.tasks import DEFAULT_FIXTURES, generate

        split = kwargs.get("split")  # build only the workspaces of the split asked for
        fixtures = fixtures or _fixtures_from_environment() or DEFAULT_FIXTURES
        tasks = generate(seed, fixtures=fixtures, backend=backend,
                         split=split if split in ("train", "test") else None)
    return CliEnv(tasks, backend=backend, **kwargs)
