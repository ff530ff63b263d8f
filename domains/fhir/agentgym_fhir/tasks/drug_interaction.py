"""Drug-drug safety: which of the patient's active medication orders interact with a drug about to be started.

The prompt states the rules, so it names every possible partner drug; the answer is therefore the record's
own evidence, the ids of the active MedicationRequests that match, which no reading of the prompt can give.
"""

from __future__ import annotations

from agentgym.tasks import Task
from agentgym_fhir.tasks.common import Context, answer_spec, call, submit
from agentgym_fhir.vocab.drugs import DRUGS, INTERACTIONS

FAMILY = "drug_interaction"
REQUIRES = "active MedicationRequests coded in RxNorm, with drugs from the project's interaction table"


def partners(drug: str) -> list[tuple[str, str]]:
    """(other drug key, effect) for every interaction rule naming `drug`."""
    found = []
    for first, second, effect in INTERACTIONS:
        if first == drug:
            found.append((second, effect))
        elif second == drug:
            found.append((first, effect))
    return found


def build(ctx: Context) -> list[Task]:
    tasks = []
    by_rxcui: dict[str, list[str]] = {}
    for key, drug in DRUGS.items():
        by_rxcui.setdefault(drug.rxcui, []).append(key)
    candidates = sorted({d for pair in INTERACTIONS for d in pair[:2]})
    for record in ctx.records:
        active_rows = [row for row in record.active_medications() if row.get("rxnorm") and row.get("id")]
        if not active_rows:
            continue
        active_keys = {key for row in active_rows for key in by_rxcui.get(str(row["rxnorm"]), [])}
        hits = [d for d in candidates if d not in active_keys and any(p in active_keys for p, _ in partners(d))]
        if hits:
            drug = ctx.rng.choice(hits)
        elif ctx.rng.random() < 0.4:
            drug = ctx.rng.choice([d for d in candidates if d not in active_keys])
        else:
            continue
        rules = partners(drug)
        interacting = {DRUGS[p].rxcui for p, _ in rules if p in active_keys}
        orders = sorted(str(row["id"]) for row in active_rows if str(row["rxnorm"]) in interacting)
        gold = [[order, f"MedicationRequest/{order}"] for order in orders]
        rule_text = "; ".join(f"{DRUGS[drug].name} + {DRUGS[p].name}: {effect}" for p, effect in rules)
        tasks.append(ctx.task(
            key=f"{record.id}:{drug}", record=record,
            prompt=f"{DRUGS[drug].name.capitalize()} is about to be started for {record.describe()}. Interaction "
                   f"rules: {rule_text}. Which of the patient's active medication orders interact with "
                   f"{DRUGS[drug].name} by these rules? List the id of every such active MedicationRequest (a JSON "
                   "array, one per line, or separated by commas), or answer \"none found\".",
            answer=gold,
            solution=[call("medication_list", patient_id=record.id), submit(orders or "none found")],
            verifier=answer_spec("set"), difficulty="hard" if gold else "medium",
            metadata={"drug": drug, "interacting": len(gold)}))
    return tasks
