"""`agentgym new NAME` writes a plugin distribution that works as written: installed, its env is listed, passes
`agentgym check` and its own tests (oracle 1.0, random agent near 0, the red-team attacks), and the project's
suites that cover every env (red team, training smoke test, serving) pick it up without a line added."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentgym.cli import main

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pharmacy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the written distribution, a --target site holding it installed)."""
    root = tmp_path_factory.mktemp("new")
    result = CliRunner().invoke(main, ["new", "pharmacy", "--dir", str(root / "agentgym-pharmacy")])
    assert result.exit_code == 0, result.output
    site = root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target",
                    str(site), str(root / "agentgym-pharmacy")], check=True, capture_output=True)
    return root / "agentgym-pharmacy", site


def _run(arguments: list[str], site: Path, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, *arguments], env=env, cwd=cwd, capture_output=True, text=True, check=False,
                          timeout=600)


def test_new_writes_the_standard_domain_shape(pharmacy: tuple[Path, Path]) -> None:
    written = {str(path.relative_to(pharmacy[0])) for path in pharmacy[0].rglob("*") if path.is_file()}
    assert {"pyproject.toml", "agentgym_pharmacy/plugin.py", "agentgym_pharmacy/data.py", "agentgym_pharmacy/tools.py",
            "agentgym_pharmacy/tasks/__init__.py", "agentgym_pharmacy/verify.py", "agentgym_pharmacy/env.py",
            "tests/test_env.py", "tests/test_redteam.py"} <= written
    assert not any("{{" in path.read_text() for path in pharmacy[0].rglob("*") if path.is_file())


def test_the_new_env_is_listed_and_passes_its_own_tests(pharmacy: tuple[Path, Path]) -> None:
    listed = _run(["-m", "agentgym.cli", "list", "--no-count", "Pharmacy-v0"], pharmacy[1])
    assert "Pharmacy-v0" in listed.stdout and "agentgym-pharmacy" in listed.stdout, listed.stdout + listed.stderr
    # its tests run `agentgym check`, the oracle on every task, the random agent and the red-team attacks
    tests = _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], pharmacy[1], cwd=pharmacy[0])
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    assert " passed" in tests.stdout and "failed" not in tests.stdout


def test_the_suites_that_cover_every_env_cover_the_new_one(pharmacy: tuple[Path, Path]) -> None:
    suites = ["tests/redteam/test_no_constant_wins.py", "tests/baselines/test_training.py",
              "tests/baselines/test_codeact_domains.py", "tests/serve/test_every_env.py"]
    collected = _run(["-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *suites], pharmacy[1])
    for suite in suites:
        assert any(line.startswith(suite) and "Pharmacy-v0" in line for line in collected.stdout.splitlines()), (
            suite, collected.stdout[-2000:] + collected.stderr[-2000:])


def test_new_refuses_bad_names_and_taken_places(tmp_path: Path) -> None:
    runner = CliRunner()
    bad = runner.invoke(main, ["new", "9 lives", "--dir", str(tmp_path / "x")])
    assert bad.exit_code == 1 and "not a valid env name" in bad.output and "Traceback" not in bad.output
    taken = runner.invoke(main, ["new", "sql", "--dir", str(tmp_path / "sql")])
    assert taken.exit_code == 1 and "SQL-v0 is already registered" in taken.output and not (tmp_path / "sql").exists()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    occupied = runner.invoke(main, ["new", "pharmacy", "--dir", str(tmp_path / "full")])
    assert occupied.exit_code == 1 and "already exists and is not empty" in occupied.output
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"
