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


def test_auto_never_falls_back_to_local_silently(monkeypatch: pytest.MonkeyPatch,
                                                 caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    from agentgym.sandbox import backends

    monkeypatch.delenv("AGENTGYM_SANDBOX", raising=False)
    monkeypatch.delenv("AGENTGYM_ALLOW_WEAK_ISOLATION", raising=False)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    monkeypatch.setattr(backends, "_auto_choice", {})
    # Without permission, auto refuses, and says exactly how to fix it.
    with pytest.raises(SandboxError, match="setup-docker.sh.*allow_weak_isolation=True.*AGENTGYM_ALLOW_WEAK_ISOLATION=1"):
        choose_backend("auto")
    with pytest.raises(SandboxError, match="no Docker daemon answers"):
        Sandbox.create()
    # With the flag or the variable it takes the local backend, with a warning.
    with caplog.at_level("WARNING"):
        assert choose_backend("auto", allow_weak_isolation=True) == "local"
    assert "weaker than Docker's" in caplog.text
    monkeypatch.setenv("AGENTGYM_ALLOW_WEAK_ISOLATION", "1")
    assert choose_backend("auto") == "local"
    with Sandbox.create() as sandbox:
        assert sandbox.backend == "local"
    with pytest.raises(SandboxError, match="no Docker daemon answers.*setup-docker.sh"):
        Sandbox.create(backend="docker")


def test_kill_processes_ends_every_process_the_agent_left_and_keeps_the_files(local: Sandbox) -> None:
    local.run("echo kept > note.txt; sleep 1000 & nohup sh -c 'trap \"\" TERM HUP; while :; do sleep 1; done' "
              ">/dev/null 2>&1 & setsid sleep 999 < /dev/null > /dev/null 2>&1 & ( ( sleep 998 & ) & )")
    assert local.kill_processes() is True
    listing = local.run("ps -eo args | grep -c '[s]leep 99' || true").stdout.strip()
    assert listing == "0"
    assert local.get_file("note.txt") == b"kept\n"


def test_isolation_says_what_the_local_backend_protects(local: Sandbox) -> None:
    text = local.isolation
    assert text.startswith("local (weak isolation)")
    assert "cannot read" in text or "CAN read" in text


@pytest.mark.skipif(os.geteuid() != 0 or "--mount-proc" not in namespace_prefix(),
                    reason="hiding host paths needs a private mount namespace (root, or a user namespace)")
def test_the_cache_and_the_home_are_hidden_from_the_sandbox(local: Sandbox, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from agentgym.cache import cache_root

    cache = cache_root()
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "redteam-secret.txt").write_text("the answer is 42")
    try:
        with Sandbox.create(backend="local") as sandbox:
            result = sandbox.run(f"cat {cache}/redteam-secret.txt; ls -A {Path.home()}; echo done")
            assert "42" not in result.stdout
            assert result.stdout.strip().splitlines()[-1] == "done"
            assert result.stdout.strip() == "done"  # the home looks empty
            other = local.root  # type: ignore[attr-defined]
            assert "No such file" in sandbox.run(f"ls {other}/work").stderr  # another sandbox is hidden too
    finally:
        (cache / "redteam-secret.txt").unlink()


def test_local_backend_works_when_the_temp_dir_is_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    private = tmp_path / "private-tmp"
    private.mkdir(mode=0o700)
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    with Sandbox.create(backend="local") as sandbox:
        assert sandbox.run("echo hi > f && cat f && pwd").stdout.startswith("hi\n")
        assert sandbox.get_file("f") == b"hi\n"
        if os.geteuid() == 0:  # it dropped to its own uid: its work root must be one that uid can enter
            assert not str(sandbox.root).startswith(str(private))  # type: ignore[attr-defined]
