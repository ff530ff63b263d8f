"""Choosing a backend: ``AGENTGYM_SANDBOX=docker|local|auto``, and what ``auto`` finds on this machine."""

from __future__ import annotations

import logging
import os
import threading

from agentgym.sandbox.base import SandboxError

logger = logging.getLogger(__name__)

BACKENDS = ("auto", "docker", "local")
_auto_choice: dict[str | None, str] = {}
_warned_local: set[str] = set()
_auto_lock = threading.Lock()


def docker_problem(image: str | None = None) -> str | None:
    """Return why the Docker backend cannot run here, or None if a daemon answers and the image exists or builds."""
    try:
        import docker
        import docker.errors
        import requests.exceptions

        client = docker.from_env()
        client.ping()
    except ImportError as error:
        return f"the docker package is missing ({error}): pip install docker"
    except (docker.errors.DockerException, requests.exceptions.ConnectionError) as error:
        return f"no Docker daemon answers ({error}); start one with `bash .ci/setup-docker.sh`"
    from agentgym.sandbox import image as sandbox_image

    if image is not None:
        return None if sandbox_image.image_exists(client, image) else f"the image {image!r} is not present"
    try:
        sandbox_image.build()
    except sandbox_image.ImageBuildError as error:
        return f"the sandbox image could not be built: {error}"
    return None


WEAK_ISOLATION_VARIABLE = "AGENTGYM_ALLOW_WEAK_ISOLATION"


def weak_isolation_allowed(allow_weak_isolation: bool = False) -> bool:
    """Whether ``auto`` may fall back to the local backend: the flag, or ``AGENTGYM_ALLOW_WEAK_ISOLATION=1``."""
    value = os.environ.get(WEAK_ISOLATION_VARIABLE, "").strip().lower()
    return allow_weak_isolation or value in ("1", "true", "yes", "on")


def choose_backend(backend: str = "auto", image: str | None = None, *, allow_weak_isolation: bool = False) -> str:
    """Return ``"docker"`` or ``"local"`` for the requested backend.

    ``"auto"`` defers to ``AGENTGYM_SANDBOX`` when it is set, then takes Docker when it works (the answer is
    remembered for the process). It never silently takes the weaker local backend: only when
    ``allow_weak_isolation`` is true or ``AGENTGYM_ALLOW_WEAK_ISOLATION=1`` is set (with a warning), or when
    ``local`` is asked for by name.

    Raises:
        SandboxError: for a backend name that is not one of ``auto``, ``docker``, ``local``; or for ``auto`` when
            Docker does not work and weak isolation was not allowed (the message says how to fix it).
    """
    if backend == "auto":
        backend = os.environ.get("AGENTGYM_SANDBOX", "").strip().lower() or "auto"
        source = "AGENTGYM_SANDBOX"
    else:
        source = "backend"
    if backend not in BACKENDS:
        raise SandboxError(f"unknown sandbox backend {backend!r} (from {source}); use one of: {', '.join(BACKENDS)}")
    if backend != "auto":
        return backend
    with _auto_lock:
        if image not in _auto_choice:
            problem = docker_problem(image)
            _auto_choice[image] = "docker" if problem is None else "!" + problem
        choice = _auto_choice[image]
    if choice == "docker":
        return choice
    problem = choice[1:]
    if not weak_isolation_allowed(allow_weak_isolation):
        raise SandboxError(
            f"no Docker sandbox: {problem}. The local backend's isolation is weaker (an agent could read files "
            "of the host), so it is not chosen silently. Fix: start Docker and build the image with "
            "`bash .ci/setup-docker.sh`; or accept weak isolation with allow_weak_isolation=True "
            "(Sandbox.create(..., allow_weak_isolation=True), gym.make(..., allow_weak_isolation=True)) or "
            f"{WEAK_ISOLATION_VARIABLE}=1; or ask for it by name with backend='local' / AGENTGYM_SANDBOX=local")
    with _auto_lock:  # said once per reason, not once per env or sandbox that resolves "auto"
        first = problem not in _warned_local
        _warned_local.add(problem)
    if first:
        logger.warning("sandbox: using the local backend, whose isolation is weaker than Docker's, because %s",
                       problem)
    return "local"
