"""The image recipe (mirror discovery, tag), the `agentgym sandbox` commands, and cleanup when the process ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentgym.sandbox import image
from agentgym.sandbox.cli import sandbox as sandbox_group


def test_mirror_is_read_from_apt_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTGYM_DEBIAN_MIRROR", raising=False)
    sources = tmp_path / "sources.list.d"
    sources.mkdir()
    (sources / "other.list").write_text("deb [arch=amd64 signed-by=/k.gpg] https://example.invalid/apt stable main\n")
    (sources / "debian.sources").write_text(textwrap.dedent("""\
        Types: deb-src
        URIs: http://source.invalid/debian
        Suites: bookworm

        Types: deb
        URIs: http://mirror.invalid/debian
        Suites: bookworm bookworm-updates
        Components: main
        """))
    assert image.find_mirror("bookworm", apt_dir=tmp_path) == "http://mirror.invalid/debian"
    (sources / "debian.sources").write_text("Types: deb\nURIs: http://mirror.invalid/debian\nSuites: bookworm\n"
                                            "Enabled: no\n")
    (tmp_path / "sources.list").write_text("# comment\ndeb http://legacy.invalid/debian bookworm main\n")
    assert image.find_mirror("bookworm", apt_dir=tmp_path) == "http://legacy.invalid/debian"
    with pytest.raises(image.ImageBuildError, match="AGENTGYM_DEBIAN_MIRROR"):
        image.find_mirror("trixie", apt_dir=tmp_path)
    monkeypatch.setenv("AGENTGYM_DEBIAN_MIRROR", "http://override.invalid/debian")
    assert image.find_mirror("trixie", apt_dir=tmp_path) == "http://override.invalid/debian"


def test_tag_is_a_hash_of_the_recipe(monkeypatch: pytest.MonkeyPatch) -> None:
    tag = image.image_tag()
    assert tag.startswith("agentgym-sandbox:") and len(tag.split(":")[1]) == 12
    assert image.image_tag() == tag
    monkeypatch.setitem(image.RECIPE, "packages", [*image.RECIPE["packages"], "curl"])
    assert image.image_tag() != tag
    assert "sqlite3" in image.dockerfile() and "USER 65534:65534" in image.dockerfile()


@pytest.mark.docker
def test_build_reuses_the_image_and_doctor_reports(docker_ready: None) -> None:
    runner = CliRunner()
    built = runner.invoke(sandbox_group, ["build"])
    assert built.exit_code == 0 and built.output.strip().endswith(image.image_tag())
    doctor = runner.invoke(sandbox_group, ["doctor"])
    assert doctor.exit_code == 0, doctor.output
    assert "FAIL" not in doctor.output.split("local backend")[0]  # every Docker check passes here
    assert "weaker" in doctor.output


_CHILD = """
import sys, time
from agentgym.sandbox import Sandbox
sandbox = Sandbox.create(backend="docker")
print(sandbox.container_id, flush=True)
if sys.argv[1] == "wait":
    time.sleep(60)
"""


def _container_exists(container_id: str) -> bool:
    import docker
    import docker.errors

    try:
        docker.from_env().containers.get(container_id)
    except docker.errors.NotFound:
        return False
    return True


@pytest.mark.docker
@pytest.mark.parametrize("ending", ["exit", "sigterm"])
def test_containers_are_removed_when_the_process_ends(docker_ready: None, ending: str) -> None:
    child = subprocess.Popen([sys.executable, "-c", _CHILD, "wait" if ending == "sigterm" else "exit"],
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    container_id = child.stdout.readline().strip()
    assert container_id and _container_exists(container_id)
    if ending == "sigterm":
        os.kill(child.pid, signal.SIGTERM)
    assert child.wait(timeout=30) in (0, -signal.SIGTERM)
    assert not _container_exists(container_id)


@pytest.mark.docker
def test_container_goes_away_when_its_process_is_killed_hard(docker_ready: None) -> None:
    import time

    child = subprocess.Popen([sys.executable, "-c", _CHILD, "wait"], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    container_id = child.stdout.readline().strip()
    assert _container_exists(container_id)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    for _ in range(100):  # the daemon removes it once the supervisor sees end of file
        if not _container_exists(container_id):
            break
        time.sleep(0.1)
    assert not _container_exists(container_id)
