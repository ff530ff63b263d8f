"""Patient lookup: the MRN of a patient found by name and birth date."""

from __future__ import annotations

from collections import Counter

from agentgym.tasks import Task
from agentgym_fhir.tasks.common import Context, answer_spec, call, submit

FAMILY = "patient_lookup"
REQUIRES = "patients with a name, birth date and an MRN identifier (type MR)"


def build(ctx: Context) -> list[Task]:
    keys = Counter((r.family_name.lower(), r.first_given.lower(), r.patient.get("birthDate")) for r in ctx.records)
    tasks = []
    for record in ctx.records:
        mrn, born = record.mrn, record.patient.get("birthDate")
        key = (record.family_name.lower(), record.first_given.lower(), born)
        if not mrn or not born or not record.family_name or keys[key] != 1:
            continue
        params = {"family": record.family_name, "given": record.first_given, "birthdate": born}
        tasks.append(ctx.task(
            key=record.id, record=record,
            prompt=f"What is the medical record number (MRN) of the patient named {record.first_given} "
                   f"{record.family_name}, born {born}? Answer with the MRN only.",
            answer=mrn, solution=[call("fhir_search", resource_type="Patient", params=params), submit(mrn)],
            verifier=answer_spec("code"), difficulty="easy"))
    return tasks
