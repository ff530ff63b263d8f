"""Grading sandboxes (`Sandbox.create(grader=True)`): a work dir copied exactly, tests run as a user id that is
neither the agent's nor the grading supervisor's, the verdict from the supervisor's own `waitpid`, and nothing a
test starts outliving it. Played on Docker and on the local backend."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from agentgym.sandbox import Sandbox, SandboxError
from agentgym.sandbox.backends import docker_problem

BACKENDS = ["docker", "local"]


@pytest.fixture(params=BACKENDS)
def pair(request: pytest.FixtureRequest) -> Iterator[tuple[Sandbox, Sandbox]]:
    """An agent sandbox and a grading sandbox of one backend."""
    if request.param == "docker" and docker_problem() is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the Docker tests, but {docker_problem()}")
        pytest.skip(str(docker_problem()))
    agent = Sandbox.create(request.param)
    grader = Sandbox.create(request.param, grader=True)
    try:
        yield agent, grader
    finally:
        agent.close()
        grader.close()


def _uid(sandbox: Sandbox) -> str:
    return sandbox.run("id -u").stdout.strip()


def test_the_copy_keeps_modes_links_and_unreadable_entries(pair: tuple[Sandbox, Sandbox]) -> None:
    agent, grader = pair
    setup = agent.run("mkdir -p d/e && echo hi > d/f && chmod 751 d/f && ln -s /etc/hostname d/abs && "
                      "ln d/f d/hard && echo s > d/e/secret && chmod 000 d/e/secret && chmod 300 d/e && "
                      "touch -d '2001-02-03 04:05:06' d/f && mkfifo d/p")
    assert setup.ok, setup.stderr
    grader.load_workdir(agent.export_workdir())
    listing = grader.run("chmod 700 d/e d/e/secret; stat -c '%n %a %F %h' d/f d/hard d/p; readlink d/abs; "
                         "cat d/e/secret; date -u -r d/f +%Y")
    assert listing.ok, listing.stderr
    assert "d/f 751 regular file 2" in listing.stdout and "d/hard 751 regular file 2" in listing.stdout
    assert "d/p " in listing.stdout and "fifo" in listing.stdout
    assert "/etc/hostname\ns\n2001\n" in listing.stdout


def test_a_copy_that_writes_through_a_link_is_refused(pair: tuple[Sandbox, Sandbox]) -> None:
    import io
    import tarfile

    _, grader = pair
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        link = tarfile.TarInfo("out")
        link.type, link.linkname = tarfile.SYMTYPE, "/tmp"
        archive.addfile(link)
        escape = tarfile.TarInfo("out/planted")
        escape.size = 1
        archive.addfile(escape, io.BytesIO(b"x"))
    with pytest.raises(SandboxError, match="refusing"):
        grader.load_workdir(buffer.getvalue())
    assert not grader.run("ls /tmp/planted 2>/dev/null").stdout


def test_tests_run_as_a_third_user_and_the_kernel_gives_the_verdict(pair: tuple[Sandbox, Sandbox]) -> None:
    agent, grader = pair
    outcomes = grader.grade(["id -u; exit 0", "exit 3", "sleep 30"], env={"PATH": "/usr/bin:/bin"}, timeout=2)
    assert [outcome[0] for outcome in outcomes] == [0, 3, -1]
    test_uid = outcomes[0][1].strip()
    if os.geteuid() == 0 or agent.backend == "docker":
        assert test_uid != _uid(agent)
        supervisor = grader.grade(["stat -c %u /proc/1; cat /proc/1/environ; ls /proc/1/fd"],
                                  env={"PATH": "/usr/bin:/bin"}, timeout=5)[0]
        assert supervisor[1].strip() != test_uid  # the supervisor is another user
        assert supervisor[0] != 0  # and the tests cannot read its environment or descriptors


def test_nothing_a_test_starts_outlives_it(pair: tuple[Sandbox, Sandbox]) -> None:
    _, grader = pair
    outcomes = grader.grade(["(setsid sleep 300 &) ; nohup sleep 300 >/dev/null 2>&1 & exit 0",
                             "ps -eo comm | grep -c '^sleep$' || true"], env={"PATH": "/usr/bin:/bin"}, timeout=5)
    assert outcomes[0][0] == 0
    assert outcomes[1][1].strip() == "0"


def test_a_test_gets_only_the_environment_it_is_given(pair: tuple[Sandbox, Sandbox]) -> None:
    _, grader = pair
    outcome = grader.grade(["env | sort; ls /proc/self/fd | wc -l"], env={"PATH": "/usr/bin:/bin", "X": "1"},
                           timeout=5)[0]
    names = {line.split("=", 1)[0] for line in outcome[1].splitlines() if "=" in line}
    assert names <= {"PATH", "X", "HOME", "AGENTGYM_SCRATCH", "WORKSPACE", "PWD", "SHLVL", "_"}
    assert outcome[1].splitlines()[-1] == "4"  # 0, 1, 2 and the one `ls` opened
