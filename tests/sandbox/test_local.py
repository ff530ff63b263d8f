"""The local backend: same API as Docker, rlimits, namespaces where the kernel allows, backend selection."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentgym.sandbox import Sandbox, SandboxError
from agentgym.sandbox.backends import choose_backend
from agentgym.sandbox.local_backend import LocalSandbox, namespace_prefix

needs_namespaces = pytest.mark.skipif(not namespace_prefix(), reason="this kernel refuses new PID/net namespaces")


@pytest.fixture(scope="module")
def local_module() -> Iterator[Sandbox]:
    with Sandbox.create(backend="local") as sandbox:
        yield sandbox


@pytest.fixture
def local(local_module: Sandbox) -> Sandbox:
    local_module.reset()
    return local_module


def test_shell_and_python_state_persist(local: Sandbox) -> None:
    assert isinstance(local, LocalSandbox)
    local.run("mkdir d && cd d && export K=v")
    assert local.run("basename $PWD; echo $K").stdout == "d\nv\n"
    local.run_python("total = 40")
    assert local.run_python("total + 2").stdout == "42\n"


def test_files_map_the_virtual_work_dir(local: Sandbox) -> None:
    local.put_files({"/work/a.txt": "via /work", "b.txt": b"relative", "/tmp/t.txt": "own tmp"})
    assert local.run('cat "$TMPDIR/t.txt"').stdout == "own tmp"
    assert local.run("cat a.txt b.txt").stdout == "via /workrelative"
    assert local.get_file("/work/b.txt") == b"relative"
    assert (Path(local.workdir) / "a.txt").read_text() == "via /work"
    # the real work dir lives under the host's /tmp: its own paths must not be remapped a second time
    local.put_files({f"{local.workdir}/c.txt": "real path"})
    assert local.get_file(f"{local.workdir}/c.txt") == b"real path"
    assert local.run("cat c.txt").stdout == "real path"


def test_timeouts_leave_it_usable(local: Sandbox) -> None:
    assert local.run("sleep 30", timeout=0.5).timed_out
    assert local.run_python("while True: pass", timeout=0.5).timed_out
    assert local.run("echo ok").stdout == "ok\n"


def test_code_does_not_run_as_root(local: Sandbox) -> None:
    uid = local.run("id -u").stdout.strip()
    if os.geteuid() == 0:
        assert int(uid) >= 100_000  # an unprivileged user id of the sandbox's own
    else:
        assert uid in ("0", str(os.geteuid()))  # mapped root of a user namespace, or ourselves


def test_memory_and_file_size_limits() -> None:
    with Sandbox.create(backend="local", memory="256m", workdir_size="1m") as local:
        big = local.run_python("block = bytearray(1024 ** 3)")
        assert big.exit_code == 1 and "MemoryError" in big.stderr
        written = local.run("dd if=/dev/zero of=big bs=1M count=5")
        assert written.exit_code != 0 and "File size limit exceeded" in written.stderr
        assert local.run("echo fine").ok


@needs_namespaces
def test_reset_ends_processes_that_left_the_session(local: Sandbox) -> None:
    local.run("setsid sleep 1000 >/dev/null 2>&1 < /dev/null & (sleep 1000 &)")
    # Wait until both have exec'd sleep (setsid may still be starting when the command returns).
    started = local.run("for i in $(seq 100); do [ $(ps -e -o comm= | grep -c sleep) -ge 2 ] && break; "
                        "sleep 0.02; done; ps -e -o comm= | grep -c sleep")
    assert int(started.stdout) >= 2
    local.reset()
    assert local.run("ps -e -o comm= | grep -c sleep").stdout.strip() == "0"


@needs_namespaces
def test_no_network_to_the_host_loopback(local: Sandbox) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    try:
        result = local.run_python(f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), 1)\n"
                                  "    print('reached')\nexcept OSError:\n    print('blocked')")
        assert result.stdout == "blocked\n"
    finally:
        server.close()


@needs_namespaces
@pytest.mark.skipif(os.geteuid() != 0, reason="the process limit is per user id: enforced once we drop to nobody")
def test_fork_bomb_is_contained(local: Sandbox) -> None:
    local.run("bomb() { bomb | bomb & }; bomb; sleep 1", timeout=10)
    local.reset()
    assert local.run("echo ok", timeout=5).stdout == "ok\n"


def test_close_removes_the_temp_dir() -> None:
    sandbox = Sandbox.create(backend="local")
    root = sandbox.root  # type: ignore[attr-defined]
    sandbox.run("sleep 1000 &")
    sandbox.close()
    sandbox.close()  # idempotent
    assert not root.exists()
    with pytest.raises(SandboxError, match="closed"):
        sandbox.run("true")


def test_backend_is_chosen_by_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTGYM_SANDBOX", "local")
    assert choose_backend("auto") == "local"
    with Sandbox.create() as sandbox:
        assert sandbox.backend == "local"
    assert choose_backend("docker") == "docker"  # an explicit backend wins over the variable
    monkeypatch.setenv("AGENTGYM_SANDBOX", "podman")
    with pytest.raises(SandboxError, match="unknown sandbox backend 'podman'.*auto, docker, local"):
        Sandbox.create()


def test_auto_falls_back_to_local_with_a_warning_when_no_daemon_answers(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    from agentgym.sandbox import backends

    monkeypatch.delenv("AGENTGYM_SANDBOX", raising=False)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    monkeypatch.setattr(backends, "_auto_choice", {})
    with caplog.at_level("WARNING"):
        assert choose_backend("auto") == "local"
    assert "weaker than Docker's" in caplog.text and "setup-docker.sh" in caplog.text
    with pytest.raises(SandboxError, match="no Docker daemon answers.*setup-docker.sh"):
        Sandbox.create(backend="docker")
