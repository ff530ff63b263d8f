"""Drug-condition safety: does the record hold a condition or allergy that rules a drug out, by a stated rule."""

from __future__ import annotations

from agentgym.tasks import Task
from agentgym_fhir.tasks.common import Context, answer_spec, balance, call, submit
from agentgym_fhir.vocab.conditions import ALLERGIES, CONDITIONS
from agentgym_fhir.vocab.drugs import CONTRAINDICATIONS, DRUGS

FAMILY = "drug_condition"
REQUIRES = "Conditions coded in SNOMED CT (or allergies) that the project's contraindication table names"


def _blocker(key: str) -> tuple[str, str, bool]:
    """(SNOMED code, name, is_allergy) of a contraindication's condition or allergy key."""
    if key in CONDITIONS:
        return CONDITIONS[key].snomed, CONDITIONS[key].name, False
    code, display, _category, _criticality = ALLERGIES[key]
    return code, display, True


def build(ctx: Context) -> list[Task]:
    candidates = []
    for record in ctx.records:
        conditions, allergies = record.condition_codes(), record.active_allergy_codes()
        positives, negatives = [], []
        for drug, blocker, why in CONTRAINDICATIONS:
            code, name, is_allergy = _blocker(blocker)
            present = code in (allergies if is_allergy else conditions)
            (positives if present else negatives).append((drug, blocker, why, code, name, is_allergy))
        # a yes when the record has one, otherwise a no; `balance` then keeps as many of one as of the other
        if positives:
            chosen = ctx.rng.choice(positives)
        elif negatives:
            chosen = ctx.rng.choice(negatives)
        else:
            continue
        drug, _blocker_key, why, code, name, is_allergy = chosen
        answer = "yes" if chosen in positives else "no"
        where = "active allergies" if is_allergy else "active problem list"
        step = (call("fhir_search", resource_type="AllergyIntolerance", params={"patient": record.id})
                if is_allergy else call("problem_list", patient_id=record.id))
        candidates.append((answer, ctx.task(
            key=f"{record.id}:{drug}:{code}", record=record,
            prompt=f"A clinician wants to start {DRUGS[drug].name} for {record.describe()}. Our rule: do not give "
                   f"{DRUGS[drug].name} to a patient with {name} ({why}). Does the patient's {where} contain "
                   f"{name} (SNOMED CT {code}), so that the rule forbids it? Answer yes or no.",
            answer=answer, solution=[step, submit(answer)], verifier=answer_spec("yes_no"), difficulty="medium",
            metadata={"drug": drug, "blocker": code})))
    return balance(candidates, ctx.rng)
