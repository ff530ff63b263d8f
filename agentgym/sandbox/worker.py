"""The supervisor that runs inside a sandbox: the container's main process, or the local backend's subprocess.

It uses the standard library only, because it runs on the image's own ``python3``. The host sends one JSON request
per line on standard input and reads one JSON reply per line on a private copy of standard output; the
supervisor points its own file descriptors 1 and 2 at /dev/null so that nothing else can write into the reply
stream. It never runs user code itself. Shell commands run in a persistent ``bash`` child and Python snippets in a
forked executor child that keeps a namespace; each child has its own process group and its own output pipes, which
the supervisor reads with a cap. Because the supervisor does not run user code, it enforces timeouts itself:
a shell that overruns is killed and restarted with its working directory and exported variables; Python is first
interrupted with SIGINT (the namespace survives), then killed (the namespace is lost).

As PID 1 of its own PID namespace (Docker, or the local backend with namespaces) the kernel ignores signals sent
to it from inside the sandbox, and ``reset`` ends every other process with ``kill(-1, SIGKILL)``.

``kill`` ends every process but the supervisor and keeps the files: the grader calls it after the episode's last
action, so that nothing the agent started (background jobs, ``nohup``, ``setsid``, double forks, processes that
ignore SIGTERM) still runs while the final state is read and the hidden tests run. It is complete where the
supervisor is PID 1 of its namespace, or the only process of a user id of its own (``--own-uid``): then
``kill(-1, SIGKILL)`` reaches every other process of the sandbox and nothing else.

Requests: ``{"id": n, "op": "ping" | "sh" | "py" | "put" | "tar" | "get" | "kill" | "reset", ...}``.
Replies: ``{"id": n, "ok": true, ...}`` or ``{"id": n, "ok": false, "error": "..."}``.
"""

from __future__ import annotations

import ast
import base64
import builtins
import errno
import io
import json
import os
import select
import shutil
import signal
import stat
import sys
import tarfile
import time
import traceback
from typing import Any

OUT_FD, ERR_FD, STATUS_FD = 60, 61, 62  # where bash finds its output pipes; high so user code rarely collides
TIMEOUT_EXIT_CODE = 124
INTERRUPT_GRACE = 0.1  # seconds cooperative Python code gets to stop after SIGINT (it takes ~15 ms) before it is killed
STATE_MARK = b"\x1e"

# `builtin` so that a user's function named `read`, `eval` or `printf` cannot break the protocol.
SHELL_PRELUDE = r"""
__agentgym_run() {
  builtin local __agentgym_command
  IFS= builtin read -r -d '' __agentgym_command
  builtin eval "$__agentgym_command" </dev/null >&60 2>&61 60>&- 61>&- 62>&-
  builtin local __agentgym_status=$?
  { builtin export -p; builtin printf 'cd -- %q\n' "$PWD"; builtin printf '\036%d\n' "$__agentgym_status"; } \
    >&62 2>/dev/null
}
"""


def _nonblocking(fd: int) -> None:
    os.set_blocking(fd, False)


class Capture:
    """Bytes read from one output pipe, keeping at most ``limit`` and remembering whether more came."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.chunks: list[bytes] = []
        self.size = 0
        self.truncated = False

    def add(self, data: bytes) -> None:
        room = self.limit - self.size
        if len(data) > room:
            self.truncated = True
            data = data[:max(room, 0)]
        if data:
            self.chunks.append(data)
            self.size += len(data)

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", errors="replace")


def _read_available(fd: int, capture: Capture | None) -> bool:
    """Read what ``fd`` holds now into ``capture``; return False at end of file."""
    while True:
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return True
        except OSError as error:
            if error.errno == errno.EINTR:
                continue
            return False
        if not data:
            return False
        if capture is not None:
            capture.add(data)


class Child:
    """A bash or Python executor child: its process, process group and the supervisor's ends of its pipes."""

    def __init__(self, pid: int, fds: dict[str, int]) -> None:
        self.pid = pid
        self.fds = fds
        self.status: int | None = None  # wait status once reaped

    def close(self) -> None:
        for fd in self.fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = {}


def _exit_code(wait_status: int) -> int:
    if os.WIFSIGNALED(wait_status):
        return 128 + os.WTERMSIG(wait_status)
    return os.WEXITSTATUS(wait_status)


class Supervisor:
    """The request loop; see the module docstring for the protocol."""

    def __init__(self, workdir: str, clean_dirs: list[str], own_uid: bool = False, run_as: int | None = None) -> None:
        self.workdir = workdir
        self.clean_dirs = clean_dirs
        # A grader supervisor (root) runs every child, file operation and kill as `run_as`, a uid it never has.
        self.run_as = run_as if run_as is not None and os.geteuid() == 0 else None
        self.pid1 = os.getpid() == 1
        # kill(-1) reaches exactly the sandbox's processes: all of its PID namespace, or all of its own user id.
        self.can_kill_all = self.pid1 or (own_uid and os.geteuid() != 0)
        self.reply_fd = os.dup(1)
        self.devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(self.devnull, 1)
        os.dup2(self.devnull, 2)
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(signum, signal.SIG_IGN)
        self.wakeup_r, self.wakeup_w = os.pipe()
        _nonblocking(self.wakeup_r)
        _nonblocking(self.wakeup_w)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        signal.set_wakeup_fd(self.wakeup_w)
        self.shell: Child | None = None
        self.shell_state = b""
        self.python: Child | None = None
        self.children: dict[int, Child] = {}
        _make_undumpable()

    # ----- children -------------------------------------------------------------------------------------------
    def reap(self) -> None:
        """Collect every exited child (as PID 1 that includes orphans) and note the status of our own."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            child = self.children.pop(pid, None)
            if child is not None:
                child.status = status

    def _fork(self, keep: dict[int, int]) -> int:
        """Fork a child in its own session with ``keep`` (target fd -> our fd) and all else closed."""
        pid = os.fork()
        if pid != 0:
            return pid
        try:
            os.setsid()
            if self.run_as is not None:
                _drop_to(self.run_as)
            _set_dumpable(True)  # the supervisor is not; user processes should own their /proc entries
            try:
                # Make user processes the out-of-memory killer's first choice, before the supervisor.
                with open("/proc/self/oom_score_adj", "w") as handle:
                    handle.write("500")
            except OSError:
                pass  # no /proc, or a kernel that refuses: the supervisor is merely less protected
            signal.set_wakeup_fd(-1)
            for signum in range(1, signal.NSIG):
                try:
                    signal.signal(signum, signal.SIG_DFL)
                except (OSError, ValueError):
                    pass
            for target, source in keep.items():
                os.dup2(source, target)
            for name in os.listdir("/proc/self/fd") if os.path.isdir("/proc/self/fd") else []:
                fd = int(name)
                if fd not in keep:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
        except BaseException:  # noqa: BLE001 - a child that failed to set up must never run the parent's loop
            os._exit(127)
        return 0

    def _kill_group(self, child: Child) -> None:
        for _ in range(100):
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except ProcessLookupError:
                break
            except PermissionError:
                break
            self.reap()
            if child.status is not None:
                try:
                    os.killpg(child.pid, 0)
                except ProcessLookupError:
                    break
            time.sleep(0.001)
        deadline = time.monotonic() + 1.0
        while child.status is None and time.monotonic() < deadline:
            self.reap()
            if child.status is None:
                time.sleep(0.001)
        self.children.pop(child.pid, None)
        child.close()

    def start_shell(self) -> Child:
        script_r, script_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        status_r, status_w = os.pipe()
        pid = self._fork({0: script_r, 1: self.devnull, 2: self.devnull, OUT_FD: out_w, ERR_FD: err_w,
                          STATUS_FD: status_w})
        if pid == 0:
            try:
                os.chdir(self.workdir)
                os.execve("/bin/bash", ["bash", "--noprofile", "--norc"], dict(os.environ))
            finally:
                os._exit(127)
        for fd in (script_r, out_w, err_w, status_w):
            os.close(fd)
        for fd in (out_r, err_r, status_r):
            _nonblocking(fd)
        child = Child(pid, {"script": script_w, "out": out_r, "err": err_r, "status": status_r})
        self.children[pid] = child
        self._write_all(script_w, SHELL_PRELUDE.encode() + self.shell_state + b"\n")
        return child

    def start_python(self) -> Child:
        request_r, request_w = os.pipe()
        reply_r, reply_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        pid = self._fork({0: self.devnull, 1: out_w, 2: err_w, 3: request_r, 4: reply_w})
        if pid == 0:
            try:
                os.chdir(self.workdir)
                _executor_loop(3, 4)
            finally:
                os._exit(0)
        for fd in (request_r, reply_w, out_w, err_w):
            os.close(fd)
        for fd in (reply_r, out_r, err_r):
            _nonblocking(fd)
        child = Child(pid, {"request": request_w, "reply": reply_r, "out": out_r, "err": err_r})
        self.children[pid] = child
        return child

    @staticmethod
    def _write_all(fd: int, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                written = os.write(fd, view)
            except InterruptedError:
                continue
            view = view[written:]

    def _collect(self, child: Child, done_fd: int, deadline: float, limit: int,
                 on_deadline: Any) -> tuple[Capture, Capture, bytes, bool]:
        """Read the child's output until ``done_fd`` yields a complete message, the child exits, or the deadline.

        Returns (stdout, stderr, message bytes read from done_fd, whether the deadline passed).
        ``on_deadline`` is called once at the deadline and returns a new deadline, or None to stop waiting.
        """
        out, err = Capture(limit), Capture(limit)
        message = bytearray()
        timed_out = False
        watched = [child.fds["out"], child.fds["err"], done_fd, self.wakeup_r]
        while True:
            if message.endswith(b"\n") and (done_fd != child.fds.get("status") or STATE_MARK in message):
                break
            if child.status is not None:
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                new_deadline = on_deadline()
                if new_deadline is None:
                    break
                deadline = new_deadline
                continue
            try:
                ready, _, _ = select.select(watched, [], [], remaining)
            except InterruptedError:
                continue
            for fd in ready:
                if fd == self.wakeup_r:
                    _read_available(fd, None)
                    self.reap()
                elif fd == done_fd:
                    chunk = Capture(1 << 30)
                    if not _read_available(fd, chunk):
                        watched.remove(fd)
                    message += b"".join(chunk.chunks)
                elif fd == child.fds["out"]:
                    if not _read_available(fd, out):
                        watched.remove(fd)
                else:
                    if not _read_available(fd, err):
                        watched.remove(fd)
        if child.fds:
            _read_available(child.fds["out"], out)
            _read_available(child.fds["err"], err)
        return out, err, bytes(message), timed_out

    # ----- operations -----------------------------------------------------------------------------------------
    def op_sh(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.shell is None or self.shell.status is not None:
            if self.shell is not None:
                self._kill_group(self.shell)
            self.shell = self.start_shell()
        shell = self.shell
        command = request["command"].replace("\0", "")
        try:
            self._write_all(shell.fds["script"], b"__agentgym_run\n" + command.encode() + b"\0")
        except BrokenPipeError:
            self.reap()
        deadline = time.monotonic() + float(request.get("timeout", 30))
        out, err, message, timed_out = self._collect(shell, shell.fds["status"], deadline,
                                                      int(request.get("max_output", 1 << 20)), lambda: None)
        if timed_out:
            self._kill_group(shell)
            self.shell = None
            err.add(f"\n[timed out after {request.get('timeout')} s: the command and its shell were killed; "
                    "the working directory and exported variables were kept]\n".encode())
            exit_code = TIMEOUT_EXIT_CODE
        elif STATE_MARK in message:
            state, _, status = message.rpartition(STATE_MARK)
            self.shell_state = state
            exit_code = int(status.strip() or b"0")
        else:  # the shell itself exited (`exit`, `exec`, killed): start a new one next time
            self.reap()
            exit_code = _exit_code(shell.status) if shell.status is not None else 1
            self._kill_group(shell)
            self.shell = None
        return {"stdout": out.text(), "stderr": err.text(), "exit_code": exit_code, "timed_out": timed_out,
                "truncated": out.truncated or err.truncated}

    def op_py(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.python is None or self.python.status is not None:
            if self.python is not None:
                self._kill_group(self.python)
            self.python = self.start_python()
        python = self.python
        payload = json.dumps({"code": request["code"]}).encode() + b"\n"
        try:
            self._write_all(python.fds["request"], payload)
        except BrokenPipeError:
            self.reap()
        interrupted: list[bool] = []

        def interrupt() -> float | None:
            if interrupted:
                return None
            interrupted.append(True)
            try:
                os.kill(python.pid, signal.SIGINT)
            except ProcessLookupError:
                return None
            return time.monotonic() + INTERRUPT_GRACE

        deadline = time.monotonic() + float(request.get("timeout", 30))
        out, err, message, timed_out = self._collect(python, python.fds["reply"], deadline,
                                                      int(request.get("max_output", 1 << 20)), interrupt)
        note = ""
        if message.endswith(b"\n"):
            exit_code = int(json.loads(message.decode().splitlines()[-1])["exit_code"])
        else:
            self.reap()
            exit_code = _exit_code(python.status) if python.status is not None else 1
            self._kill_group(python)
            self.python = None
            if timed_out:
                note = "the code ignored the interrupt, so its interpreter was killed: the namespace is lost"
            else:
                note = f"the Python process exited with status {exit_code}: the namespace is lost"
        if timed_out:
            exit_code = TIMEOUT_EXIT_CODE
            note = note or "the code was interrupted; the namespace was kept"
            note = f"timed out after {request.get('timeout')} s: {note}"
        if note:
            err.add(f"\n[{note}]\n".encode())
        return {"stdout": out.text(), "stderr": err.text(), "exit_code": exit_code, "timed_out": timed_out,
                "truncated": out.truncated or err.truncated}

    def _path(self, path: str) -> str:
        return os.path.normpath(os.path.join(self.workdir, path))

    def _as_owner(self, function: Any, *args: Any) -> Any:
        """``function(*args)`` as the owner of the sandbox's files: here, or (grader) in a child run as `run_as`."""
        if self.run_as is None:
            return function(*args)
        return self._in_child(function, *args)

    def _in_child(self, function: Any, *args: Any) -> Any:
        """Run ``function(*args)`` in a forked child dropped to `run_as`; return its (JSON) result or raise its
        error as an OSError with the child's message."""
        read_fd, write_fd = os.pipe()
        pid = self._fork({0: self.devnull, 1: self.devnull, 2: self.devnull, 3: write_fd})
        if pid == 0:
            try:
                try:
                    result = {"ok": True, "value": function(*args)}
                except BaseException as error:  # noqa: BLE001 - report every failure to the parent
                    result = {"ok": False, "error": f"{type(error).__name__}: {error}"}
                Supervisor._write_all(3, json.dumps(result).encode())
            finally:
                os._exit(0)
        os.close(write_fd)
        child = Child(pid, {"result": read_fd})
        self.children[pid] = child
        data = bytearray()
        while True:
            try:
                chunk = os.read(read_fd, 1 << 20)
            except InterruptedError:
                continue
            if not chunk:
                break
            data += chunk
        self._kill_group(child)
        if not data:
            raise OSError(errno.EIO, "the helper process ended without an answer")
        reply = json.loads(data)
        if not reply["ok"]:
            raise OSError(errno.EIO, reply["error"])
        return reply["value"]

    def op_put(self, request: dict[str, Any]) -> dict[str, Any]:
        return dict(self._as_owner(self._put, request))

    def _put(self, request: dict[str, Any]) -> dict[str, Any]:
        for item in request["files"]:
            path = self._path(item["path"])
            os.makedirs(os.path.dirname(path) or "/", exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(base64.b64decode(item["data"]))
            if item.get("mode") is not None:
                os.chmod(path, int(item["mode"]))
        return {}

    def op_tar(self, request: dict[str, Any]) -> dict[str, Any]:
        return dict(self._as_owner(self._tar, request))

    def _tar(self, request: dict[str, Any]) -> dict[str, Any]:
        destination = self._path(request.get("path") or self.workdir)
        os.makedirs(destination, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(base64.b64decode(request["data"]))) as archive:
            if hasattr(tarfile, "data_filter"):
                archive.extractall(destination, filter="data")
            else:
                _check_members(archive, destination)
                archive.extractall(destination)
        return {}

    def op_get(self, request: dict[str, Any]) -> dict[str, Any]:
        return dict(self._as_owner(self._get, request))

    def _get(self, request: dict[str, Any]) -> dict[str, Any]:
        path = self._path(request["path"])
        limit = int(request.get("max_bytes", 64 << 20))
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
        if len(data) > limit:
            raise OSError(errno.EFBIG, f"the file is larger than {limit} bytes", request["path"])
        return {"data": base64.b64encode(data).decode()}

    def op_kill(self, request: dict[str, Any]) -> dict[str, Any]:
        """End every process but this one (the files stay); say whether that provably reached them all."""
        if self.run_as is not None:
            # A grader: its children run as `run_as`, which the supervisor (root without CAP_KILL in Docker) may
            # not signal; a child of that user kills all the user's processes but itself, then exits.
            self._in_child(_kill_own_user)
            self.reap()
        for child in (self.shell, self.python):
            if child is not None:
                self._kill_group(child)
        self.shell = self.python = None
        if self.run_as is not None:
            return {"complete": True}
        if self.can_kill_all:
            # Every process in the namespace but us: background jobs, daemons, fork bombs, setsid escapees.
            for _ in range(1000):
                try:
                    os.kill(-1, signal.SIGKILL)
                except ProcessLookupError:
                    break
                self.reap()
                time.sleep(0.0005)
            self.reap()
        return {"complete": self.can_kill_all}

    def op_reset(self, request: dict[str, Any]) -> dict[str, Any]:
        self.op_kill(request)
        self.shell_state = b""
        self._as_owner(_empty_directories, self.clean_dirs)
        return {}

    def op_export(self, request: dict[str, Any]) -> dict[str, Any]:
        """The work dir as an uncompressed tar (exact modes, mtimes, links; see `export_tree`), base64."""
        data = self._as_owner(export_tree, self.workdir, int(request.get("max_bytes", 64 << 20)))
        return {"data": data}

    def op_load(self, request: dict[str, Any]) -> dict[str, Any]:
        """Empty the work dir and load a tar made by `op_export` into it exactly (see `load_tree`)."""
        self._as_owner(load_tree, request["data"], self.workdir)
        return {}

    def op_grade(self, request: dict[str, Any]) -> dict[str, Any]:
        """Run hidden test scripts against the work dir; see `Grader`. Replies ``outcomes``: one
        ``[status, stdout, tail]`` per script, in order (status -1: the test timed out)."""
        return {"outcomes": Grader(self, request).run()}

    def op_ping(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"pid1": self.pid1, "pid": os.getpid(), "can_kill_all": self.can_kill_all}

    # ----- loop -----------------------------------------------------------------------------------------------
    def reply(self, message: dict[str, Any]) -> None:
        self._write_all(self.reply_fd, json.dumps(message).encode() + b"\n")

    def serve(self) -> None:
        buffer = b""
        self.reply({"id": 0, "ok": True, "ready": True, "pid1": self.pid1})
        while True:
            try:
                ready, _, _ = select.select([0, self.wakeup_r], [], [])
            except InterruptedError:
                continue
            if self.wakeup_r in ready:
                _read_available(self.wakeup_r, None)
                self.reap()
            if 0 not in ready:
                continue
            try:
                data = os.read(0, 1 << 20)
            except InterruptedError:
                continue
            if not data:
                return
            buffer += data
            while b"\n" in buffer:
                line, _, buffer = buffer.partition(b"\n")
                if line.strip():
                    self.handle(line)

    def handle(self, line: bytes) -> None:
        request_id = None
        try:
            request = json.loads(line)
            request_id = request.get("id")
            handler = getattr(self, "op_" + str(request.get("op")), None)
            if handler is None:
                raise ValueError(f"unknown operation {request.get('op')!r}")
            result = handler(request)
            result.update({"id": request_id, "ok": True})
        except UnicodeError as error:
            # Name the character only: the text that failed may be an absolute path inside the sandbox, whose
            # length (and so the reported position) differs between sandboxes and would break determinism.
            bad = ""
            if isinstance(error, (UnicodeEncodeError, UnicodeDecodeError)):
                bad = f" {error.object[error.start:error.end]!r}"
            result = {"id": request_id, "ok": False,
                      "error": f"{type(error).__name__}: the text{bad} is not valid {getattr(error, 'encoding', 'utf-8')}"}
        except Exception as error:  # noqa: BLE001 - every failure becomes a reply; the supervisor must keep serving
            result = {"id": request_id, "ok": False, "error": f"{type(error).__name__}: {error}"}
        self.reply(result)


def _check_members(archive: tarfile.TarFile, destination: str) -> None:
    """Refuse archives whose members would land outside ``destination`` (for Pythons without extraction filters)."""
    root = os.path.realpath(destination)
    for member in archive.getmembers():
        target = os.path.realpath(os.path.join(root, member.name))
        if not (target == root or target.startswith(root + os.sep)) or member.isdev():
            raise ValueError(f"refusing archive member {member.name!r}: it would land outside {destination}")
        if member.islnk() or member.issym():
            link = os.path.realpath(os.path.join(os.path.dirname(target), member.linkname))
            if not link.startswith(root + os.sep):
                raise ValueError(f"refusing link {member.name!r} -> {member.linkname!r}: it points outside")


def _empty_directory(directory: str) -> None:
    """Remove everything inside ``directory``, making unreadable sub-directories writable first."""

    def make_writable_and_retry(function: Any, path: str, exc_info: Any) -> None:
        parent = os.path.dirname(path)
        os.chmod(parent, stat.S_IRWXU)
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, stat.S_IRWXU)
            shutil.rmtree(path, onerror=make_writable_and_retry)
        else:
            os.unlink(path)

    try:
        os.chmod(directory, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    except PermissionError:
        pass  # not ours to restore (the local backend's root-owned dirs); listing shows whether it matters
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, onerror=make_writable_and_retry)
        else:
            os.unlink(path)


def _empty_directories(directories: list[str]) -> None:
    for directory in directories:
        _empty_directory(directory)


def _drop_to(uid: int) -> None:
    """Become ``uid`` (and its gid, no supplementary groups) for good: a child of a grader supervisor."""
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


def _kill_own_user() -> bool:
    """SIGKILL every process of this process's user but itself (run in a child dropped to the sandbox's user)."""
    for _ in range(1000):
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            break
        time.sleep(0.0005)
    return True


MAX_EXPORT_ENTRIES = 100_000


def export_tree(root: str, max_bytes: int) -> str:
    """The tree under ``root`` as an uncompressed GNU tar, base64: every entry with its exact permission bits and
    mtime, symbolic links as links (never followed), hard links as links to their first path, FIFOs; sockets and
    devices are left out. Unreadable entries are read by lending them the owner's read bit for the moment. Raises
    OSError (EFBIG, "too large") past ``max_bytes`` of file data or `MAX_EXPORT_ENTRIES` entries."""
    buffer = io.BytesIO()
    seen: dict[tuple[int, int], str] = {}
    budget = [max_bytes, MAX_EXPORT_ENTRIES]

    def lend(path: str, mode: int, bits: int) -> int | None:
        if mode & bits == bits:
            return None
        os.chmod(path, mode | bits)
        return mode

    def add(archive: tarfile.TarFile, path: str, name: str) -> None:
        info_stat = os.lstat(path)
        budget[1] -= 1
        if budget[1] < 0:
            raise OSError(errno.EFBIG, f"the work dir is too large to grade (more than {MAX_EXPORT_ENTRIES} entries)")
        info = tarfile.TarInfo(name)
        info.mode = stat.S_IMODE(info_stat.st_mode)
        info.mtime = int(info_stat.st_mtime)
        if stat.S_ISLNK(info_stat.st_mode):
            info.type, info.linkname = tarfile.SYMTYPE, os.readlink(path)
            archive.addfile(info)
        elif stat.S_ISDIR(info_stat.st_mode):
            info.type = tarfile.DIRTYPE
            archive.addfile(info)
            restore = lend(path, info.mode, stat.S_IRUSR | stat.S_IXUSR)
            try:
                for child in sorted(os.listdir(path)):
                    add(archive, os.path.join(path, child), f"{name}/{child}")
            finally:
                if restore is not None:
                    os.chmod(path, restore)
        elif stat.S_ISREG(info_stat.st_mode):
            key = (info_stat.st_dev, info_stat.st_ino)
            if info_stat.st_nlink > 1 and key in seen:
                info.type, info.linkname = tarfile.LNKTYPE, seen[key]
                archive.addfile(info)
                return
            seen[key] = name
            budget[0] -= info_stat.st_size
            if budget[0] < 0:
                raise OSError(errno.EFBIG, f"the work dir is too large to grade (more than {max_bytes} bytes)")
            restore = lend(path, info.mode, stat.S_IRUSR)
            try:
                with open(path, "rb") as handle:
                    data = handle.read(info_stat.st_size)
            finally:
                if restore is not None:
                    os.chmod(path, restore)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        elif stat.S_ISFIFO(info_stat.st_mode):
            info.type = tarfile.FIFOTYPE
            archive.addfile(info)

    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT, encoding="utf-8",
                      errors="surrogateescape") as archive:
        restore = lend(root, stat.S_IMODE(os.lstat(root).st_mode), stat.S_IRUSR | stat.S_IXUSR)
        try:
            for child in sorted(os.listdir(root)):
                add(archive, os.path.join(root, child), child)
        finally:
            if restore is not None:
                os.chmod(root, restore)
    return base64.b64encode(buffer.getvalue()).decode()


def load_tree(data: str, root: str) -> bool:
    """Empty ``root`` and recreate in it the tree of a tar made by `export_tree` (base64), exactly: modes, mtimes,
    links to anywhere (kept as links, never written through). Refuses (ValueError) a member with an absolute
    name, a ``..`` or empty component, a parent that is not a directory it made, a hard link to a file it did not
    make, or a name seen twice; devices are skipped. Set-id bits are dropped."""
    _empty_directory(root)
    made: dict[str, str] = {}  # member name -> its kind ("d", "f", "l", "p")
    fixes: list[tuple[str, int, float]] = []
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(data)), mode="r:", encoding="utf-8",
                      errors="surrogateescape") as archive:
        for member in archive:
            name = member.name
            parts = name.split("/")
            if name.startswith("/") or any(part in ("", ".", "..") for part in parts) or name in made:
                raise ValueError(f"refusing archive member {name!r}")
            parent = "/".join(parts[:-1])
            if parent and made.get(parent) != "d":
                raise ValueError(f"refusing archive member {name!r}: its parent is not a directory of the archive")
            path = os.path.join(root, *parts)
            if member.isdir():
                os.mkdir(path, 0o700)
                made[name] = "d"
                fixes.append((path, member.mode & 0o1777, member.mtime))
            elif member.isreg():
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                with os.fdopen(fd, "wb") as handle:
                    source = archive.extractfile(member)
                    if source is not None:
                        shutil.copyfileobj(source, handle)
                made[name] = "f"
                fixes.append((path, member.mode & 0o777, member.mtime))
            elif member.issym():
                os.symlink(member.linkname, path)
                os.utime(path, (member.mtime, member.mtime), follow_symlinks=False)
                made[name] = "l"
            elif member.islnk():
                if made.get(member.linkname) != "f":
                    raise ValueError(f"refusing hard link {name!r} -> {member.linkname!r}")
                os.link(os.path.join(root, *member.linkname.split("/")), path, follow_symlinks=False)
                made[name] = "f"
            elif member.isfifo():
                os.mkfifo(path, 0o600)
                made[name] = "p"
                fixes.append((path, member.mode & 0o777, member.mtime))
    for path, mode, mtime in reversed(fixes):  # children before their folder: a folder's own mode comes last
        os.chmod(path, mode)
        os.utime(path, (mtime, mtime))
    return True


class Grader:
    """One ``grade`` request: each test script runs as its own process (``bash --noprofile --norc SCRIPT`` in the
    work dir, a new session, the request's environment only, standard input /dev/null, no other descriptor),
    dropped to the sandbox's user when the supervisor is a grader (``--run-as``). The verdict is what the kernel
    says: the supervisor's own ``waitpid`` status, and the output read from pipes only the supervisor holds; a
    test that overruns ``timeout`` is killed (status -1). Before the first test and after each one, every process
    of the sandbox but the supervisor is ended, so nothing a test started lives on into the next or into the
    reply. HOME and the test's scratch folder are made fresh (mode 0700) for each request."""

    def __init__(self, supervisor: Supervisor, request: dict[str, Any]) -> None:
        self.supervisor = supervisor
        self.scripts = [str(script) for script in request["scripts"]]
        self.environment = {str(key): str(value) for key, value in dict(request.get("env") or {}).items()}
        self.timeout = float(request.get("timeout", 60))
        self.limit = int(request.get("max_output", 1 << 16))
        self.tmp = str(request.get("tmp") or "/tmp")

    def _end_everything(self) -> None:
        self.supervisor.op_kill({})

    def _drain(self, fd: int, buffer: bytearray) -> bool:
        """Append what ``fd`` holds now to ``buffer``, keeping its last `limit` bytes; False at end of file."""
        while True:
            try:
                data = os.read(fd, 1 << 16)
            except BlockingIOError:
                return True
            except InterruptedError:
                continue
            except OSError:
                return False
            if not data:
                return False
            buffer += data
            if len(buffer) > 2 * self.limit:
                del buffer[:-self.limit]

    def _prepare(self) -> str:
        base = os.path.join(self.tmp, "agentgym-grader")
        if os.path.lexists(base):
            if os.path.isdir(base) and not os.path.islink(base):
                _empty_directory(base)
                os.rmdir(base)
            else:
                os.unlink(base)
        os.mkdir(base, 0o700)
        for folder in ("home", "scratch"):
            os.mkdir(os.path.join(base, folder), 0o700)
        for index, script in enumerate(self.scripts):
            fd = os.open(os.path.join(base, f"{index:02d}.sh"), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                         0o400)
            with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as handle:
                handle.write(script)
        return base

    def run(self) -> list[list[Any]]:
        self._end_everything()
        base = str(self.supervisor._as_owner(self._prepare))
        environment = {**self.environment, "HOME": os.path.join(base, "home"),
                       "AGENTGYM_SCRATCH": os.path.join(base, "scratch"), "WORKSPACE": self.supervisor.workdir}
        # `_one` ends every process after each test; the folder goes with the next reset (it empties /tmp) or
        # the next request (`_prepare`).
        return [self._one(os.path.join(base, f"{index:02d}.sh"), environment) for index in range(len(self.scripts))]

    def _one(self, path: str, environment: dict[str, str]) -> list[Any]:
        supervisor = self.supervisor
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        pid = supervisor._fork({0: supervisor.devnull, 1: out_w, 2: err_w})
        if pid == 0:
            try:
                os.chdir(supervisor.workdir)
                os.execve("/bin/bash", ["bash", "--noprofile", "--norc", path], environment)
            finally:
                os._exit(127)
        os.close(out_w)
        os.close(err_w)
        _nonblocking(out_r)
        _nonblocking(err_r)
        child = Child(pid, {"out": out_r, "err": err_r})
        supervisor.children[pid] = child
        buffers = {out_r: bytearray(), err_r: bytearray()}
        deadline = time.monotonic() + self.timeout
        watched = [out_r, err_r, supervisor.wakeup_r]
        timed_out = False
        while child.status is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            try:
                ready, _, _ = select.select(watched, [], [], min(remaining, 0.5))
            except InterruptedError:
                continue
            if not ready:
                supervisor.reap()
            for fd in ready:
                if fd == supervisor.wakeup_r:
                    _read_available(fd, None)
                    supervisor.reap()
                elif not self._drain(fd, buffers[fd]):
                    watched.remove(fd)
        for fd, buffer in buffers.items():
            self._drain(fd, buffer)
        status = child.status
        try:
            os.killpg(pid, signal.SIGKILL)  # what the test left in its session (without a grader user or PID 1)
        except OSError:
            pass
        self._end_everything()
        supervisor.reap()
        child.close()
        supervisor.children.pop(pid, None)
        if timed_out or status is None:
            return [-1, "", "the test timed out"]
        stdout = bytes(buffers[out_r][-self.limit:])
        tail = (stdout + bytes(buffers[err_r]))[-400:]
        return [_exit_code(status), stdout.decode("utf-8", "replace"), tail.decode("utf-8", "replace")]


def _set_dumpable(dumpable: bool) -> None:
    """Set PR_SET_DUMPABLE. A non-dumpable process cannot be ptrace-d, nor its /proc/PID/fd opened, by processes
    of the same user: the supervisor is made so that user code cannot forge its replies."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, int(dumpable), 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError, ImportError):
        pass  # no ctypes on a stripped interpreter: the sandbox still works, replies are just forgeable


def _make_undumpable() -> None:
    _set_dumpable(False)


# ----- the Python executor (runs in the forked child) -----------------------------------------------------------
def _run_code(code: str, namespace: dict[str, Any]) -> int:
    """Execute ``code`` in ``namespace``; echo the value of a final expression like the REPL. Return an exit code."""
    try:
        tree = ast.parse(code, "<sandbox>", "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body[-1].value)
            tree.body.pop()
        exec(compile(tree, "<sandbox>", "exec"), namespace)  # noqa: S102 - running the code is the point
        if last is not None:
            value = eval(compile(last, "<sandbox>", "eval"), namespace)
            if value is not None:
                print(repr(value))
        return 0
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            return stop.code or 0
        print(stop.code, file=sys.stderr)
        return 1
    except SyntaxError as error:
        traceback.print_exception(type(error), error, None)
        return 1
    except BaseException as error:  # noqa: BLE001 - whatever the code raised, report it
        # Show the user's frames only: not ours (_run_code, the interrupt handler).
        own_file = _run_code.__code__.co_filename
        frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename != own_file]
        lines = ["Traceback (most recent call last):\n"] if frames else []
        lines += traceback.format_list(frames) + traceback.format_exception_only(type(error), error)
        sys.stderr.write("".join(lines))
        return 130 if isinstance(error, KeyboardInterrupt) else 1


def _executor_loop(request_fd: int, reply_fd: int) -> None:
    # The executor's streams live as long as the process: no context manager.
    sys.stdin = open(0, closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
    sys.__stdout__, sys.__stderr__ = sys.stdout, sys.stderr  # type: ignore[misc]
    os.set_inheritable(request_fd, False)
    os.set_inheritable(reply_fd, False)
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    executing = [False]

    def on_interrupt(signum: int, frame: Any) -> None:
        if executing[0]:
            raise KeyboardInterrupt
        # An interrupt that lands between snippets is stale: ignore it rather than break the next one.

    signal.signal(signal.SIGINT, on_interrupt)
    buffer = b""
    while True:
        while b"\n" not in buffer:
            data = os.read(request_fd, 1 << 20)
            if not data:
                return
            buffer += data
        line, _, buffer = buffer.partition(b"\n")
        code = json.loads(line)["code"]
        exit_code = 1
        try:
            executing[0] = True
            exit_code = _run_code(code, namespace)
        except KeyboardInterrupt:
            exit_code = 130
        finally:
            executing[0] = False
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        Supervisor._write_all(reply_fd, json.dumps({"exit_code": exit_code}).encode() + b"\n")


_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_BIND, _MS_REC = 2, 4, 8, 4096, 16384


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    result = libc.mount(source.encode(), target.encode(), fstype.encode() if fstype else None, flags,
                        data.encode() if data else None)
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"mount {source} on {target}: {os.strerror(code)}")


def hide_paths(paths: list[str], keep: str) -> None:
    """Cover each of ``paths`` with an empty, root-owned tmpfs in this (private) mount namespace, so the sandbox
    cannot read what is under it; ``keep`` (the sandbox's own directory), if it lies under one, is bound back.

    Needs a mount namespace of its own and the privilege to mount there (root, or root of a user namespace).
    """
    keep_fd = os.open(keep, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for path in paths:
            if not os.path.isdir(path) or os.path.realpath(path) == "/":
                continue
            real = os.path.realpath(path)
            _mount("tmpfs", real, "tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, "size=64k,mode=0755")
            if keep == real or keep.startswith(real.rstrip("/") + "/"):
                os.makedirs(keep, exist_ok=True)
                _mount(f"/proc/self/fd/{keep_fd}", keep, None, _MS_BIND | _MS_REC)
    finally:
        os.close(keep_fd)


def main(argv: list[str]) -> None:
    """``worker.py [--workdir DIR] [--clean DIR]... [--uid N] [--own-uid] [--run-as N] [--hide DIR --keep DIR]...``:
    serve requests on stdin until end of file. ``--hide`` (only in a private mount namespace) covers host
    directories before privileges are dropped; ``--own-uid`` says no other process runs as the user id the worker
    runs as; ``--run-as`` (a grader, started as root) keeps the supervisor's uid and runs everything else as N."""
    workdir, clean, uid, own_uid, hide, keep = os.getcwd(), [], None, False, [], ""
    run_as: int | None = None
    args = list(argv)
    while args:
        flag = args.pop(0)
        if flag == "--workdir":
            workdir = args.pop(0)
        elif flag == "--clean":
            clean.append(args.pop(0))
        elif flag == "--uid":
            uid = int(args.pop(0))
        elif flag == "--own-uid":
            own_uid = True
        elif flag == "--hide":
            hide.append(args.pop(0))
        elif flag == "--keep":
            keep = args.pop(0)
        elif flag == "--run-as":
            run_as = int(args.pop(0))
    if hide:
        try:
            hide_paths(hide, keep or workdir)
        except OSError as error:
            # The host side reads this line and refuses to start: a sandbox that was meant to hide must hide.
            os.write(1, json.dumps({"id": 0, "ok": False, "error": f"could not hide host paths: {error}"}).encode()
                     + b"\n")
            sys.exit(3)
    if uid is not None and os.geteuid() == 0:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    os.chdir(workdir)
    Supervisor(workdir, clean or [workdir], own_uid=own_uid, run_as=run_as).serve()


if __name__ == "__main__":
    main(sys.argv[1:])
