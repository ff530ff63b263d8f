"""Choosing a backend: ``AGENTGYM_SANDBOX=docker|local|auto``, and what ``auto`` finds on this machine."""

from __future__ import annotations

import logging
import os
import threading

from agentgym.sandbox.base import SandboxError

logger = logging.getLogger(__name__)

BACKENDS = ("auto", "docker", "local")
_auto_choice: dict[str | None, str] = {}
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


def choose_backend(backend: str = "auto", image: str | None = None) -> str:
    """Return ``"docker"`` or ``"local"`` for the requested backend.

    ``"auto"`` defers to ``AGENTGYM_SANDBOX`` when it is set, then takes Docker when it works (the answer is
    remembered for the process) and otherwise the local backend, with a warning that its isolation is weaker.

    Raises:
        SandboxError: for a backend name that is not one of ``auto``, ``docker``, ``local``.
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
            if problem is None:
                _auto_choice[image] = "docker"
            else:
                logger.warning("sandbox: using the local backend, whose isolation is weaker than Docker's, because %s",
                               problem)
                _auto_choice[image] = "local"
        return _auto_choice[image]
