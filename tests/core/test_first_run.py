"""A first run that talks: every cache build says what it builds, roughly how long it takes and where it
goes, then shows progress and how long it took (on stderr); `agentgym list` on a fresh cache builds nothing
and answers at once. Each build here is a cheap one, in a cold cache of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentgym.cache import NotBuilt, building, no_builds


@pytest.fixture
def cold_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("AGENTGYM_CACHE", str(cache))
    monkeypatch.delenv("AGENTGYM_QUIET", raising=False)
    return cache


def test_list_on_a_cold_cache_builds_nothing_and_says_how_to_count(cold_cache: Path) -> None:
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "agentgym.cli", "list"], check=False, capture_output=True,
                            text=True, env={**os.environ, "COLUMNS": "200"}, timeout=120)
    elapsed = time.perf_counter() - started
    print(f"agentgym list on a cold cache: {elapsed:.2f} s")  # reported, not asserted (shared machine)
    assert result.returncode == 0, result.stderr
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in result.stdout.splitlines()
            if line.startswith("│") and line.split("│")[1].strip()}
    assert rows["SQL-v0"] == rows["FHIR-v0"] == rows["CLI-v0"] == "not built"
    assert "agentgym list --count" in result.stdout
    assert "building" not in result.stderr and "Traceback" not in result.stderr
    built = [path for path in cold_cache.rglob("*") if path.is_file() and not path.name.endswith(".lock")]
    assert built == []


def test_a_database_build_announces_itself(cold_cache: Path, capfd: pytest.CaptureFixture[str]) -> None:
    from agentgym_sql.data import DATABASES, ensure_sqlite

    path = ensure_sqlite(DATABASES["school"])
    lines = capfd.readouterr().err.splitlines()
    assert lines[0] == (f"agentgym: building the SQL database 'school' (SQLite) (first use only, seconds, up to "
                        f"a minute) -> {path}")
    assert lines[-1].startswith("agentgym: built the SQL database 'school' (SQLite) in ") and lines[-1].endswith(" s")
    ensure_sqlite(DATABASES["school"])  # cached now: silent
    assert capfd.readouterr().err == ""


def test_the_fhir_store_build_shows_progress(cold_cache: Path, capfd: pytest.CaptureFixture[str]) -> None:
    from agentgym_fhir.data import default_store

    store = default_store(patients=4, seed=1)
    lines = capfd.readouterr().err.splitlines()
    assert lines[0].startswith("agentgym: building the FHIR store (4 synthetic patients) (first use only, about ")
    assert lines[0].endswith(f"-> {store.path}")
    assert any(line.strip().startswith("... 4/4 patients (100%") for line in lines[1:-1])
    assert lines[-1].startswith("agentgym: built the FHIR store (4 synthetic patients) in ")


def test_no_builds_refuses_before_anything_is_written(cold_cache: Path, capfd: pytest.CaptureFixture[str]) -> None:
    from agentgym_sql.data import DATABASES, ensure_sqlite

    with no_builds(), pytest.raises(NotBuilt, match="the SQL database 'hr'"):
        ensure_sqlite(DATABASES["hr"])
    assert list((cold_cache / "sql").glob("*.sqlite")) == [] and capfd.readouterr().err == ""


def test_a_failed_build_says_it_stopped(capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(OSError), building("a thing", tmp_path / "thing", estimate="about 1 s", total=2,
                                          unit="parts") as progress:
        progress.advance()
        raise OSError("disk full")
    err = capfd.readouterr().err
    assert "agentgym: building a thing (first use only, about 1 s) ->" in err
    assert "agentgym: building a thing stopped after" in err


def test_agentgym_quiet_silences_builds(monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str],
                                        tmp_path: Path) -> None:
    monkeypatch.setenv("AGENTGYM_QUIET", "1")
    with building("a thing", tmp_path, estimate="about 1 s", total=1) as progress:
        progress.advance()
    assert capfd.readouterr().err == ""
