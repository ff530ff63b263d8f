"""The Docker backend: one hardened container per sandbox, its supervisor reached over the attached stdin/stdout.

The container runs the supervisor (``worker.py``) as PID 1 with no network, no capabilities, no new privileges, a
read-only root, a size-limited tmpfs work dir and /tmp, and memory / pids / CPU limits. Talking over the attach
socket costs a fraction of a millisecond per call where ``docker exec`` costs tens of milliseconds.
"""

from __future__ import annotations

import logging
import os
import socket
import struct
import time
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests.exceptions

from agentgym.sandbox import image as sandbox_image
from agentgym.sandbox.base import LABEL, Sandbox, SandboxError, Transport, WorkerLost

logger = logging.getLogger(__name__)

WORKER_SOURCE = (Path(__file__).with_name("worker.py")).read_text()
OWNER_LABEL = "agentgym.owner-pid"
TMP_SIZE = "64m"
SANDBOX_USER = "65534:65534"
# A grader container's supervisor is root with only CAP_SETUID/CAP_SETGID; its tests and file operations run as
# GRADER_TEST_UID, a uid no agent container uses.
GRADER_TEST_UID = 65533
# How long a restart waits for the daemon to come back (it may be restarting between episodes).
DAEMON_WAIT = 60.0
DAEMON_ERRORS = (requests.exceptions.ConnectionError, docker.errors.DockerException)


class SocketTransport(Transport):
    """The container's attach socket: raw bytes in, 8-byte-header frames out (stdout frames carry replies)."""

    def __init__(self, attached: Any) -> None:
        self._attached = attached  # keeps the HTTP response (and so the connection) alive
        self.sock: socket.socket = getattr(attached, "_sock", attached)
        self._raw = b""

    def send(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError as error:
            raise WorkerLost(f"writing to the container failed: {error}") from error

    def receive(self, deadline: float) -> bytes:
        while True:
            payload = bytearray()
            while len(self._raw) >= 8:
                stream, length = self._raw[0], struct.unpack(">I", self._raw[4:8])[0]
                if len(self._raw) < 8 + length:
                    break
                if stream == 1:
                    payload += self._raw[8:8 + length]
                else:
                    logger.debug("container wrote to stderr: %r", self._raw[8:8 + length][:200])
                self._raw = self._raw[8 + length:]
            if payload:
                return bytes(payload)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WorkerLost("no answer before the deadline")
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(1 << 20)
            except TimeoutError as error:
                raise WorkerLost("no answer before the deadline") from error
            except OSError as error:
                raise WorkerLost(f"reading from the container failed: {error}") from error
            if not data:
                raise WorkerLost("the container's output closed (it stopped or was killed)")
            self._raw += data

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
        try:
            self._attached.close()
        except (OSError, AttributeError):
            pass


def parse_size(text: str) -> int:
    """Parse a Docker size such as ``"512m"`` or ``"1g"`` into bytes."""
    units = {"b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = text.strip().lower()
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


class DockerSandbox(Sandbox):
    """A sandbox in a hardened Docker container; see :meth:`Sandbox.create` for the arguments."""

    backend = "docker"

    def __init__(self, *, image: str | None, cpus: float, memory: str, pids: int, workdir: str, workdir_size: str,
                 env: dict[str, str], max_output: int, python_prelude: str | None, grader: bool = False) -> None:
        super().__init__(workdir=workdir, max_output=max_output, python_prelude=python_prelude)
        self.grader = grader
        try:
            self.client = docker.from_env()
            self.client.ping()
        except DAEMON_ERRORS as error:
            raise SandboxError(f"no Docker daemon answers ({error}); start one with `bash .ci/setup-docker.sh` "
                               "or use Sandbox.create(backend='local')") from error
        self.image = image or ensure_image(self.client)
        self.config = self._container_config(cpus=cpus, memory=memory, pids=pids, workdir_size=workdir_size, env=env)
        self.container: Any = None
        try:
            self._boot()
        except (WorkerLost, docker.errors.DockerException) as error:
            self._destroy()
            raise SandboxError(f"the sandbox container did not start: {error}") from error

    def _container_config(self, *, cpus: float, memory: str, pids: int, workdir_size: str,
                          env: dict[str, str]) -> dict[str, Any]:
        environment = {"HOME": self.workdir, "TMPDIR": "/tmp", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
                       "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin", **env}
        owner = GRADER_TEST_UID if self.grader else 65534
        config: dict[str, Any] = {
            "image": self.image,
            "command": ["python3", "-I", "-c", WORKER_SOURCE, "--workdir", self.workdir, "--clean", self.workdir,
                     "--clean", "/tmp"],
            # The owner's pid lets the test suite tell a leaked container from another live process's.
            "labels": {LABEL: "1", OWNER_LABEL: str(os.getpid())},
            "user": SANDBOX_USER,
            "working_dir": self.workdir,
            "environment": environment,
            # With stdin open, the SDK also sets StdinOnce: when our process dies, even by SIGKILL, the attach
            # connection closes, the supervisor reads end of file and exits, and auto_remove deletes the container.
            "stdin_open": True,
            "auto_remove": True,
            "network_mode": "none",
            "read_only": True,
            "tmpfs": {self.workdir: f"size={workdir_size},exec,uid={owner},gid={owner},mode=0755",
                   "/tmp": f"size={TMP_SIZE},exec,mode=1777"},
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "mem_limit": memory,
            "memswap_limit": memory,  # without this, swap adds as much again
            "pids_limit": pids,
            "nano_cpus": int(cpus * 1e9),  # the API rejects a float
            "ulimits": [docker.types.Ulimit(name="core", soft=0, hard=0)],
        }
        if self.grader:
            config["command"] += ["--run-as", str(GRADER_TEST_UID)]
            config["user"] = "0:0"
            config["cap_add"] = ["SETUID", "SETGID"]
            config["labels"] = {**config["labels"], "agentgym.role": "grader"}
        return config

    def _start(self) -> Transport:
        deadline = time.monotonic() + DAEMON_WAIT
        while True:
            try:
                return self._start_once()
            except DAEMON_ERRORS as error:
                if time.monotonic() > deadline:
                    raise WorkerLost(f"the Docker daemon did not answer for {DAEMON_WAIT:.0f} s: {error}") from error
                logger.info("waiting for the Docker daemon: %s", error)
                time.sleep(0.5)

    def _start_once(self) -> Transport:
        if self.container is not None:
            # Containers remove themselves once stopped: a restart is a new container (about 0.2 s).
            try:
                self.container.remove(force=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as error:
                if "in progress" not in str(error):
                    raise
            self.container = None
        if self.container is None:
            self.container = self.client.containers.create(**self.config)
        # Attach before start, or the supervisor's first line (its ready message) can be lost.
        attached = self.container.attach_socket(params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
        self.container.start()
        return SocketTransport(attached)

    def _stop(self) -> None:
        if self.container is None:
            return
        container, self.container = self.container, None
        try:
            container.remove(force=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as error:
            if "in progress" not in str(error):  # auto-removal already under way: nothing left to do
                logger.warning("could not remove container %s (%s); `agentgym sandbox prune` removes it later",
                               container.short_id, error)
        except DAEMON_ERRORS as error:
            logger.warning("could not remove container %s (%s); `agentgym sandbox prune` removes it later",
                           container.short_id, error)

    def _destroy(self) -> None:
        super()._destroy()
        # The client's connection pool holds sockets to the daemon (more after each restart, since an attach
        # connection is never returned to the pool): close it with the sandbox.
        self.client.close()

    @property
    def container_id(self) -> str | None:
        """The Docker id of the current container (it changes if the container had to be recreated)."""
        return None if self.container is None else str(self.container.id)

    @property
    def isolation(self) -> str:
        if self.grader:
            return ("docker grader: a fresh container (as for agents) whose supervisor is root with only the "
                    f"capabilities to change user; tests and file operations run as uid {GRADER_TEST_UID}, which "
                    "no agent container uses, and cannot read or signal the supervisor")
        return ("docker: a container of its own (read-only root file system, no network, a non-root user with no "
                "capabilities, memory/pids/CPU limits); it cannot read the host's files, the agentgym cache or "
                "other sandboxes, and every process in it can be ended before grading")

    def __repr__(self) -> str:
        short = "-" if self.container is None else self.container.short_id
        return f"<DockerSandbox {short} image={self.image}>"


def ensure_image(client: Any) -> str:
    """Return the tag of the current recipe's image, building it first if the daemon lacks it."""
    tag = sandbox_image.image_tag()
    if not sandbox_image.image_exists(client, tag):
        logger.info("sandbox image %s is missing; building it (about a minute the first time)", tag)
        try:
            sandbox_image.build()
        except sandbox_image.ImageBuildError as error:
            raise SandboxError(f"the sandbox image could not be built: {error}") from error
    return tag
