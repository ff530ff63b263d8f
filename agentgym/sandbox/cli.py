"""``agentgym sandbox build|doctor|prune``: make the image, say what works and how to fix what does not, clean up."""

from __future__ import annotations

import logging
import os
import shutil
import sys
from typing import Any

import click

from agentgym.sandbox import image as sandbox_image


@click.group("sandbox")
def sandbox() -> None:
    """Build, check and clean up the code-execution sandbox.

    \b
    Example:
        agentgym sandbox build && agentgym sandbox doctor
    """


@sandbox.command()
@click.option("--method", type=click.Choice(["auto", "debootstrap", "dockerfile"]), default="auto", show_default=True,
              help="debootstrap works offline (root); dockerfile needs an image registry.")
@click.option("--force", is_flag=True, help="Rebuild even if the image or the cached root file system exists.")
def build(method: str, force: bool) -> None:
    """Build the sandbox image (reused when it exists) and print its tag.

    \b
    Example:
        agentgym sandbox build --method debootstrap
    """
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        click.echo(sandbox_image.build(method=method, force=force))
    except sandbox_image.ImageBuildError as error:
        raise click.ClickException(str(error)) from error


def _report(ok: bool, what: str, fix: str = "") -> bool:
    click.echo(f"  [{'ok' if ok else 'FAIL'}] {what}")
    if not ok and fix:
        click.echo(f"         fix: {fix}")
    return ok


def _doctor_docker() -> bool:
    click.echo("docker backend:")
    try:
        import docker
        import docker.errors
        import requests.exceptions
    except ImportError as error:
        return _report(False, f"docker SDK: {error}", "pip install docker")
    try:
        client: Any = docker.from_env()
        version = client.version().get("Version", "?")
    except (docker.errors.DockerException, requests.exceptions.ConnectionError) as error:
        return _report(False, f"daemon: {error}", "bash .ci/setup-docker.sh  (installs docker.io, starts dockerd)")
    _report(True, f"daemon answers (engine {version})")
    tag = sandbox_image.image_tag()
    if not _report(sandbox_image.image_exists(client, tag), f"image {tag}", "agentgym sandbox build"):
        return False
    from agentgym.sandbox import Sandbox, SandboxError

    try:
        with Sandbox.create(backend="docker") as box:
            status = box.run("id -u; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; ls /sys/class/net; "
                             "cat /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/memory/memory.limit_in_bytes "
                             "2>/dev/null; touch /etc/x 2>/dev/null && echo root-writable", timeout=10).stdout.split()
    except SandboxError as error:
        return _report(False, f"a sandbox starts: {error}", "see /tmp/dockerd.log and `agentgym sandbox build --force`")
    _report(True, "a sandbox starts and answers")
    ok = _report(status[:1] == ["65534"], "runs as uid 65534 (nobody)")
    ok &= _report("0000000000000000" in status, "all capabilities dropped")
    ok &= _report("NoNewPrivs:" in status and status[status.index("NoNewPrivs:") + 1] == "1", "no new privileges")
    ok &= _report("eth0" not in status, "no network interface but loopback")
    ok &= _report("root-writable" not in status, "read-only root file system")
    ok &= _report(str(128) in status and str(512 << 20) in status, "pids (128) and memory (512 MiB) limits")
    return ok


def _doctor_local() -> bool:
    from agentgym.sandbox.local_backend import namespace_prefix, sandbox_python

    click.echo("local backend (isolation weaker than Docker's: it shares the host's file system and kernel view):")
    ok = _report(shutil.which("bash") is not None, "bash is installed", "apt-get install -y bash")
    ok &= _report(os.access(sandbox_python(), os.X_OK), f"python for the sandbox: {sandbox_python()}",
                  "set AGENTGYM_SANDBOX_PYTHON to a python3")
    prefix = namespace_prefix()
    _report(bool(prefix), "new PID and network namespaces" + (f" ({' '.join(prefix)})" if prefix else ""),
            "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) or run as root; without "
            "them code can reach the host's network and reset cannot end processes that left their session")
    _report(True, "rlimits: address space, file size, CPU time" + (", processes" if os.geteuid() == 0 else
                                                                   " (processes only when run as root)"))
    if os.geteuid() == 0:
        _report(True, "runs code as an unprivileged uid of its own (>= 100000), not root")
    try:
        from agentgym.sandbox import Sandbox, SandboxError

        with Sandbox.create(backend="local") as box:
            click.echo(f"  what it protects: {box.isolation}")
    except SandboxError as error:
        ok &= _report(False, "a local sandbox starts", str(error))
    return ok


@sandbox.command()
def doctor() -> None:
    """Say which backends work here, check the sandbox's limits, and how to fix what does not.

    \b
    Example:
        agentgym sandbox doctor
    """
    from agentgym.sandbox import SandboxError
    from agentgym.sandbox.backends import choose_backend

    docker_ok = _doctor_docker()
    local_ok = _doctor_local()
    requested = os.environ.get("AGENTGYM_SANDBOX", "auto") or "auto"
    logging.disable(logging.WARNING)
    try:
        chosen = choose_backend("auto")
        click.echo(f"AGENTGYM_SANDBOX={requested}: Sandbox.create() uses the {chosen} backend")
    except SandboxError as error:
        click.echo(f"AGENTGYM_SANDBOX={requested}: Sandbox.create() refuses to start: {error}")
    if not (docker_ok or local_ok):
        sys.exit(1)


@sandbox.command()
@click.option("--keep-images", is_flag=True, help="Remove containers only.")
@click.option("--cache", "remove_cache", is_flag=True, help="Also delete the cached root file system tarballs.")
def prune(keep_images: bool, remove_cache: bool) -> None:
    """Remove every container and image the project made (found by the ``agentgym`` label).

    \b
    Example:
        agentgym sandbox prune --cache
    """
    import docker
    import docker.errors

    try:
        client: Any = docker.from_env()
        containers = client.containers.list(all=True, filters={"label": sandbox_image.LABEL})
    except docker.errors.DockerException as error:
        raise click.ClickException(f"no Docker daemon answers ({error}); start it with `bash .ci/setup-docker.sh`")
    for container in containers:
        try:
            container.remove(force=True)
        except docker.errors.NotFound:
            pass
    click.echo(f"removed {len(containers)} container(s)")
    if not keep_images:
        images = client.images.list(filters={"label": sandbox_image.LABEL})
        for found in images:
            try:
                client.images.remove(found.id, force=True)
            except docker.errors.ImageNotFound:
                pass
        click.echo(f"removed {len(images)} image(s)")
    if remove_cache:
        cache = sandbox_image.cache_dir()
        shutil.rmtree(cache, ignore_errors=True)
        click.echo(f"removed the cache {cache}")
