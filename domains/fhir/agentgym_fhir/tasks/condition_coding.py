"""Coding a documented condition more specifically: the billable ICD-10-CM code for what the clinician adds
today to a diagnosis already in the record.

The record's own ICD-10-CM coding (when it has one) is never the answer: the asked code is another billable
code of the same category, named only by its clinical description, so the agent has to look it up in
ICD-10-CM (`lookup_code(text=..., system="icd10cm")`) rather than copy a field a tool returns.
"""

from __future__ import annotations

from agentgym.tasks import Task
from agentgym_fhir.codes import icd10_billable_siblings, icd10_for_snomed
from agentgym_fhir.tasks.common import Context, answer_spec, call, submit
from agentgym_fhir.tools import condition_row

FAMILY = "condition_coding"
REQUIRES = ("Conditions coded in ICD-10-CM, or in SNOMED CT with a code the project's condition table maps to "
            "ICD-10-CM, in a category with more than one billable code")
# Injury and encounter-episode codes depend on facts (encounter, laterality of a fracture) a record seldom holds.
_SKIPPED_WORDS = ("encounter", "sequela", "unspecified site")


def _normalized(code: str) -> str:
    return code.replace(".", "").upper()


def build(ctx: Context) -> list[Task]:
    tasks = []
    for record in ctx.records:
        rows = []
        for condition in record.conditions:
            row = condition_row(condition)
            coded = row.get("icd10cm") or icd10_for_snomed(row.get("snomed") or "")
            if coded and row.get("onset") and row.get("condition"):
                rows.append((row, str(coded)))
        if not rows:
            continue
        row, coded = ctx.rng.choice(rows)
        onset = str(row["onset"])[:10]
        if sum(1 for other, _ in rows if other.get("condition") == row["condition"]
               and str(other["onset"])[:10] == onset) > 1:
            continue
        recorded = {_normalized(code) for _, code in rows}
        targets = [(code, description) for code, description in icd10_billable_siblings(coded)
                   if _normalized(code) not in recorded and len(description) <= 120
                   and not any(word in description.lower() for word in _SKIPPED_WORDS)]
        if not targets:
            continue
        code, description = ctx.rng.choice(targets)
        tasks.append(ctx.task(
            key=f"{record.id}:{row.get('snomed') or coded}:{onset}:{code}", record=record,
            prompt=f"The record of {record.describe()} documents \"{row['condition']}\" with onset on {onset}. "
                   f"At today's visit the clinician documents it more specifically as: \"{description}\". "
                   "Which billable ICD-10-CM code should now be billed for it? Answer with that one code.",
            answer=code,
            solution=[call("problem_list", patient_id=record.id, include_inactive=True),
                      call("lookup_code", text=description, system="icd10cm"), submit(code)],
            verifier=answer_spec("code"), difficulty="hard",
            metadata={"recorded_code": coded, "snomed": row.get("snomed")}))
    return tasks
