"""Fixtures for the SQL tests: a cache directory shared by the session, and a throwaway PostgreSQL server.

`postgres_server` starts a real cluster (initdb + pg_ctl) in a temporary directory on a free local port and
removes it afterwards; as root it runs the server as the `postgres` user, which initdb requires.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

SPIDER_SAMPLE = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "samples" / "spider"


@pytest.fixture(scope="session", autouse=True)
def sql_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Build databases once per session, in $AGENTGYM_CACHE when set (CI reuses it), else a temp dir."""
    existing = os.environ.get("AGENTGYM_CACHE")
    if existing:
        yield Path(existing)
        return
    path = tmp_path_factory.getbasetemp().parent / "agentgym-sql-cache"
    path.mkdir(exist_ok=True)
    os.environ["AGENTGYM_CACHE"] = str(path)
    try:
        yield path
    finally:
        os.environ.pop("AGENTGYM_CACHE", None)


def _postgres_bin() -> Path | None:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(candidates[-1]).parent if candidates else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """An admin DSN of a fresh PostgreSQL cluster on 127.0.0.1, stopped and deleted after the session."""
    binaries = _postgres_bin()
    if binaries is None:
        if os.environ.get("CI"):
            pytest.fail("CI must run the PostgreSQL tests, but the binaries are not installed "
                        "(.ci/run installs the postgresql package)")
        pytest.skip("PostgreSQL binaries not found (apt-get install postgresql)")
    as_root = os.geteuid() == 0
    prefix = ["runuser", "-u", "postgres", "--"] if as_root else []
    workdir = Path(tempfile.mkdtemp(prefix="agentgym-pg-"))
    data = workdir / "data"
    if as_root:
        shutil.chown(workdir, "postgres", "postgres")
    port = _free_port()
    user = "postgres" if as_root else os.environ.get("USER", "postgres")
    subprocess.run(prefix + [str(binaries / "initdb"), "-D", str(data), "-U", user, "--auth=trust", "-E", "UTF8",
                             "--no-sync"], check=True, capture_output=True)
    log = workdir / "server.log"
    options = f"-p {port} -k {workdir} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(prefix + [str(binaries / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(log), "-w",
                             "start"], check=True, capture_output=True)
    try:
        yield f"host=127.0.0.1 port={port} user={user} dbname=postgres"
    finally:
        subprocess.run(prefix + [str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                       capture_output=True, check=False)  # best effort: the directory is deleted next
        time.sleep(0.1)
        shutil.rmtree(workdir, ignore_errors=True)
