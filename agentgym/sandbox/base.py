"""The Sandbox contract shared by every backend: results, errors, the request protocol and process-exit cleanup.

A backend starts the supervisor (``worker.py``) somewhere isolated and hands this class a transport to it; this
class turns method calls into the supervisor's JSON requests, and when the supervisor stops answering (killed from
outside, daemon restarted) asks the backend to start it again.
"""

from __future__ import annotations

import atexit
import base64
import io
import json
import logging
import os
import signal
import tarfile
import threading
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing_extensions import Self

logger = logging.getLogger(__name__)

DEFAULT_MAX_OUTPUT = 1 << 20
# Extra seconds the host waits past a call's timeout: the supervisor enforces the timeout itself and answers
# within about INTERRUPT_GRACE of it, so silence beyond this means the supervisor is gone or wedged.
HOST_GRACE = 5.0
LABEL = "agentgym"


@dataclass(frozen=True)
class ExecResult:
    """What one command or snippet produced.

    Attributes:
        stdout: Standard output, decoded as UTF-8 (invalid bytes replaced), at most ``max_output`` bytes.
        stderr: Standard error, the same way; notes from the sandbox (timeouts, restarts) are appended here.
        exit_code: The command's exit status; 124 when it timed out; 1 for a Python exception.
        timed_out: Whether the call ran past its timeout and was stopped.
        truncated: Whether stdout or stderr was cut at ``max_output`` bytes.
    """

    stdout: str
    stderr: str
    exit_code: int
    timed_out: bool = False
    truncated: bool = False

    @property
    def ok(self) -> bool:
        """Whether the command exited with status 0."""
        return self.exit_code == 0


class SandboxError(RuntimeError):
    """The sandbox could not do what was asked (no backend, daemon gone, file missing); the message says why."""


class WorkerLost(Exception):
    """The supervisor stopped answering: its transport closed or it overran the host's deadline."""


class Transport(ABC):
    """A byte stream to the supervisor."""

    @abstractmethod
    def send(self, data: bytes) -> None:
        """Write ``data`` to the supervisor's standard input; raise WorkerLost if it is gone."""

    @abstractmethod
    def receive(self, deadline: float) -> bytes:
        """Return the next bytes of the reply stream; raise WorkerLost at end of stream or past ``deadline``."""

    @abstractmethod
    def close(self) -> None:
        """Release the stream (idempotent)."""


_live: weakref.WeakSet[Sandbox] = weakref.WeakSet()
_cleanup_installed = False
_cleanup_lock = threading.Lock()


def close_all() -> None:
    """Close every sandbox this process created and has not closed (run at exit and on SIGTERM)."""
    for sandbox in list(_live):
        try:
            sandbox._destroy()
        except Exception as error:  # noqa: BLE001 - at exit, report and go on so the others are still removed
            logger.warning("could not close sandbox %r: %s", sandbox, error)


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    close_all()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _install_cleanup() -> None:
    global _cleanup_installed
    with _cleanup_lock:
        if _cleanup_installed:
            return
        _cleanup_installed = True
        atexit.register(close_all)
        try:
            if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
                signal.signal(signal.SIGTERM, _on_sigterm)
        except ValueError:
            pass  # not the main thread: SIGTERM keeps its handler, atexit still covers a normal exit


class Sandbox(ABC):
    """An isolated place to run shell commands and Python code, with a persistent shell and namespace.

    Make one with :meth:`Sandbox.create`; use it as a context manager or call :meth:`close`.
    """

    backend: str = ""

    def __init__(self, *, workdir: str, max_output: int = DEFAULT_MAX_OUTPUT, python_prelude: str | None = None) -> None:
        self.workdir = workdir
        self.max_output = max_output
        self.python_prelude = python_prelude
        self._transport: Transport | None = None
        self._buffer = b""
        self._next_id = 0
        self._lock = threading.RLock()
        self._closed = False
        self._pool: Any = None  # the SandboxPool this sandbox came from, if any
        self.restarts = 0
        _install_cleanup()
        _live.add(self)

    # ----- construction ---------------------------------------------------------------------------------------
    @staticmethod
    def create(backend: str = "auto", *, image: str | None = None, memory: str = "512m", pids: int = 128,
               cpus: float = 1.0, workdir: str = "/work", workdir_size: str = "256m",
               env: Mapping[str, str] | None = None, max_output: int = DEFAULT_MAX_OUTPUT,
               python_prelude: str | None = None, allow_weak_isolation: bool = False,
               grader: bool = False) -> Sandbox:
        """Start a sandbox and return it once its supervisor answers.

        Args:
            backend: ``"docker"``, ``"local"`` or ``"auto"``. With ``"auto"`` the ``AGENTGYM_SANDBOX`` environment
                variable decides if set; otherwise Docker when a daemon answers and the image exists or can be
                built. ``"auto"`` takes the local backend (weaker isolation) only when ``allow_weak_isolation``
                is true or ``AGENTGYM_ALLOW_WEAK_ISOLATION=1`` is set; otherwise it raises, saying how to fix it.
            image: Docker image; default the image of the current recipe (built on first use).
            memory: Memory limit (Docker units such as ``"512m"``); swap is not allowed on top.
            pids: Most processes at once.
            cpus: CPUs (Docker) ; the local backend ignores it.
            workdir: The working directory inside the sandbox (a size-limited tmpfs in Docker).
            workdir_size: Size of the working directory.
            env: Extra environment variables for commands and code.
            max_output: Bytes kept of each of stdout and stderr per call; the rest is dropped, ``truncated`` set.
            python_prelude: Python run in the namespace at start and after every reset (e.g. to preload a client).
            allow_weak_isolation: Let ``"auto"`` fall back to the local backend when Docker does not work.
            grader: Make a grading sandbox (see :meth:`grade`): its supervisor keeps a user id of its own (root of
                the container, or of the host for a local sandbox run as root) and runs every file operation,
                command and test as another unprivileged user id, one no agent sandbox uses. A local sandbox of
                a normal user has one user id only: there the tests share the supervisor's (not dumpable) user.

        Raises:
            SandboxError: if the requested backend cannot start; the message says how to fix it.
        """
        from agentgym.sandbox.backends import choose_backend

        chosen = choose_backend(backend, image, allow_weak_isolation=allow_weak_isolation)
        options: dict[str, Any] = {"memory": memory, "pids": pids, "workdir": workdir, "workdir_size": workdir_size,
                                   "env": dict(env or {}), "max_output": max_output, "python_prelude": python_prelude,
                                   "grader": grader}
        if chosen == "docker":
            from agentgym.sandbox.docker_backend import DockerSandbox

            return DockerSandbox(image=image, cpus=cpus, **options)
        from agentgym.sandbox.local_backend import LocalSandbox

        return LocalSandbox(**options)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # ----- what backends provide ------------------------------------------------------------------------------
    @abstractmethod
    def _start(self) -> Transport:
        """Start (or restart) the supervisor and return a transport to it."""

    @abstractmethod
    def _stop(self) -> None:
        """Stop the supervisor and free everything the backend holds (idempotent)."""

    def _map_path(self, path: str) -> str:
        """Translate a sandbox path for the supervisor (the local backend maps ``/work/...`` to its temp dir)."""
        return path

    # ----- protocol -------------------------------------------------------------------------------------------
    def _boot(self) -> None:
        """Start the supervisor, wait for its ready line, run the prelude."""
        self._buffer = b""
        self._transport = self._start()
        ready = self._read_reply(0, time.monotonic() + 60)
        if not ready.get("ok", True):
            raise SandboxError(f"the sandbox did not start: {ready.get('error')}")
        self._run_prelude()

    def _run_prelude(self) -> None:
        if self.python_prelude:
            result = self.run_python(self.python_prelude, timeout=60)
            if not result.ok:
                raise SandboxError(f"the python_prelude failed (exit {result.exit_code}):\n{result.stderr[-2000:]}")

    def _read_reply(self, request_id: int, deadline: float) -> dict[str, Any]:
        assert self._transport is not None
        while True:
            while b"\n" in self._buffer:
                line, _, self._buffer = self._buffer.partition(b"\n")
                try:
                    message = json.loads(line)
                except json.JSONDecodeError:
                    logger.warning("dropping a malformed line from the sandbox: %r", line[:200])
                    continue
                if message.get("id") == request_id:
                    return dict(message)
                # A reply to a request we gave up on: drop it.
            self._buffer += self._transport.receive(deadline)

    def _call(self, request: dict[str, Any], wait: float) -> dict[str, Any]:
        """Send one request and return its reply; raise WorkerLost if the supervisor is gone."""
        if self._closed:
            raise SandboxError("this sandbox is closed; create a new one with Sandbox.create()")
        if self._transport is None:
            self._boot()
        assert self._transport is not None
        self._next_id += 1
        request["id"] = self._next_id
        self._transport.send(json.dumps(request).encode() + b"\n")
        return self._read_reply(self._next_id, time.monotonic() + wait)

    def _recover(self, lost: WorkerLost) -> None:
        logger.warning("sandbox %s stopped answering (%s); restarting it", self, lost)
        self.restarts += 1
        if self._transport is not None:
            self._transport.close()
            self._transport = None
        try:
            self._boot()
        except WorkerLost as again:
            raise SandboxError(f"the sandbox could not be restarted: {again}") from again

    def _file_call(self, request: dict[str, Any], wait: float = 120) -> dict[str, Any]:
        """A request that is safe to repeat: on a lost supervisor, restart once and retry."""
        with self._lock:
            try:
                reply = self._call(dict(request), wait)
            except WorkerLost as lost:
                self._recover(lost)
                reply = self._call(dict(request), wait)
        if not reply.get("ok"):
            error = str(reply.get("error", "unknown error"))
            if error.startswith("FileNotFoundError"):
                raise FileNotFoundError(f"{request.get('path', '')}: no such file in the sandbox ({error})")
            raise SandboxError(f"{request['op']} failed in the sandbox: {error}")
        return reply

    def _execute(self, request: dict[str, Any], timeout: float) -> ExecResult:
        request.update(timeout=timeout, max_output=self.max_output)
        with self._lock:
            try:
                reply = self._call(request, timeout + HOST_GRACE)
            except WorkerLost as lost:
                self._recover(lost)
                return ExecResult(
                    stdout="", stderr=f"[the sandbox stopped during this call ({lost}); it was restarted and its "
                                      "files, shell and Python state are lost]\n", exit_code=137)
        if not reply.get("ok"):
            raise SandboxError(f"the sandbox refused the request: {reply.get('error')}")
        return ExecResult(stdout=reply["stdout"], stderr=reply["stderr"], exit_code=int(reply["exit_code"]),
                          timed_out=bool(reply["timed_out"]), truncated=bool(reply["truncated"]))

    # ----- public API -----------------------------------------------------------------------------------------
    def run(self, command: str, timeout: float = 30) -> ExecResult:
        """Run ``command`` in the sandbox's persistent bash and return what it produced.

        The working directory, shell variables and functions persist across calls. A command that runs past
        ``timeout`` seconds is killed with its shell (exit code 124, ``timed_out``); the next call gets a new shell
        with the same working directory and exported variables. Standard input is /dev/null.
        """
        return self._execute({"op": "sh", "command": command}, timeout)

    def run_python(self, code: str, timeout: float = 30) -> ExecResult:
        """Run Python ``code`` in the sandbox's persistent namespace, echoing a final expression like the REPL.

        An exception gives exit code 1 with its traceback on stderr. Past ``timeout`` the code is interrupted
        (KeyboardInterrupt; the namespace survives) and, if it does not stop within 0.1 s, its
        interpreter is killed (the namespace is lost). Either way ``timed_out`` is set and the exit code is 124.
        """
        return self._execute({"op": "py", "code": code}, timeout)

    def put_files(self, files: Mapping[str, bytes | str]) -> None:
        """Write files into the sandbox; relative paths are under the work dir, parent directories are created.

        Raises:
            SandboxError: if a file cannot be written (for example the work dir is full).
        """
        items = [{"path": self._map_path(path),
                  "data": base64.b64encode(data.encode() if isinstance(data, str) else data).decode()}
                 for path, data in files.items()]
        self._file_call({"op": "put", "files": items})

    def put_archive(self, tar_bytes: bytes, path: str | None = None) -> None:
        """Extract a tar archive (optionally compressed) into ``path`` (default: the work dir).

        Members that would land outside ``path`` (absolute names, ``..``, links pointing out) are refused.

        Raises:
            SandboxError: if the archive is malformed, unsafe, or does not fit.
        """
        self._file_call({"op": "tar", "data": base64.b64encode(tar_bytes).decode(),
                         "path": self._map_path(path or self.workdir)})

    def get_file(self, path: str, max_bytes: int = 64 << 20) -> bytes:
        """Return the contents of a file in the sandbox (relative paths are under the work dir).

        Raises:
            FileNotFoundError: if there is no such file.
            SandboxError: if it cannot be read or is larger than ``max_bytes``.
        """
        reply = self._file_call({"op": "get", "path": self._map_path(path), "max_bytes": max_bytes})
        return base64.b64decode(reply["data"])

    def export_workdir(self, max_bytes: int = 64 << 20) -> bytes:
        """The work dir as an uncompressed tar: every entry with its exact mode and mtime, links as links (never
        followed), hard links as links; sockets and devices left out. Made by the supervisor, not a shell.

        Raises:
            SandboxError: if the work dir holds more than ``max_bytes`` of file data (the message says "too
                large") or cannot be read.
        """
        reply = self._file_call({"op": "export", "max_bytes": max_bytes})
        return base64.b64decode(reply["data"])

    def load_workdir(self, tar_bytes: bytes) -> None:
        """Empty the work dir and recreate in it, exactly, a tree made by :meth:`export_workdir` (links kept as
        links, never written through; names with ``..`` or an absolute path refused).

        Raises:
            SandboxError: if the archive is refused or does not fit.
        """
        self._file_call({"op": "load", "data": base64.b64encode(tar_bytes).decode()})

    def grade(self, scripts: list[str], *, env: Mapping[str, str], timeout: float,
              max_output: int = 1 << 16) -> list[Any]:
        """Run each test script after an episode, in this sandbox's work dir; return the supervisor's outcomes,
        one ``[exit status, stdout tail, output tail]`` per script (status -1: timed out), unchecked.

        Each script runs as ``bash --noprofile --norc`` in a new session with exactly ``env`` (plus ``HOME`` and
        ``AGENTGYM_SCRATCH``, fresh 0700 folders, and ``WORKSPACE``), standard input /dev/null and no other
        descriptor; in a grader sandbox (``grader=True``) as a user id other than the supervisor's. The status is
        the supervisor's own ``waitpid`` and the output comes from pipes only it holds; every process of the
        sandbox is ended before, between and after the tests.

        Raises:
            SandboxError: if the supervisor refused the request or stopped during it (it is restarted).
        """
        request = {"op": "grade", "scripts": list(scripts), "env": dict(env), "timeout": timeout,
                   "max_output": max_output, "tmp": self._map_path("/tmp")}
        with self._lock:
            try:
                reply = self._call(request, timeout * max(len(scripts), 1) + 30 + HOST_GRACE)
            except WorkerLost as lost:
                self._recover(lost)
                raise SandboxError(f"the sandbox stopped while the tests ran ({lost}); it was restarted") from lost
        if not reply.get("ok"):
            raise SandboxError(f"grade failed in the sandbox: {reply.get('error', 'unknown error')}")
        return list(reply.get("outcomes") or [])

    def kill_processes(self) -> bool:
        """End every process in the sandbox (the shell, Python, and anything they left running: background jobs,
        daemons, ``setsid`` escapees); the files stay as they are. Graders call it before they read the final
        state. Return whether every process was provably reached (see :attr:`isolation`); False only for a local
        sandbox that shares its user id and PID namespace with the host.
        """
        return bool(self._file_call({"op": "kill"}, wait=30).get("complete"))

    @property
    def isolation(self) -> str:
        """A plain sentence on what this sandbox protects and what it does not."""
        return "unknown isolation"

    def reset(self) -> None:
        """Return to a clean state fast: every process killed, the work dir and /tmp emptied, a new shell and
        Python namespace (the prelude, if any, runs again). Restarts the supervisor if it does not answer."""
        self._file_call({"op": "reset"}, wait=30)
        self._run_prelude()

    def ping(self, timeout: float = 5) -> bool:
        """Return whether the supervisor answers within ``timeout`` seconds (never raises for a dead sandbox)."""
        if self._closed:
            return False
        with self._lock:
            try:
                return bool(self._call({"op": "ping"}, timeout).get("ok"))
            except WorkerLost:
                return False

    def close(self) -> None:
        """Stop the sandbox and free its resources; a sandbox from a pool goes back to the pool instead.

        Idempotent.
        """
        if self._pool is not None:
            pool, self._pool = self._pool, None
            pool.release(self)
            return
        self._destroy()

    def _destroy(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._stop()
            if self._transport is not None:
                self._transport.close()
                self._transport = None
        _live.discard(self)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run."""
        return self._closed


def make_tar(files: Mapping[str, bytes | str]) -> bytes:
    """Return an uncompressed tar archive holding ``files`` (a convenience for :meth:`Sandbox.put_archive`)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in files.items():
            payload = data.encode() if isinstance(data, str) else data
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            info.mode = 0o644
            archive.addfile(info, io.BytesIO(payload))
    return buffer.getvalue()
