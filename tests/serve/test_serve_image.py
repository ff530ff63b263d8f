"""deploy/serve.Dockerfile builds without a package index (deploy/build.py --offline: the sandbox image plus this
venv's packages) and the image serves an env that a client on the host plays to its verifier score.

Slow (about five minutes on two busy cores: a ~500 MB build context, then the container builds SQL-v0's databases
and task set on first start), so it runs in `make test-slow`, and needs the Docker daemon and the sandbox image.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import httpx
import pytest

from tests.serve.conftest import SERVE_EXTRA, free_port

for _module in ("openenv", "uvicorn", "websockets"):
    pytest.importorskip(_module, reason=SERVE_EXTRA)

import agentgym  # noqa: F401  (registers the envs)

pytestmark = [pytest.mark.docker, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def image() -> Iterator[str]:
    from agentgym.sandbox.backends import docker_problem

    problem = docker_problem()
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the Docker tests, but {problem}")
        pytest.skip(problem)
    tag = f"agentgym-serve-test:{uuid.uuid4().hex[:8]}"
    build = subprocess.run([sys.executable, str(ROOT / "deploy" / "build.py"), "--offline", "--tag", tag],
                           check=False, capture_output=True, text=True, timeout=1200)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    yield tag
    subprocess.run(["docker", "image", "rm", "--force", tag], check=False, capture_output=True)


def test_the_offline_image_serves_an_env_to_the_host(image: str) -> None:
    port = free_port()
    token = "image-test-token"
    name = f"agentgym-serve-test-{uuid.uuid4().hex[:8]}"
    # the daemon runs without a bridge here, so the container shares the host's network to be reachable
    subprocess.run(["docker", "run", "--detach", "--rm", "--name", name, "--network", "host",
                    "--env", f"AGENTGYM_SERVE_TOKEN={token}", image, "SQL-v0", "--host", "127.0.0.1",
                    "--port", str(port)], check=True, capture_output=True, timeout=60)
    try:
        url = f"http://127.0.0.1:{port}"
        health = None
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            try:
                answer = httpx.get(url + "/health", headers={"Authorization": f"Bearer {token}"}, timeout=5)
            except httpx.HTTPError:
                time.sleep(2)
                continue
            health = answer.json()
            break
        logs = subprocess.run(["docker", "logs", name], check=False, capture_output=True, text=True).stderr[-2000:]
        assert health is not None, f"the served env never answered /health; container log:\n{logs}"
        assert health["status"] == "healthy" and health["env"] == "SQL-v0" and health["data"]["tasks"] > 0
        assert httpx.get(url + "/health").status_code == 401  # the token from the environment holds
        # the container runs as its own user, not root
        user = subprocess.run(["docker", "exec", name, "id", "-u"], check=False, capture_output=True, text=True).stdout.strip()
        assert user not in ("", "0"), user
        # a client on the host plays a task to its verifier score on the containerised env
        local = gym.make("SQL-v0")
        local.reset(seed=3)
        solution = local.unwrapped.task.solution
        remote = gym.make("SQL-v0", remote=url, remote_token=token)
        remote.reset(seed=3)
        for call in solution:
            step = remote.step(call)
        assert step[1] == 1.0 and step[2] is True
        remote.close()
        local.close()
    finally:
        subprocess.run(["docker", "rm", "--force", name], check=False, capture_output=True)
