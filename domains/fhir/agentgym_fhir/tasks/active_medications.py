"""Active medications: the set of drugs a patient is on now."""

from __future__ import annotations

from agentgym.tasks import Task
from agentgym_fhir.tasks.common import Context, answer_spec, call, submit

FAMILY = "active_medications"
REQUIRES = "MedicationRequest resources with a status and an RxNorm-coded medication"


def build(ctx: Context) -> list[Task]:
    tasks = []
    for record in ctx.records:
        if not record.medications:
            continue
        drugs: dict[str, list[str]] = {}
        for row in record.active_medications():
            key = row.get("rxnorm") or row.get("medication")
            if key and key not in drugs:
                drugs[key] = [str(row.get("medication") or key), *( [str(row["rxnorm"])] if row.get("rxnorm") else [])]
        gold = sorted(drugs.values())
        names = [item[0] for item in gold]
        tasks.append(ctx.task(
            key=record.id, record=record,
            prompt=f"List every medication {record.describe()} is actively prescribed (MedicationRequest status "
                   "active). Give each drug once, by name or RxNorm code, as a list (a JSON array, one per line, or "
                   "separated by commas); answer \"none found\" if there are none.",
            answer=gold, solution=[call("medication_list", patient_id=record.id), submit(names or "none found")],
            verifier=answer_spec("set"), difficulty="easy" if len(gold) <= 1 else "medium",
            metadata={"count": len(gold)}))
    return tasks
