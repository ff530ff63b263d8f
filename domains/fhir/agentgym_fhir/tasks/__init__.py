"""FHIR-v0 task families and `generate`, which builds every family's tasks from the data.

One module per family; each has `FAMILY`, `REQUIRES` (what the data must hold, in words) and
`build(ctx) -> list[Task]`. `generate` reads the records once, runs the families, and reports how many tasks
each made and which families the data could not support.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

from agentgym.tasks import Task
from agentgym_fhir.tasks import (
    active_medications,
    admission_labs,
    cohort,
    cohort_labs,
    condition_coding,
    drug_condition,
    drug_interaction,
    encounter_timeline,
    inpatient_reconciliation,
    lab_change,
    lab_value,
    medication_order,
    patient_lookup,
    potassium_replacement,
    record_vital,
    referral,
    renal_dosing,
    risk_score,
    trend_since_order,
    triage,
    vital_aggregate,
)
from agentgym_fhir.tasks.common import Context, PatientRecord, load_records, measured_difficulty, task_work

FAMILY_MODULES: dict[str, ModuleType] = {module.FAMILY: module for module in [
    patient_lookup, lab_value, lab_change, vital_aggregate, active_medications, drug_condition, drug_interaction,
    risk_score, encounter_timeline, cohort, potassium_replacement, referral, condition_coding, triage,
    record_vital, medication_order, renal_dosing, admission_labs, inpatient_reconciliation, trend_since_order,
    cohort_labs,
]}
FAMILIES = list(FAMILY_MODULES)


def _generator_digest() -> str:
    from agentgym_fhir.env import source_digest

    return source_digest()


# Taken when the generator is imported (not when tasks are cached), so it names the code this process runs.
GENERATOR_DIGEST = _generator_digest()


class GenerationReport:
    """What `generate` made: tasks per family, and the families the data could not support (with why)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.unsupported: dict[str, str] = {}
        self.patients = 0

    def lines(self) -> list[str]:
        out = [f"{self.patients} patients; {sum(self.counts.values())} tasks"]
        out += [f"  {family}: {count}" for family, count in self.counts.items() if count]
        out += [f"  {family}: unsupported by this data (needs {why})" for family, why in self.unsupported.items()]
        return out


last_report = GenerationReport()


def _reference_date(source: Any) -> datetime | None:
    getter = getattr(source, "get_meta", None)
    text = getter("reference_date") if callable(getter) else None
    if not text:
        return None
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.replace(hour=12) if len(text) <= 10 else moment


def _open(store: Any) -> Any:
    if store is None:
        from agentgym_fhir.data import default_store

        return default_store()
    if isinstance(store, (str, Path)):
        from agentgym_fhir.env import open_store

        return open_store(store)
    return store


def _answer_kind(task: Task) -> str | None:
    """The `agentgym.answers.ANSWER_SCHEMAS` kind the `submit` schema shows for a task's answer."""
    if task.verifier.name != "fhir_answer":
        return None
    params = task.verifier.params
    kind = params.get("kind")
    if task.answer is None:
        return "text"  # "none found"
    if kind == "number":
        return "quantity" if params.get("require_unit") else "number"
    return {"set": "list", "yes_no": "yes_no"}.get(str(kind), "text")


def _measured(task: Task) -> Task:
    """The task with its measured difficulty (`tasks.common.task_work`) and the answer schema `submit` shows."""
    metadata = {**task.metadata, "work": task_work(task)}
    kind = _answer_kind(task)
    if kind is not None and "answer_schema" not in metadata:
        metadata["answer_schema"] = kind
    return task.model_copy(update={"difficulty": measured_difficulty(task), "metadata": metadata})


def generate(seed: int = 0, store: Any = None, *, families: Sequence[str] | str | None = None,
             test_fraction: float = 0.2, patients: int | None = None, verbose: bool = True,
             records: list[PatientRecord] | None = None, **options: Any) -> list[Task]:
    """Every family's tasks over a store (default: the generated population).

    Args:
        seed: Seeds each family's choices (which lab, which window...); same seed and data, same tasks.
        store: A store path, an open `FhirStore`, a server session, or None for the default population.
        families: Only these families (a list, or a comma-separated string from the command line).
        test_fraction: Share of patients whose tasks go to the test split.
        patients: Size of the default population (when `store` is None).
        verbose: Print the per-family counts and unsupported families to stderr.
        records: Already-loaded patient records (skips reading the store).
        **options: Family options, e.g. lab_value_per_patient=2, risk_score_per_patient=2.

    Returns:
        The tasks, family by family. `agentgym_fhir.tasks.last_report` holds the counts.
    """
    global last_report
    if store is None and patients is not None:
        from agentgym_fhir.data import default_store

        source = default_store(int(patients))
    else:
        source = _open(store) if records is None else None
    if isinstance(families, str):
        families = [name.strip() for name in families.split(",") if name.strip()]
    chosen = list(families or FAMILIES)
    unknown = [name for name in chosen if name not in FAMILY_MODULES]
    if unknown:
        raise ValueError(f"unknown task families {unknown}; available: {', '.join(FAMILIES)}")
    if records is None:
        records = load_records(source, _reference_date(source))
    report = GenerationReport()
    report.patients = len(records)
    tasks: list[Task] = []
    for name in chosen:
        module = FAMILY_MODULES[name]
        made = module.build(Context(records, int(seed), name, float(test_fraction), dict(options)))
        made = [_measured(task) for task in made]
        report.counts[name] = len(made)
        if not made:
            report.unsupported[name] = module.REQUIRES
        tasks.extend(made)
    last_report = report
    if verbose:
        for line in report.lines():
            print(line, file=sys.stderr)
    return tasks


__all__ = ["FAMILIES", "FAMILY_MODULES", "GENERATOR_DIGEST", "GenerationReport", "generate", "last_report"]
