"""Task generation over any store: a Synthea import, the command line, counts and unsupported families."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentgym_fhir.env import make_env
from agentgym_fhir.store import FhirStore
from agentgym_fhir.tasks import generate
from click.testing import CliRunner

from agentgym.agents.oracle import OracleAgent
from agentgym.cli import main
from agentgym.tasks import load_tasks


def test_tasks_over_a_synthea_import(synthea_store: FhirStore, play) -> None:  # type: ignore[no-untyped-def]
    from agentgym_fhir import tasks as task_module

    tasks = generate(seed=0, store=synthea_store, verbose=False)
    report = task_module.last_report
    assert report.patients == 3 and tasks
    assert report.counts["lab_value"] > 0 and report.counts["patient_lookup"] == 3
    # Synthea's codes are not in our drug tables, so some families cannot be built: they are named, with why
    assert report.unsupported and all(why for why in report.unsupported.values())
    env = make_env(store=synthea_store, tasks=tasks, knowledge=False, max_turns=60)
    failures = [task.id for task in tasks if play(env, task, OracleAgent())[0] != 1.0]
    env.close()
    assert not failures


def test_cli_generates_and_reports(small_store: FhirStore, tmp_path: Path) -> None:
    out = tmp_path / "tasks.jsonl"
    result = CliRunner().invoke(main, ["tasks", "generate", "FHIR-v0", "--store", str(small_store.path), "--out",
                                       str(out), "--option", "families=lab_value,triage,cohort"])
    assert result.exit_code == 0, result.output
    assert "lab_value" in result.output and "triage" in result.output
    assert {task.family for task in load_tasks(out)} == {"lab_value", "triage", "cohort"}


def test_unknown_family_is_an_error(small_store: FhirStore) -> None:
    with pytest.raises(ValueError, match="available: patient_lookup"):
        generate(store=small_store, families=["nope"], verbose=False)
