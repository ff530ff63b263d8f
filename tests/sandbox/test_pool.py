"""The warm pool: clean and healthy sandboxes on acquire, dead ones restarted, everything removed on close."""

from __future__ import annotations

import os

import pytest

from agentgym.sandbox import SandboxError, SandboxPool, get_pool


def _my_containers() -> list[object]:
    import docker

    from agentgym.sandbox.docker_backend import OWNER_LABEL

    return docker.from_env().containers.list(all=True, filters={"label": f"{OWNER_LABEL}={os.getpid()}"})


@pytest.mark.docker
def test_pool_hands_out_clean_healthy_sandboxes(docker_ready: None) -> None:
    before = len(_my_containers())
    with SandboxPool(2, backend="docker") as pool:
        assert len(_my_containers()) == before + 2
        first = pool.acquire()
        first.put_files({"mine.txt": "episode 1"})
        first.run_python("secret = 1")
        first.close()  # goes back to the pool
        assert not first.closed
        again = pool.acquire()
        other = pool.acquire()
        for sandbox in (again, other):
            assert sandbox.run("ls -A").stdout == ""
            assert "NameError" in sandbox.run_python("secret").stderr
        with pytest.raises(SandboxError, match="no sandbox was released"):
            pool.acquire(timeout=0.1)
        # A container that died while idle is restarted on the next acquire.
        pool.release(other)
        other.container.kill()  # type: ignore[attr-defined]
        revived = pool.acquire(timeout=5)
        assert revived.run("echo alive").stdout == "alive\n"
        pool.release(revived)
        pool.release(again)
    assert len(_my_containers()) == before


def test_get_pool_is_process_wide() -> None:
    pool = get_pool(size=1, backend="local")
    try:
        assert get_pool(size=1, backend="local") is pool
        with pool.acquire() as sandbox:
            assert sandbox.run("echo pooled").stdout == "pooled\n"
    finally:
        pool.close()
    assert get_pool(size=1, backend="local") is not pool
    get_pool(size=1, backend="local").close()
