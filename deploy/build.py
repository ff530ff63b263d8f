"""Build the image of a served env (deploy/serve.Dockerfile), with or without a Python package index.

    python deploy/build.py --tag agentgym-serve              # pip installs the project from the package index
    python deploy/build.py --offline --tag agentgym-serve    # no network: from the sandbox image and this venv

The build context is staged in a temporary folder, never the repository itself (whose `.venv` and caches would
be sent to the daemon): `src/` holds the files git tracks. With `--offline` the context also holds
`site-packages/`: the project's distributions as wheels built here from `src/` (setuptools, no index), unpacked,
and every third-party distribution they need (`SERVED` with their requirements, resolved from the installed
metadata) copied file by file from the Python running this script. That Python must match the base image's
(same minor version, so compiled extensions load: the sandbox image's Debian python3 is 3.11, like this venv).
The default offline base is the sandbox image (`agentgym sandbox build` makes it without a registry).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = "deploy/serve.Dockerfile"
# What the image serves: the core with its serve extra, and the domains whose dependencies are light. ClinicalQA
# (agentgym-clinical) needs agentgym-knowledge, which pulls in sentence-transformers and torch.
SERVED: dict[str, tuple[str, set[str]]] = {
    "agentgym-core": (".", {"serve"}),
    "agentgym-sql": ("domains/sql", set()),
    "agentgym-fhir": ("domains/fhir", set()),
    "agentgym-cli": ("domains/cli", set()),
}


class BuildError(RuntimeError):
    """The image cannot be built as asked; the message says what to do."""


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _active(requirement: Requirement, extras: set[str]) -> bool:
    environment = {key: str(value) for key, value in default_environment().items()}
    return requirement.marker is None or any(
        requirement.marker.evaluate({**environment, "extra": extra}) for extra in ["", *extras])


def third_party_closure(roots: Sequence[metadata.Distribution], extras: dict[str, set[str]]) -> list[metadata.Distribution]:
    """The installed distributions that `roots` (the project's freshly built ones, with `extras` by name) need,
    transitively, leaving out the roots themselves.

    Raises:
        BuildError: one of them is not installed in this Python.
    """
    installed = {_normal(dist.metadata["Name"]): dist for dist in metadata.distributions()}
    ours = {_normal(root.metadata["Name"]) for root in roots} | {"agentgym"}  # "agentgym": the core's old name
    queue: list[tuple[str, set[str]]] = []
    for root in roots:
        chosen = extras.get(_normal(root.metadata["Name"]), set())
        queue += [(_normal(requirement.name), set(requirement.extras))
                  for requirement in map(Requirement, root.requires or []) if _active(requirement, chosen)]
    wanted: dict[str, set[str]] = {}
    while queue:
        name, wanted_extras = queue.pop()
        if name in ours or (name in wanted and wanted_extras <= wanted[name]):
            continue
        wanted[name] = wanted.get(name, set()) | wanted_extras
        dist = installed.get(name)
        if dist is None:
            raise BuildError(f"{name} is needed in the image but not installed here; pip install it (or build "
                             "without --offline, from the package index)")
        queue += [(_normal(requirement.name), set(requirement.extras))
                  for requirement in map(Requirement, dist.requires or []) if _active(requirement, wanted[name])]
    return [installed[name] for name in sorted(wanted)]


def _place(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)  # same file system: no copy
    except OSError:
        shutil.copy2(source, target)


def stage_context(out: Path, *, offline: bool) -> Path:
    """Write the build context into `out` (created) and return it. See the module docstring."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout
    source = out / "src"
    for name in tracked.decode().split("\0"):
        if name and (ROOT / name).is_file():
            _place(ROOT / name, source / name)
    (out / "deploy").mkdir(parents=True, exist_ok=True)
    shutil.copy2(ROOT / DOCKERFILE, out / DOCKERFILE)
    if not offline:
        return out
    site = out / "site-packages"
    wheels = out / "wheels"
    for folder, _ in SERVED.values():
        # --no-build-isolation: setuptools from this venv, so nothing is fetched
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                        "--no-index", "--wheel-dir", str(wheels), str(source / folder)], check=True)
    for wheel in sorted(wheels.glob("*.whl")):
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(site)
    shutil.rmtree(wheels)
    built = [metadata.Distribution.at(info) for info in sorted(site.glob("*.dist-info"))]
    for dist in third_party_closure(built, {_normal(name): extras for name, (_, extras) in SERVED.items()}):
        base = Path(str(dist.locate_file("")))
        for file in dist.files or []:
            path = Path(str(dist.locate_file(file))).resolve()
            if "__pycache__" in file.parts or not path.is_file():
                continue
            try:
                relative = path.relative_to(base.resolve())
            except ValueError:
                continue  # a console script or data outside site-packages: the image runs `python3 -m`
            _place(path, site / relative)
    return out


def build(tag: str, *, offline: bool, base: str | None = None) -> None:
    """Stage the context and run `docker build` (with `--network none` when offline)."""
    if offline and base is None:
        sys.path.insert(0, str(ROOT))
        from agentgym.sandbox.image import image_tag

        base = image_tag()
        if subprocess.run(["docker", "image", "inspect", base], check=False, capture_output=True).returncode != 0:
            raise BuildError(f"the offline base {base} is not built: run `agentgym sandbox build` first")
    with tempfile.TemporaryDirectory(prefix="agentgym-serve-context-") as folder:
        context = stage_context(Path(folder), offline=offline)
        command = ["docker", "build", "--file", str(context / DOCKERFILE), "--tag", tag]
        if base:
            command += ["--build-arg", f"BASE={base}"]
        if offline:
            command += ["--network", "none"]
        environment = dict(os.environ)
        if subprocess.run(["docker", "buildx", "version"], check=False, capture_output=True).returncode != 0:
            environment.setdefault("DOCKER_BUILDKIT", "0")  # no buildx plugin: the classic builder
        if subprocess.run([*command, str(context)], check=False, env=environment).returncode != 0:
            raise BuildError(f"docker build of {tag} failed; see its output above")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tag", default="agentgym-serve", help="image tag (default: agentgym-serve)")
    parser.add_argument("--offline", action="store_true",
                        help="no network: install this venv's packages into the sandbox image (or --base)")
    parser.add_argument("--base", default=None, help="base image (default: python:3.11-slim; offline: the sandbox "
                                                     "image)")
    arguments = parser.parse_args()
    try:
        build(arguments.tag, offline=arguments.offline, base=arguments.base)
    except BuildError as error:
        sys.exit(f"error: {error}")
    print(arguments.tag)


if __name__ == "__main__":
    main()
