"""The ``agentgym fhir`` command group, run through click's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

from agentgym_fhir.cli import fhir
from agentgym_fhir.store import FhirStore
from click.testing import CliRunner


def test_help_has_examples() -> None:
    runner = CliRunner()
    for command in ([], ["generate"], ["import"], ["serve"], ["info"]):
        result = runner.invoke(fhir, [*command, "--help"])
        assert result.exit_code == 0 and "Example" in result.output


def test_generate_info_and_import(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "pop.sqlite"
    result = runner.invoke(fhir, ["generate", "--patients", "3", "--seed", "1", "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    assert "for 3 patients" in result.output
    again = runner.invoke(fhir, ["generate", "--patients", "3", "--out", str(out)])
    assert again.exit_code != 0 and "--overwrite" in again.output
    info = json.loads(runner.invoke(fhir, ["info", str(out)]).output)
    assert info["by_type"]["Patient"] == 3 and info["seed"] == "1"

    export = tmp_path / "Patient.ndjson"
    export.write_text("\n".join(json.dumps(p) for p in FhirStore.open(out).iter_resources("Patient")) + "\n{oops\n")
    target = tmp_path / "copy.sqlite"
    report = tmp_path / "report.json"
    result = runner.invoke(fhir, ["import", str(export), "--out", str(target), "--report", str(report)])
    assert result.exit_code == 0, result.output
    assert "imported 3 of 3" in result.output and "malformed JSON" in result.output
    assert json.loads(report.read_text())["issues"][0]["source"].endswith("Patient.ndjson:4")
    assert FhirStore.open(target).count("Patient") == 3


def test_missing_store_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(fhir, ["import", str(tmp_path), "--out", str(tmp_path / "s.sqlite")])
    assert result.exit_code != 0 and "no .json" in result.output
