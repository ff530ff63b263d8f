"""The episode's workspace: a pooled sandbox with a fixture streamed in, and snapshots of its file system.

`Workspace.open` takes a clean sandbox from the process-wide pool (made with a fixed locale and time zone and no
pager or editor, see `SHELL_ENV`), extracts the fixture's tar into the work dir, and restores permission bits
where the sandbox's extraction drops them. The shell itself starts on the first command.
`snapshot()` lists every file, folder and link under the work dir with its mode and a content hash (or link
target); `diff` and `compare_states` turn two snapshots into the changes the verifier scores.

Snapshots run in the sandbox's Python interpreter, not in the agent's shell, so functions, aliases or a changed
PATH the agent left behind cannot fake them.
"""

from __future__ import annotations

import fnmatch
import io
import json
import logging
import re
import tarfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from agentgym.errors import InfrastructureError
from agentgym.sandbox import Sandbox, SandboxError, get_pool
from agentgym_cli.data.fixtures import Fixture

logger = logging.getLogger(__name__)

# Never part of a snapshot: git internals (git tasks are checked by hidden tests), caches tools write on their
# own, and files the shell or editors keep in $HOME (the work dir).
SKIP_NAMES = (".git", "__pycache__", ".pytest_cache")
SKIP_TOP = (".bash_history", ".gitconfig", ".lesshst", ".viminfo", ".python_history", ".wget-hsts", ".cache",
            ".local")
MAX_ENTRIES = 50_000
# The environment of every command: a fixed locale and time zone (stable `sort`, `date`), no pager or editor that
# would wait for a terminal. Given to the sandbox at creation, so no command has to set it at reset.
SHELL_ENV = {"LC_ALL": "C.UTF-8", "LANG": "C.UTF-8", "TZ": "UTC", "PAGER": "cat", "GIT_PAGER": "cat",
             "GIT_EDITOR": "true", "EDITOR": "true", "VISUAL": "true", "TERM": "dumb"}

SNAPSHOT_CODE = r'''
import hashlib as _h, json as _j, os as _o, stat as _s
def _agentgym_snapshot(root, skip, skip_top, limit):
    out = {}
    def digest(path, mode):
        restore = None
        if not _o.access(path, _o.R_OK):
            try:
                _o.chmod(path, mode | 0o400); restore = mode
            except OSError:
                return "<unreadable>"
        try:
            h = _h.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            return h.hexdigest()[:20]
        except OSError:
            return "<unreadable>"
        finally:
            if restore is not None:
                _o.chmod(path, restore)
    def walk(path, rel, top):
        restore = None
        mode = _s.S_IMODE(_o.lstat(path).st_mode)
        if not _o.access(path, _o.R_OK | _o.X_OK):
            try:
                _o.chmod(path, mode | 0o500); restore = mode
            except OSError:
                return
        try:
            names = sorted(_o.listdir(path))
        finally:
            pass
        for name in names:
            if name in skip or (top and name in skip_top):
                continue
            if len(out) >= limit:
                raise OverflowError
            full = _o.path.join(path, name)
            key = rel + name
            st = _o.lstat(full)
            mode = _s.S_IMODE(st.st_mode)
            if _s.S_ISLNK(st.st_mode):
                out[key] = ["l", 0, _o.readlink(full)]
            elif _s.S_ISDIR(st.st_mode):
                out[key] = ["d", mode, ""]
                walk(full, key + "/", False)
            elif _s.S_ISREG(st.st_mode):
                out[key] = ["f", mode, digest(full, mode)]
            else:
                out[key] = ["o", mode, ""]
        if restore is not None:
            _o.chmod(path, restore)
    try:
        walk(root, "", True)
    except OverflowError:
        return None
    return out
'''

# The environment of every hidden test: nothing of the agent's shell; git reads no system, global or repository
# configuration the agent could have written (the graded copy's repository config is rewritten, see
# `sanitize_for_grading`) and runs no hook or fsmonitor; every Python the tests start leaves the work dir and the
# user site off sys.path. HOME, $AGENTGYM_SCRATCH and $WORKSPACE are set by the grading sandbox.
GRADER_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8", "TZ": "UTC",
              "PAGER": "cat", "GIT_PAGER": "cat", "TERM": "dumb", "GIT_CONFIG_NOSYSTEM": "1",
              "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_ATTR_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
              "GIT_CONFIG_COUNT": "4", "GIT_CONFIG_KEY_0": "core.fsmonitor", "GIT_CONFIG_VALUE_0": "false",
              "GIT_CONFIG_KEY_1": "core.hooksPath", "GIT_CONFIG_VALUE_1": "/dev/null",
              "GIT_CONFIG_KEY_2": "safe.bareRepository", "GIT_CONFIG_VALUE_2": "explicit",
              "GIT_CONFIG_KEY_3": "core.pager", "GIT_CONFIG_VALUE_3": "cat",
              "PYTHONSAFEPATH": "1", "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1"}
MAX_GRADED_BYTES = 64 << 20  # file data of the work dir a grading copy may hold

# What may stay in a repository's config in the graded copy: (section, key), and for sections with a subsection
# name (branch.<name>.*, remote.<name>.*) the keys allowed there. Everything else goes: include/includeIf,
# filter.*, diff/merge drivers, core.fsmonitor, core.hooksPath, core.attributesFile, core.worktree, alias.*,
# core.pager, core.sshCommand, gpg programs, uploadpack/receivepack, ...
GIT_CONFIG_KEYS = {"core": {"repositoryformatversion", "filemode", "bare", "logallrefupdates", "ignorecase",
                            "precomposeunicode", "symlinks"},
                   "user": {"name", "email"}, "extensions": {"objectformat"}, "init": {"defaultbranch"}}
GIT_CONFIG_SUBSECTION_KEYS = {"branch": {"remote", "merge", "rebase"}, "remote": {"url", "fetch", "pushurl"}}
_GIT_SECTION = re.compile(r'^\[\s*([A-Za-z0-9.-]+)(?:\s+"([A-Za-z0-9_./@+-]*)")?\s*\]\s*(?:[#;].*)?$')
_GIT_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*?))?\s*$")
_GIT_SAFE_VALUE = re.compile(r"^[A-Za-z0-9_.,:@/+*~^= -]*$")


class GradingError(RuntimeError):
    """The hidden tests gave no readable verdict (a reply of the wrong length or shape, or the grading sandbox
    stopped while they ran). The episode is a `grader_error` with reward 0: the agent's program ran in the tests,
    so it may be the cause, and the failure is not marked as infrastructure."""


def sanitize_git_config(text: str) -> str:
    """A repository config reduced to `GIT_CONFIG_KEYS` / `GIT_CONFIG_SUBSECTION_KEYS` with plain values; a
    line that does not parse, a continued or quoted value, and every other section are dropped."""
    kept: dict[str, list[str]] = {}
    section: str | None = None
    allowed: set[str] = set()
    continued = False
    for raw in text.splitlines():
        line = raw.strip()
        if continued:
            continued = line.endswith("\\")
            continue
        if not line or line[0] in "#;":
            continue
        header = _GIT_SECTION.match(line)
        if header:
            name, subsection = header.group(1).lower(), header.group(2)
            if "." in name and subsection is None:  # the old [section.subsection] form: not kept
                section, allowed = None, set()
            elif subsection is None:
                section, allowed = f"[{name}]", GIT_CONFIG_KEYS.get(name, set())
            else:
                section, allowed = f'[{name} "{subsection}"]', GIT_CONFIG_SUBSECTION_KEYS.get(name, set())
            continue
        if line.startswith("["):
            section, allowed = None, set()
            continue
        if line.endswith("\\"):
            continued = True
            continue
        match = _GIT_KEY.match(line)
        if section is None or match is None:
            continue
        key, value = match.group(1).lower(), match.group(2)
        if key in allowed and (value is None or _GIT_SAFE_VALUE.match(value)):
            kept.setdefault(section, []).append(f"\t{key} = {value}" if value is not None else f"\t{key}")
    return "".join(f"{header}\n" + "".join(f"{line}\n" for line in lines) for header, lines in kept.items())


def _git_member_verdict(parts: list[str], member: tarfile.TarInfo) -> str:
    """"keep", "drop" or "config" for a tar member inside a `.git` folder (`parts` after that `.git`)."""
    if not parts:
        return "keep" if member.isdir() else "drop"  # a .git file or link points git at a folder of the agent's
    if member.issym() or member.islnk():
        return "drop"  # git's own files are never links; one could lead git to a config elsewhere
    if parts[0] in ("hooks", "modules", "worktrees") or parts in (["info", "attributes"], ["config.worktree"],
                                                                   ["commondir"], ["gitdir"]):
        return "drop"
    if parts == ["config"]:
        return "config" if member.isreg() else "drop"
    return "keep"


def sanitize_for_grading(archive: bytes) -> bytes:
    """The work dir's tar with every repository made inert for the grader: each `.git/config` reduced by
    `sanitize_git_config`; hooks, `info/attributes`, `config.worktree`, `commondir`, submodule and worktree
    folders removed; a `.git` that is a file or link, and links inside `.git`, removed. Other files as they are."""
    output = io.BytesIO()
    dropped: list[str] = []
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:", encoding="utf-8", errors="surrogateescape") as source, \
            tarfile.open(fileobj=output, mode="w", format=tarfile.GNU_FORMAT, encoding="utf-8",
                         errors="surrogateescape") as target:
        for member in source:
            name = member.name
            if any(name.startswith(prefix + "/") for prefix in dropped):
                continue
            parts = name.split("/")
            verdict = "keep"
            if ".git" in parts:
                verdict = _git_member_verdict(parts[parts.index(".git") + 1:], member)
            if verdict == "drop":
                dropped.append(name)
                continue
            content = source.extractfile(member) if member.isreg() or member.islnk() else None
            data = content.read() if content is not None else None
            if member.islnk() and any(member.linkname == prefix or member.linkname.startswith(prefix + "/")
                                      for prefix in dropped):
                member.type = tarfile.REGTYPE  # its first name was dropped: this name keeps the content
            if verdict == "config" and data is not None:
                data = sanitize_git_config(data.decode("utf-8", "replace")).encode()
            if data is not None and member.isreg():
                member.size = len(data)
            target.addfile(member, io.BytesIO(data) if data is not None and member.isreg() else None)
    return output.getvalue()


Snapshot = dict[str, list[Any]]


def _entry_key(entry: list[Any] | None, check_modes: bool) -> tuple[Any, ...] | None:
    if entry is None:
        return None
    return (entry[0], entry[1], entry[2]) if check_modes else (entry[0], entry[2])


def _ignored(path: str, ignore: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(path, pattern) or path.startswith(pattern.rstrip("/") + "/")
               for pattern in ignore)


def diff(before: Snapshot, after: Snapshot, *, check_modes: bool = False,
         ignore: Iterable[str] = ()) -> dict[str, list[Any] | None]:
    """The entries that differ between two snapshots: path -> its entry in `after`, or None if it was removed.

    Without `check_modes` only the kind and content (or link target) count; with it, permission bits too.
    """
    ignore = tuple(ignore)
    changes: dict[str, list[Any] | None] = {}
    for path in sorted(set(before) | set(after)):
        if _ignored(path, ignore):
            continue
        if _entry_key(before.get(path), check_modes) != _entry_key(after.get(path), check_modes):
            changes[path] = after.get(path)
    return changes


@dataclass(frozen=True)
class StateComparison:
    """How an agent's file system compares with the expected one (InterCode-style partial credit).

    `paths`: Jaccard overlap of the sets of changed paths; `content`: share of the paths either side changed
    whose final entry is the expected one; `exact`: every such path matches.
    """

    exact: bool
    paths: float
    content: float
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)

    def message(self) -> str:
        parts = []
        for label, items in (("not changed as expected", self.missing), ("changed but should not be", self.unexpected),
                             ("changed differently", self.wrong)):
            if items:
                parts.append(f"{label}: {', '.join(items[:5])}" + (" ..." if len(items) > 5 else ""))
        return "; ".join(parts)


def compare_states(baseline: Snapshot, final: Snapshot, expected: Mapping[str, list[Any] | None], *,
                   check_modes: bool = False, ignore: Iterable[str] = ()) -> StateComparison:
    """Compare the agent's `final` snapshot with `baseline` + `expected` changes (from the gold solution)."""
    ignore = tuple(ignore)
    agent_changes = diff(baseline, final, check_modes=check_modes, ignore=ignore)
    expected = {path: entry for path, entry in expected.items() if not _ignored(path, ignore)}
    union = sorted(set(agent_changes) | set(expected))
    if not union:
        return StateComparison(True, 1.0, 1.0)
    missing, unexpected, wrong = [], [], []
    matches = 0
    for path in union:
        want = expected[path] if path in expected else baseline.get(path)
        if _entry_key(final.get(path), check_modes) == _entry_key(want, check_modes):
            matches += 1
        elif path not in agent_changes:
            missing.append(path)
        elif path not in expected:
            unexpected.append(path)
        else:
            wrong.append(path)
    overlap = len(set(agent_changes) & set(expected))
    return StateComparison(matches == len(union), overlap / len(union), matches / len(union),
                           missing, unexpected, wrong)


class Workspace:
    """The state every CLI tool receives: one episode's sandbox with its fixture loaded.

    Args:
        sandbox: A clean sandbox (from the pool); the workspace gives it back on `close`.
        fixture: The file tree the episode starts from.
        command_timeout: Seconds one `run_shell` call may run before it is killed.
    """

    _baselines: ClassVar[dict[tuple[str, str], Snapshot]] = {}  # (fixture digest, backend) -> snapshot
    _mode_fixes: ClassVar[dict[tuple[str, str], list[tuple[str, int]]]] = {}  # modes extraction dropped there
    _baselines_lock = threading.Lock()

    def __init__(self, sandbox: Sandbox, fixture: Fixture, *, command_timeout: float = 20.0,
                 pool_size: int = 2) -> None:
        self.sandbox = sandbox
        self.pool_size = pool_size
        self.fixture = fixture
        self.command_timeout = command_timeout
        self.last_output = ""
        self.commands = 0
        self.sealed = False
        self._released = False

    @classmethod
    def open(cls, fixture: Fixture, *, backend: str = "auto", pool_size: int = 2, command_timeout: float = 20.0,
             allow_weak_isolation: bool = False) -> Workspace:
        """Take a clean sandbox from the shared pool and load `fixture` into it.

        `allow_weak_isolation` lets `backend="auto"` fall back to the local backend (see `Sandbox.create`).
        """
        options = {"allow_weak_isolation": True} if allow_weak_isolation and backend == "auto" else {}
        pool = get_pool(size=pool_size, backend=backend, env=SHELL_ENV, **options)
        for attempt in range(3):
            sandbox = pool.acquire(timeout=120)
            workspace = cls(sandbox, fixture, command_timeout=command_timeout, pool_size=pool_size)
            try:
                workspace.load()
                return workspace
            except SandboxError as error:
                # Seen under heavy load: the sandbox refuses a request once. A reset (on the next acquire) cures it.
                workspace.close()
                if attempt == 2:
                    raise
                logger.warning("loading fixture %s failed (%s); retrying in a reset sandbox", fixture.name, error)
            except BaseException:
                workspace.close()
                raise
        raise AssertionError("unreachable")

    @property
    def root(self) -> str:
        """The work dir as the sandbox's processes see it."""
        return self.sandbox.workdir

    def load(self) -> None:
        """Extract the fixture and make sure its permission bits are the fixture's.

        The sandbox's own tar extraction restores modes exactly where its Python has no extraction filter (the
        image's and Debian bookworm's 3.11.2); where a filter drops bits (group/other write), the first load of a
        fixture notices it in the baseline snapshot and every load then puts them back with one `chmod` pass.
        """
        # Relative paths: the local backend maps absolute ones under /tmp (where its own work dir lives) elsewhere.
        self.sandbox.put_archive(self.fixture.tar, ".")
        key = (self.fixture.digest, self.sandbox.backend)
        with self._baselines_lock:
            known = key in self._baselines
            fixes = self._mode_fixes.get(key, [])
        if known:
            if fixes:
                self._apply_modes(fixes)
            return
        snapshot = self.snapshot()
        if snapshot is None:
            raise SandboxError(f"the fixture {self.fixture.name} has more than {MAX_ENTRIES} entries")
        fixes = [(path, mode) for path, mode in self.fixture.mode_fixes
                 if path in snapshot and snapshot[path][1] != mode]
        if fixes:
            self._apply_modes(fixes)
            snapshot = self.snapshot()
            assert snapshot is not None
        with self._baselines_lock:
            self._baselines[key] = snapshot
            self._mode_fixes[key] = fixes

    def _apply_modes(self, fixes: list[tuple[str, int]]) -> None:
        code = (f"import os as _o\nfor _p, _m in {json.dumps(fixes)}:\n"
                f"    _o.chmod(_o.path.join({self.root!r}, _p), _m)\n")
        result = self.sandbox.run_python(code, timeout=30)
        if not result.ok:
            raise SandboxError(f"could not restore the fixture's permissions: {result.stderr[-500:]}")

    def snapshot(self) -> Snapshot | None:
        """Every entry under the work dir (see the module docstring); None if there are too many to list."""
        code = (SNAPSHOT_CODE + f"\nprint(_j.dumps(_agentgym_snapshot({self.root!r}, {SKIP_NAMES!r}, "
                f"{SKIP_TOP!r}, {MAX_ENTRIES})))\n")
        result = self.sandbox.run_python(code, timeout=120)
        if not result.ok or result.truncated:
            raise SandboxError(f"could not list the work dir (exit {result.exit_code}): {result.stderr[-500:]}")
        try:
            value = json.loads(result.stdout)
        except json.JSONDecodeError:  # e.g. the agent made the work dir unreadable (`chmod 000 .`)
            raise SandboxError(f"could not list the work dir: {(result.stderr or result.stdout)[-500:]!r}") from None
        return value if value is None else dict(value)

    def baseline(self) -> Snapshot:
        """The snapshot of the freshly loaded fixture on this backend (taken at the first load, once per process)."""
        key = (self.fixture.digest, self.sandbox.backend)
        with self._baselines_lock:
            cached = self._baselines.get(key)
        if cached is None:
            raise RuntimeError("baseline() before load(): the baseline is taken when the fixture is first loaded")
        return cached

    def seal(self) -> bool:
        """End every process of the episode (background jobs, `nohup`, `setsid`, double forks, processes that
        ignore SIGTERM) so that nothing the agent started runs while the grader reads the final state.

        Return whether the sandbox could prove it reached them all (False only for a local sandbox without
        namespaces running as the caller's own user id).
        """
        self.sealed = self.sandbox.kill_processes()
        if not self.sealed:
            logger.warning("CLI-v0: this sandbox cannot guarantee that every agent process was ended before "
                           "grading (%s)", self.sandbox.isolation)
        return self.sealed

    def run_tests(self, tests: list[dict[str, str]], timeout: float = 60.0) -> list[tuple[str, bool, str]]:
        """Run hidden test scripts after the episode: (name, passed, output tail) for each, in order.

        Call `seal` first. The tests never run where the agent ran: the work dir is exported as a tar by the
        sandbox's supervisor (no agent process is left), every repository in it is made inert on the host
        (`sanitize_for_grading`), and the copy is loaded into a grading sandbox from a pool of its own
        (`Sandbox.create(grader=True)`: a fresh container for Docker), reset before each use. There each script
        runs as `bash --noprofile --norc` in the work dir, as a user id no agent process had and other than the
        grading supervisor's, with `GRADER_ENV` only, time-limited; its verdict is the supervisor's `waitpid` status
        and output read from pipes only the supervisor holds (see `Sandbox.grade`). A test passes when it exits 0
        and, if it carries a `stdout`, printed exactly that: expected outputs stay on the host.

        Raises:
            InfrastructureError: the grading copy could not be made or loaded (no agent code had run there yet).
            GradingError: the tests gave no readable verdict (see `GradingError`).
        """
        if not tests:
            return []
        try:
            archive = self.sandbox.export_workdir(MAX_GRADED_BYTES)
        except SandboxError as error:
            if "too large" in str(error):  # the agent's doing: the tests fail, nothing is wrong with the grader
                return [(test.get("name", f"test {index}"), False, str(error)) for index, test in enumerate(tests)]
            raise InfrastructureError(f"the work dir could not be exported for grading: {error}") from error
        graded_copy = sanitize_for_grading(archive)
        try:
            pool = get_pool(size=self.pool_size, backend=self.sandbox.backend, env=SHELL_ENV, grader=True)
            grader = pool.acquire(timeout=120)
        except SandboxError as error:
            raise InfrastructureError(f"no grading sandbox: {error}") from error
        try:
            try:
                grader.load_workdir(graded_copy)
            except SandboxError as error:
                raise InfrastructureError(f"the work dir could not be loaded for grading: {error}") from error
            try:
                outcomes = grader.grade([test["script"] for test in tests], env=GRADER_ENV, timeout=timeout)
            except SandboxError as error:
                raise GradingError(f"the hidden tests gave no verdict: {error}") from error
        finally:
            grader.close()
        return self._read_outcomes(tests, outcomes)

    @staticmethod
    def _read_outcomes(tests: list[dict[str, str]], outcomes: Any) -> list[tuple[str, bool, str]]:
        """Each test's (name, passed, tail) from the grading sandbox's reply: exactly one well-formed outcome
        per test, or `GradingError`."""
        if not isinstance(outcomes, list) or len(outcomes) != len(tests):
            count = len(outcomes) if isinstance(outcomes, list) else type(outcomes).__name__
            raise GradingError(f"the grader answered {count} outcomes for {len(tests)} tests")
        graded = []
        for index, (test, outcome) in enumerate(zip(tests, outcomes)):
            if not (isinstance(outcome, list) and len(outcome) == 3 and type(outcome[0]) is int
                    and isinstance(outcome[1], str) and isinstance(outcome[2], str)):
                raise GradingError(f"the grader's outcome {index} is malformed: {str(outcome)[:80]!r}")
            status, stdout, tail = outcome
            passed = status == 0
            want = test.get("stdout")
            if passed and want is not None and stdout.rstrip("\n") != str(want).rstrip("\n"):
                passed = False
                tail = "the output differs from the expected one:\n" + stdout[-300:]
            graded.append((test.get("name", f"test {index}"), passed, str(tail)))
        return graded

    def close(self) -> None:
        """Give the sandbox back to its pool (it is reset before its next use). Idempotent."""
        if not self._released:
            self._released = True
            self.sandbox.close()
