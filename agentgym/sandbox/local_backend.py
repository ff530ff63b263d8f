"""The local backend: the supervisor as a host subprocess in a temp dir, with rlimits and, where the kernel allows,
new PID and network namespaces (and a user namespace when not root).

Its isolation is weaker than Docker's: there is no separate root file system, so code can read whatever the user
it runs as can read on the host (as root, the supervisor drops to an unprivileged uid of its own first), and memory is
limited per process (address space), not for the sandbox as a whole. Where the kernel gives it a mount namespace, the
agentgym cache (task answers, hidden tests), the invoking user's home and the other sandboxes' directories are
covered by empty mounts before the supervisor drops privileges; where it does not, it says plainly what the
sandbox can read (`LocalSandbox.isolation`, logged once per process, shown by `agentgym sandbox doctor`).

Each sandbox lives in a directory of its own (mode 0700, owned by the sandbox's user) under a work root that its
user can enter: `agentgym-sandboxes-UID` in the first of $TMPDIR, /tmp, /var/tmp, /dev/shm whose every parent the
unprivileged user may traverse, so a private (0700) temp dir of the caller is never a problem.
"""

from __future__ import annotations

import functools
import itertools
import logging
import os
import resource
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from agentgym.sandbox.base import Sandbox, SandboxError, Transport, WorkerLost
from agentgym.sandbox.docker_backend import parse_size

logger = logging.getLogger(__name__)

WORKER_PATH = Path(__file__).with_name("worker.py")
SANDBOX_UID_BASE = 100_000
GRADER_UID_BASE = 1_100_000  # grader sandboxes' test users: a range no agent sandbox's uid falls in
_sandbox_numbers = itertools.count()


def allocate_uid(grader: bool = False) -> int:
    """A user id of its own for each local sandbox (run as root). The process limit (RLIMIT_NPROC) counts
    every process of a user id across the host, so sandboxes sharing one id would starve each other. A grader
    sandbox's tests get a uid from a range of their own, so they never share one with an agent sandbox."""
    base = GRADER_UID_BASE if grader else SANDBOX_UID_BASE
    return base + (os.getpid() % 10_000) * 100 + next(_sandbox_numbers) % 100
CPU_SECONDS = 3600  # per process; a guard against a runaway loop left behind, not a per-call timeout


_warned_isolation = False
_warned_lock = threading.Lock()


# Top-level folders a local sandbox keeps seeing in its mount namespace: what programs need to run. Every other
# one (/home, /root, /tmp, /var, /opt, /srv, /mnt, /run, /work, ...) is covered by an empty mount, so task files a
# user imported anywhere there, sockets such as Docker's, and other users' files are out of sight.
SYSTEM_TOP_LEVEL = ("bin", "boot", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "sys", "usr")


def protected_paths() -> list[Path]:
    """Host directories a local sandbox must not read: the agentgym cache and the invoking user's home."""
    from agentgym.cache import cache_root

    found: list[Path] = []
    for candidate in (cache_root(), Path.home(), Path(os.environ.get("HOME") or "/")):
        try:
            real = candidate.expanduser().resolve()
        except (OSError, RuntimeError):
            continue
        if str(real) != "/" and real not in found:
            found.append(real)
    return found


def hidden_top_level(needed: list[Path]) -> list[Path]:
    """The top-level folders a namespaced local sandbox covers: all but `SYSTEM_TOP_LEVEL` and those holding a
    path in ``needed`` (the supervisor's interpreter, when it lives outside the system folders)."""
    keep = set(SYSTEM_TOP_LEVEL)
    for path in needed:
        parts = path.resolve().parts
        if len(parts) > 1:
            keep.add(parts[1])
    found = []
    for entry in sorted(Path("/").iterdir()):
        try:
            if entry.name not in keep and entry.is_dir() and not entry.is_symlink():
                found.append(entry)
        except OSError:
            continue
    return found


def _inside(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


def others_can_enter(path: Path) -> bool:
    """Whether a user that owns none of them can traverse every directory from / down to ``path``."""
    for directory in [path, *path.parents]:
        try:
            if not directory.stat().st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
    return True


def others_can_read(path: Path) -> bool:
    """Whether a user that owns none of it can list ``path`` (read and traverse it and its parents)."""
    try:
        return others_can_enter(path) and bool(path.stat().st_mode & stat.S_IROTH)
    except OSError:
        return False


def work_root(drop_privileges: bool) -> Path:
    """The directory that holds this process's local sandboxes (see the module docstring), created mode 0711.

    Raises:
        SandboxError: if no candidate is usable; the message says what the backend needs.
    """
    protected = protected_paths()
    candidates = [Path(tempfile.gettempdir()), Path("/tmp"), Path("/var/tmp"), Path("/dev/shm")]
    refused: list[str] = []
    for base in candidates:
        try:
            base = base.resolve()
        except (OSError, RuntimeError):
            continue
        if not base.is_dir():
            continue
        if any(_inside(base, path) for path in protected):
            refused.append(f"{base} (inside {next(p for p in protected if _inside(base, p))}, which is hidden)")
            continue
        if drop_privileges and not others_can_enter(base):
            refused.append(f"{base} (the sandbox's unprivileged user cannot enter it or a parent)")
            continue
        root = base / f"agentgym-sandboxes-{os.geteuid()}"
        try:
            root.mkdir(mode=0o711, exist_ok=True)
            info = root.lstat()
        except OSError as error:
            refused.append(f"{root} ({error})")
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            refused.append(f"{root} (exists but is not a directory of this user: remove it)")
            continue
        if stat.S_IMODE(info.st_mode) != 0o711:
            root.chmod(0o711)
        return root
    raise SandboxError("the local sandbox needs a temp directory that its unprivileged user can enter (every "
                       "parent directory with the x bit for others, like /tmp with mode 1777); none of these "
                       f"works: {'; '.join(refused) or ', '.join(map(str, candidates))}. Set TMPDIR to such a "
                       "directory or run `chmod o+x` on the parents")


class PipeTransport(Transport):
    """The supervisor subprocess's stdin and stdout."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.write_fd = process.stdin.fileno()
        self.read_fd = process.stdout.fileno()

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.write_fd, view):]
        except OSError as error:
            raise WorkerLost(f"writing to the sandbox process failed: {error}") from error

    def receive(self, deadline: float) -> bytes:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise WorkerLost("no answer before the deadline")
        ready, _, _ = select.select([self.read_fd], [], [], remaining)
        if not ready:
            raise WorkerLost("no answer before the deadline")
        try:
            data = os.read(self.read_fd, 1 << 20)
        except OSError as error:
            raise WorkerLost(f"reading from the sandbox process failed: {error}") from error
        if not data:
            raise WorkerLost("the sandbox process exited")
        return data

    def close(self) -> None:
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass


@functools.lru_cache(maxsize=1)
def namespace_prefix() -> tuple[str, ...]:
    """Return the ``unshare`` command line that gives new PID and network namespaces here, or () if none works."""
    if shutil.which("unshare") is None:
        return ()
    candidates: list[tuple[str, ...]] = [("unshare", "--pid", "--net", "--mount-proc", "--fork", "--kill-child")]
    if os.geteuid() != 0:
        candidates = [("unshare", "--user", "--map-root-user", "--pid", "--net", "--mount-proc", "--fork",
                       "--kill-child")]
    for prefix in candidates:
        try:
            probe = subprocess.run([*prefix, "sh", "-c", "echo $$"], capture_output=True, text=True, timeout=10,
                                   check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0 and probe.stdout.strip() == "1":
            return prefix
    return ()


def sandbox_python() -> str:
    """Return the interpreter for the supervisor: ``AGENTGYM_SANDBOX_PYTHON``, else the system ``python3`` (readable
    by the unprivileged user the supervisor drops to, like the image's), else this interpreter."""
    override = os.environ.get("AGENTGYM_SANDBOX_PYTHON")
    if override:
        return override
    return "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable


def _warn_once(message: str) -> None:
    global _warned_isolation
    with _warned_lock:
        if _warned_isolation:
            return
        _warned_isolation = True
    logger.warning("sandbox: %s", message)


class LocalSandbox(Sandbox):
    """A sandbox as a host subprocess; see :meth:`Sandbox.create` for the arguments (``cpus`` is ignored)."""

    backend = "local"

    def __init__(self, *, memory: str, pids: int, workdir: str, workdir_size: str, env: dict[str, str],
                 max_output: int, python_prelude: str | None, grader: bool = False) -> None:
        self.drop_privileges = os.geteuid() == 0
        self.grader = grader
        self.root = Path(tempfile.mkdtemp(prefix=f"sandbox-{os.getpid()}-", dir=work_root(self.drop_privileges)))
        self.virtual_workdir = workdir.rstrip("/") or "/"
        real_workdir = self.root / "work"
        self.tmpdir = self.root / "tmp"
        real_workdir.mkdir()
        self.tmpdir.mkdir()
        super().__init__(workdir=str(real_workdir), max_output=max_output, python_prelude=python_prelude)
        self.uid = allocate_uid(grader) if self.drop_privileges else os.geteuid()
        if self.drop_privileges:
            for path in (self.root, real_workdir, self.tmpdir):
                os.chown(path, self.uid, self.uid)
        self.limits = {"memory": parse_size(memory), "pids": pids, "file_size": parse_size(workdir_size)}
        self.environment = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": self.workdir, "TMPDIR": str(self.tmpdir),
                            "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", **env}
        self.process: subprocess.Popen[bytes] | None = None
        self.namespaces = namespace_prefix()
        # With a private mount namespace (--mount-proc makes one) the supervisor covers these before dropping:
        # every top-level folder but the system's (see SYSTEM_TOP_LEVEL), then the cache and home if they lie
        # under a kept one, and the other sandboxes' folders; its own folder is bound back.
        self.hidden = ([*hidden_top_level([Path(sandbox_python())]), *protected_paths(), self.root.parent]
                       if "--mount-proc" in self.namespaces else [])
        try:
            self._boot()
        except (WorkerLost, SandboxError) as error:
            self._destroy()
            raise SandboxError(f"the local sandbox process did not start: {error}") from error
        _warn_once(self.isolation)

    @property
    def isolation(self) -> str:
        who = f"user id {self.uid}" if self.drop_privileges else f"your own user id ({self.uid})"
        if self.hidden:
            return (f"local (weak isolation): a host subprocess as {who} in its own PID, network and mount "
                    f"namespaces; it cannot read {', '.join(map(str, self.hidden[:-1]))} or other sandboxes "
                    "(covered by empty mounts) and every process it starts is ended before grading, but it can "
                    "read every other file of the host that others may read; memory is limited per process")
        if self.drop_privileges:
            exposed = [str(path) for path in protected_paths() if others_can_read(path)]
            safe = [str(path) for path in protected_paths() if not others_can_read(path)]
            return (f"local (weak isolation, no namespaces here): a host subprocess as {who}; "
                    + (f"it cannot read {', '.join(safe)} (not open to others); " if safe else "")
                    + (f"it CAN read {', '.join(exposed)} (chmod 700 them to protect them); " if exposed else "")
                    + "it can read every world-readable file of the host and see its processes")
        return (f"local (weak isolation, no namespaces here): a host subprocess as {who}; it CAN read "
                "everything you can, including your home and the agentgym cache (task answers, hidden tests), and "
                "processes it leaves running may outlive the episode. Use Docker (`bash .ci/setup-docker.sh`) for "
                "any agent you do not trust")

    def _set_limits(self) -> None:
        resource.setrlimit(resource.RLIMIT_AS, (self.limits["memory"], self.limits["memory"]))
        resource.setrlimit(resource.RLIMIT_FSIZE, (self.limits["file_size"], self.limits["file_size"]))
        resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if self.drop_privileges:
            # Counted per real user id: only meaningful once the supervisor has dropped to its own uid.
            resource.setrlimit(resource.RLIMIT_NPROC, (self.limits["pids"], self.limits["pids"]))

    def _start(self) -> Transport:
        self._kill_process()
        command = [*self.namespaces, sandbox_python(), "-I", str(WORKER_PATH), "--workdir", self.workdir,
                   "--clean", self.workdir, "--clean", str(self.tmpdir)]
        if self.drop_privileges and self.grader:
            command += ["--run-as", str(self.uid)]  # the supervisor stays root; its tests run as self.uid
        elif self.drop_privileges:
            command += ["--uid", str(self.uid), "--own-uid"]
        for path in self.hidden:
            command += ["--hide", str(path)]
        if self.hidden:
            command += ["--keep", str(self.root)]
        for directory in (self.workdir, str(self.tmpdir)):
            for entry in Path(directory).iterdir():  # a restart starts from an empty work dir, as Docker's does
                shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, cwd=self.workdir, env=self.environment,
                                        # rlimits must be set between fork and exec; the function only calls
                                        # setrlimit, which is safe in a child forked from a threaded process.
                                        start_new_session=True, preexec_fn=self._set_limits)  # noqa: PLW1509
        return PipeTransport(self.process)

    def _map_path(self, path: str) -> str:
        """Map the Docker layout's ``/work/...`` and ``/tmp/...`` onto this sandbox's own directories.

        Paths already inside this sandbox's real directories (which live under the host's /tmp) are kept.
        """
        for real in (self.workdir, str(self.tmpdir)):
            if path == real or path.startswith(real + "/"):
                return path
        for virtual, real in ((self.virtual_workdir, self.workdir), ("/tmp", str(self.tmpdir))):
            if path == virtual or path.startswith(virtual + "/"):
                return real + path[len(virtual):]
        return path

    def _kill_process(self) -> None:
        if self.process is None:
            return
        process, self.process = self.process, None
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()

    def _stop(self) -> None:
        if self.process is not None and not self.namespaces and self.process.poll() is None:
            # Without a PID namespace our children are in sessions of their own: have the supervisor end them.
            try:
                if self._transport is not None:
                    self._next_id += 1
                    self._transport.send(b'{"op": "reset", "id": %d}\n' % self._next_id)
                    self._read_reply(self._next_id, time.monotonic() + 5)
            except WorkerLost as error:
                logger.warning("could not stop the local sandbox's processes cleanly: %s", error)
        self._kill_process()
        shutil.rmtree(self.root, ignore_errors=True)

    def __repr__(self) -> str:
        return f"<LocalSandbox {self.root}>"
