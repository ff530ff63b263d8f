"""Build the sandbox image with no image registry, and find it again by a hash of its recipe.

The image is a Debian root file system made by ``debootstrap`` from the mirror apt already uses on this machine,
imported with ``docker import``. The tag is a content hash of the recipe, so a changed package list builds a new
image and an unchanged one is reused. The root file system tarball is cached under ``~/.cache/agentgym/sandbox``
so a rebuild after ``agentgym sandbox prune`` takes seconds instead of a minute. Where a registry answers, the
same recipe can be built from a Dockerfile instead.

Run as ``python -m agentgym.sandbox.image`` (prints the tag) or ``agentgym sandbox build``.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

LABEL = "agentgym"
IMAGE_REPOSITORY = "agentgym-sandbox"

# Changing anything here changes the tag: the next build makes a new image.
RECIPE: dict[str, Any] = {
    "format": 1,
    "suite": "bookworm",
    "variant": "minbase",
    "packages": [
        "python3", "bash", "coreutils", "findutils", "grep", "sed", "gawk", "tar", "gzip",
        "sqlite3", "git", "procps",
    ],
    # Trimmed after bootstrap: documentation and apt's caches are dead weight in a sandbox.
    "remove": [
        "var/cache/apt", "var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/info",
        "usr/share/locale",
    ],
}


class ImageBuildError(RuntimeError):
    """The sandbox image could not be built; the message says what to install or run."""


def recipe_hash() -> str:
    """Return the first 12 hex digits of the SHA-256 of the recipe."""
    return hashlib.sha256(json.dumps(RECIPE, sort_keys=True).encode()).hexdigest()[:12]


def image_tag() -> str:
    """Return the tag the current recipe builds, e.g. ``agentgym-sandbox:3f2a9c0d1e4b``."""
    return f"{IMAGE_REPOSITORY}:{recipe_hash()}"


def cache_dir() -> Path:
    """Return the directory that holds cached root file system tarballs (created if missing)."""
    from agentgym.cache import cache_dir as agentgym_cache

    return agentgym_cache("sandbox")


def _sources_entries(text: str, deb822: bool) -> list[tuple[str, list[str]]]:
    """Return (uri, suites) pairs from one apt sources file, skipping disabled and non-binary entries."""
    entries: list[tuple[str, list[str]]] = []
    if deb822:
        for stanza in text.split("\n\n"):
            fields: dict[str, str] = {}
            for line in stanza.splitlines():
                if line.startswith("#") or ":" not in line:
                    continue
                key, _, value = line.partition(":")
                fields[key.strip().lower()] = value.strip()
            if fields.get("enabled", "yes").lower() == "no" or "deb" not in fields.get("types", "").split():
                continue
            for uri in fields.get("uris", "").split():
                entries.append((uri, fields.get("suites", "").split()))
    else:
        for line in text.splitlines():
            words = line.split("#", 1)[0].split()
            if len(words) < 3 or words[0] != "deb":
                continue
            if words[1].startswith("["):  # options such as [arch=amd64 signed-by=...]
                while words and not words[0].endswith("]"):
                    words.pop(0)
                words.pop(0)
                words.insert(0, "deb")
            if len(words) >= 3:
                entries.append((words[1], [words[2]]))
    return entries


def find_mirror(suite: str = RECIPE["suite"], apt_dir: Path = Path("/etc/apt")) -> str:
    """Return the Debian mirror apt uses for ``suite``, read from apt's sources files.

    ``AGENTGYM_DEBIAN_MIRROR`` overrides it. Raises ImageBuildError if no enabled source lists the suite.
    """
    override = os.environ.get("AGENTGYM_DEBIAN_MIRROR")
    if override:
        return override
    files = sorted((apt_dir / "sources.list.d").glob("*.sources")) + sorted((apt_dir / "sources.list.d").glob("*.list"))
    if (apt_dir / "sources.list").exists():
        files.append(apt_dir / "sources.list")
    for path in files:
        for uri, suites in _sources_entries(path.read_text(errors="replace"), deb822=path.suffix == ".sources"):
            if suite in suites and uri.startswith(("http://", "https://", "file:")):
                return uri
    raise ImageBuildError(
        f"no enabled apt source lists the suite {suite!r} in {apt_dir}/sources.list.d; "
        "set AGENTGYM_DEBIAN_MIRROR to a Debian mirror URL"
    )


def _docker_client() -> Any:
    import docker  # imported here so that `import agentgym.sandbox` works without a daemon

    return docker.from_env()


def image_exists(client: Any | None = None, tag: str | None = None) -> bool:
    """Return whether the image for the current recipe (or ``tag``) is present in the daemon."""
    import docker.errors

    client = client or _docker_client()
    try:
        client.images.get(tag or image_tag())
    except docker.errors.ImageNotFound:
        return False
    return True


def _bootstrap_rootfs(tarball: Path) -> None:
    """Run debootstrap into a temporary directory and write its root file system as a gzip tarball."""
    if shutil.which("debootstrap") is None:
        raise ImageBuildError("debootstrap is not installed: run `apt-get install -y debootstrap` (as root)")
    if os.geteuid() != 0:
        raise ImageBuildError("debootstrap needs root: run `sudo agentgym sandbox build`")
    mirror = find_mirror()
    work = Path(tempfile.mkdtemp(prefix="rootfs-", dir=cache_dir()))
    rootfs = work / "rootfs"
    try:
        command = [
            "debootstrap", f"--variant={RECIPE['variant']}", "--include=" + ",".join(RECIPE["packages"]),
            RECIPE["suite"], str(rootfs), mirror,
        ]
        logger.info("bootstrapping %s from %s (about a minute)", RECIPE["suite"], mirror)
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            log = rootfs / "debootstrap" / "debootstrap.log"
            detail = log.read_text(errors="replace")[-2000:] if log.exists() else result.stderr[-2000:]
            raise ImageBuildError(f"debootstrap failed (exit {result.returncode}) with mirror {mirror}:\n{detail}")
        for relative in RECIPE["remove"]:
            target = rootfs / relative
            if target.is_dir():
                shutil.rmtree(target)
                target.mkdir()
        (rootfs / "work").mkdir(exist_ok=True)
        partial = tarball.with_suffix(".partial")
        with open(partial, "wb") as out:
            tar = subprocess.Popen(["tar", "-C", str(rootfs), "--numeric-owner", "-c", "."], stdout=subprocess.PIPE)
            gzip = subprocess.run(["gzip", "-1"], stdin=tar.stdout, stdout=out, check=False)
            assert tar.stdout is not None
            tar.stdout.close()
            if tar.wait() != 0 or gzip.returncode != 0:
                raise ImageBuildError(f"archiving the root file system in {rootfs} failed")
        partial.rename(tarball)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _import(tarball: Path, tag: str) -> None:
    command = ["docker", "import", "--change", f"LABEL {LABEL}=1", "--change", "USER 65534:65534",
               "--change", "WORKDIR /work", str(tarball), tag]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ImageBuildError(f"`docker import` failed: {result.stderr.strip()}; is the daemon running (`docker info`)?")


def dockerfile() -> str:
    """Return a Dockerfile that builds the same recipe from a registry's Debian image."""
    packages = " ".join(RECIPE["packages"])
    trims = " ".join("/" + path + "/*" for path in RECIPE["remove"])
    return (
        f"FROM debian:{RECIPE['suite']}-slim\n"
        f"LABEL {LABEL}=1\n"
        f"RUN apt-get update && apt-get install -y --no-install-recommends {packages} && rm -rf {trims}\n"
        "RUN mkdir -p /work\n"
        "USER 65534:65534\nWORKDIR /work\n"
    )


def build(method: str = "auto", force: bool = False) -> str:
    """Build the sandbox image unless it exists, and return its tag.

    Args:
        method: ``"debootstrap"`` (offline, needs root and debootstrap), ``"dockerfile"`` (needs a registry),
            or ``"auto"``: debootstrap where it can run, the Dockerfile otherwise.
        force: Rebuild even if the image or the cached root file system exists.

    Raises:
        ImageBuildError: with what to install or run to fix it.
    """
    tag = image_tag()
    client = _docker_client()
    if not force and image_exists(client, tag):
        logger.debug("image %s already present", tag)
        return tag
    if method == "auto":
        method = "debootstrap" if shutil.which("debootstrap") and os.geteuid() == 0 else "dockerfile"
    if method not in ("debootstrap", "dockerfile"):
        raise ValueError(f"unknown method {method!r}; use 'auto', 'debootstrap' or 'dockerfile'")
    from agentgym.cache import building

    with building(f"the sandbox image {tag} ({method})", f"the Docker daemon's images (root file system cached in "
                  f"{cache_dir()})", estimate="about 1-3 minutes"):
        _build_with(method, client, tag, force)
    return tag


def _build_with(method: str, client: Any, tag: str, force: bool) -> None:
    """Build the image `tag` by `method` ("debootstrap" or "dockerfile"); raises ImageBuildError."""
    if method == "debootstrap":
        tarball = cache_dir() / f"rootfs-{recipe_hash()}.tar.gz"
        if force or not tarball.exists():
            _bootstrap_rootfs(tarball)
        _import(tarball, tag)
    elif method == "dockerfile":
        import docker.errors

        try:
            client.images.build(fileobj=io.BytesIO(dockerfile().encode()), tag=tag, rm=True, labels={LABEL: "1"})
        except (docker.errors.BuildError, docker.errors.APIError) as error:
            raise ImageBuildError(
                f"building from the Dockerfile failed ({error}); with no registry, install debootstrap and build as "
                "root: `apt-get install -y debootstrap && agentgym sandbox build --method debootstrap`"
            ) from error


def main(argv: list[str] | None = None) -> int:
    """Build or reuse the image and print its tag; exit 1 with the reason on failure."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args = sys.argv[1:] if argv is None else argv
    try:
        print(build(force="--force" in args))
    except ImageBuildError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
