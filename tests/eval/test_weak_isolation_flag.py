"""`agentgym eval --allow-weak-isolation`: the flag reaches the sandbox layer through
AGENTGYM_ALLOW_WEAK_ISOLATION for the run only, is on by itself for the oracle, and is recorded in run.json."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from eval_toyenv import make_env

import agentgym
from agentgym.agents import agent_is_privileged
from agentgym.cli import main

SEEN: list[str | None] = []
VARIABLE = "AGENTGYM_ALLOW_WEAK_ISOLATION"


def make_watching_env(**kwargs: Any) -> Any:
    """The toy env, noting the variable as a sandbox-making env would read it at `gym.make`."""
    SEEN.append(os.environ.get(VARIABLE))
    return make_env(**kwargs)


agentgym.register(id="EvalToyWatch-v0", entry_point=f"{__name__}:make_watching_env", kwargs={"count": 2})


@pytest.fixture(autouse=True)
def _no_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(VARIABLE, raising=False)
    SEEN.clear()


def _run(out: Path, *arguments: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["eval", "EvalToyWatch-v0", "--out", str(out), "--no-progress", "--no-plots",
                                       "--bootstrap", "0", *arguments])
    assert result.exit_code == 0, result.output
    run: dict[str, Any] = json.loads((out / "run.json").read_text())
    return run


def test_a_model_agent_gets_strong_isolation_unless_asked(tmp_path: Path) -> None:
    run = _run(tmp_path / "random", "--agent", "random")
    assert run["allow_weak_isolation"] is False
    assert SEEN and set(SEEN) == {None}
    assert VARIABLE not in os.environ


def test_the_flag_sets_the_variable_for_the_run_only(tmp_path: Path) -> None:
    run = _run(tmp_path / "random", "--agent", "random", "--allow-weak-isolation")
    assert run["allow_weak_isolation"] is True
    assert SEEN and set(SEEN) == {"1"}
    assert VARIABLE not in os.environ  # restored after the run


def test_the_oracle_is_trusted_with_weak_isolation(tmp_path: Path) -> None:
    run = _run(tmp_path / "oracle", "--agent", "oracle")
    assert run["allow_weak_isolation"] is True and set(SEEN) == {"1"}
    assert VARIABLE not in os.environ


def test_changing_the_flag_still_resumes_the_run(tmp_path: Path) -> None:
    _run(tmp_path / "run", "--agent", "random")
    run = _run(tmp_path / "run", "--agent", "random", "--allow-weak-isolation")
    assert run["allow_weak_isolation"] is True


def test_privileged_agents_are_known_without_building_them() -> None:
    assert agent_is_privileged("oracle")
    assert not agent_is_privileged("random")
    assert not agent_is_privileged("openai:some-model")  # no client is built, no key needed
    with pytest.raises(ValueError, match="unknown agent"):
        agent_is_privileged("nonsense")
