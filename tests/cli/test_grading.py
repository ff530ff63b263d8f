"""CLI-v0's grading copy and verdict: repositories made inert, and a reply that is not one outcome per test ends
the episode with reward 0 and the `grader_error` diagnosis, never an exception out of `step`."""

from __future__ import annotations

import io
import tarfile
from typing import Any

import pytest
from agentgym_cli.workspace import sanitize_for_grading, sanitize_git_config

from agentgym.sandbox.base import Sandbox

HOSTILE_CONFIG = """[core]
\trepositoryformatversion = 0
\tfilemode = true
\tfsmonitor = ./evil
\thooksPath = .hooks
\tbare = false
[include]
\tpath = ../evil.cfg
[includeIf "gitdir:/"]
\tpath = ../evil.cfg
[filter "x"]
\tclean = ./evil
[alias]
\tstatus = !./evil
[user]
\tname = Ada Lovelace
\temail = ada@example.org
[remote "origin"]
\turl = https://example.org/r.git
\tuploadpack = ./evil
[branch "main"]
\tremote = origin
[core] pager = ./evil
[diff "d"]
\ttextconv = ./evil
[core]
\teditor = "./evil" \\
\t\tmore
"""


def test_a_repository_config_keeps_only_the_whitelist() -> None:
    kept = sanitize_git_config(HOSTILE_CONFIG)
    assert "evil" not in kept
    assert kept == ("[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
                    "[user]\n\tname = Ada Lovelace\n\temail = ada@example.org\n"
                    '[remote "origin"]\n\turl = https://example.org/r.git\n[branch "main"]\n\tremote = origin\n')


def _tar(entries: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, value in entries.items():
            info = tarfile.TarInfo(name)
            if value is None:
                info.type = tarfile.DIRTYPE
                archive.addfile(info)
            elif isinstance(value, tuple):
                info.type, info.linkname = value
                archive.addfile(info)
            else:
                info.size = len(value)
                archive.addfile(info, io.BytesIO(value))
    return buffer.getvalue()


def _names(archive: bytes) -> dict[str, bytes | None]:
    with tarfile.open(fileobj=io.BytesIO(archive)) as source:
        return {member.name: (source.extractfile(member).read() if member.isreg() else None)  # type: ignore[union-attr]
                for member in source}


def test_the_graded_copy_drops_every_way_a_repository_runs_code() -> None:
    archive = _tar({"repo": None, "repo/.git": None, "repo/.git/config": HOSTILE_CONFIG.encode(),
                    "repo/.git/hooks": None, "repo/.git/hooks/post-checkout": b"evil",
                    "repo/.git/info": None, "repo/.git/info/attributes": b"* filter=x",
                    "repo/.git/info/exclude": b"*.log", "repo/.git/config.worktree": b"[filter]",
                    "repo/.git/HEAD": b"ref: refs/heads/main\n", "repo/.git/modules": None,
                    "repo/.git/modules/m/config": b"[core]\n\tfsmonitor = x\n",
                    "repo/.git/packed-refs": (tarfile.SYMTYPE, "/etc/passwd"),
                    "keep.txt": b"hooks", "other": None, "other/.git": b"gitdir: ../elsewhere\n",
                    "copy": (tarfile.LNKTYPE, "repo/.git/hooks/post-checkout")})
    names = _names(sanitize_for_grading(archive))
    assert sorted(names) == ["copy", "keep.txt", "other", "repo", "repo/.git", "repo/.git/HEAD",
                             "repo/.git/config", "repo/.git/info", "repo/.git/info/exclude"]
    assert b"evil" not in (names["repo/.git/config"] or b"")
    assert names["copy"] == b"evil"  # a hard link whose first name was dropped keeps its content as a file


def _one_test_task(tasks: list[Any]) -> Any:
    return next(task for task in tasks if task.family == "git_chores" and task.verifier.params.get("tests"))


@pytest.mark.parametrize("reply", [[], [[0, "", ""], [0, "", ""]], [[0, ""]], [["0", "", ""]], "[[0]]", None],
                         ids=["empty", "long", "short-outcome", "status-not-int", "text", "none"])
def test_a_malformed_grader_reply_is_a_grader_error(make_cli_env: Any, small_tasks: list[Any], reply: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # No agent can make the grading supervisor answer like this any more (its reply channel is out of the tests'
    # reach), so the reply is put in its place here to check what the host does with one.
    monkeypatch.setattr(Sandbox, "grade", lambda self, scripts, **kwargs: reply)
    task = _one_test_task(small_tasks)
    env = make_cli_env(tasks=[task])
    env.reset(seed=0, options={"task_id": task.id})
    for action in task.metadata.get("solution", []) or []:
        env.step(action)
    _, reward, terminated, _, info = env.step({"name": "submit", "arguments": {}})
    assert terminated and reward == 0.0
    assert "grader_error" in str(info["diagnosis"])
    assert info.get("infra_error") is False
