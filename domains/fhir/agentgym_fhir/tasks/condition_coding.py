"""Coding a documented condition: the ICD-10-CM code of a diagnosis recorded in SNOMED CT or words."""

from __future__ import annotations

from agentgym.tasks import Task
from agentgym_fhir.codes import icd10_for_snomed
from agentgym_fhir.tasks.common import Context, answer_spec, call, submit
from agentgym_fhir.tools import condition_row

FAMILY = "condition_coding"
REQUIRES = "Conditions coded in SNOMED CT with a code the project's condition table maps to ICD-10-CM"


def build(ctx: Context) -> list[Task]:
    tasks = []
    for record in ctx.records:
        rows = []
        for condition in record.conditions:
            row = condition_row(condition)
            icd = icd10_for_snomed(row.get("snomed") or "")
            if icd and row.get("onset"):
                rows.append((row, icd))
        if not rows:
            continue
        row, icd = ctx.rng.choice(rows)
        onset = str(row["onset"])[:10]
        if sum(1 for other, _ in rows if other.get("snomed") == row["snomed"] and str(other["onset"])[:10] == onset) > 1:
            continue
        tasks.append(ctx.task(
            key=f"{record.id}:{row['snomed']}:{onset}", record=record,
            prompt=f"The record of {record.describe()} documents \"{row['condition']}\" with onset on {onset}. "
                   "What ICD-10-CM code should be billed for it? Answer with the code.",
            answer=icd,
            solution=[call("problem_list", patient_id=record.id, include_inactive=True),
                      call("lookup_code", code=icd, system="icd10cm"), submit(icd)],
            verifier=answer_spec("code"), difficulty="medium",
            metadata={"snomed": row["snomed"]}))
    return tasks
