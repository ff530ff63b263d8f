"""Drug-condition safety: does the record hold a condition or allergy that rules a drug out, by a stated rule?

A plain yes/no would be answered half the time by a constant, so the answer is the evidence: the date the
record holds the forbidding condition or allergy, or "none found" (kept to at most a third of the tasks).
"""

from __future__ import annotations

from agentgym.tasks import Task
from agentgym_fhir.tasks.common import Context, PatientRecord, answer_spec, call, submit
from agentgym_fhir.tools import condition_row
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


def _recorded_on(record: PatientRecord, code: str, is_allergy: bool) -> str | None:
    """The earliest date the record holds the active condition (onset) or allergy (recorded date) `code`."""
    dates = []
    if is_allergy:
        for allergy in record.allergies:
            status = ((allergy.get("clinicalStatus") or {}).get("coding") or [{}])[0].get("code", "active")
            codes = {c.get("code") for c in (allergy.get("code") or {}).get("coding") or []}
            if status == "active" and code in codes and allergy.get("recordedDate"):
                dates.append(str(allergy["recordedDate"])[:10])
    else:
        for condition in record.active_conditions():
            row = condition_row(condition)
            if row.get("snomed") == code and row.get("onset"):
                dates.append(str(row["onset"])[:10])
    return min(dates) if dates else None


def build(ctx: Context) -> list[Task]:
    positives, negatives = [], []
    for record in ctx.records:
        conditions, allergies = record.condition_codes(), record.active_allergy_codes()
        found, missing = [], []
        for drug, blocker, why in CONTRAINDICATIONS:
            code, name, is_allergy = _blocker(blocker)
            present = code in (allergies if is_allergy else conditions)
            (found if present else missing).append((drug, why, code, name, is_allergy))
        # the record's own contraindication when it has one (its date is the answer), otherwise a rule it passes
        chosen = ctx.rng.choice(found) if found else ctx.rng.choice(missing) if missing else None
        if chosen is None:
            continue
        drug, why, code, name, is_allergy = chosen
        answer = _recorded_on(record, code, is_allergy) if found else None
        if found and answer is None:
            continue
        where = "active allergies" if is_allergy else "active problem list"
        field = "the AllergyIntolerance's recordedDate" if is_allergy else "the Condition's onset date"
        step = (call("fhir_search", resource_type="AllergyIntolerance", params={"patient": record.id})
                if is_allergy else call("problem_list", patient_id=record.id))
        task = ctx.task(
            key=f"{record.id}:{drug}:{code}", record=record,
            prompt=f"A clinician wants to start {DRUGS[drug].name} for {record.describe()}. Our rule: do not give "
                   f"{DRUGS[drug].name} to a patient with {name} ({why}). Check the patient's {where} for {name} "
                   f"(SNOMED CT {code}). If it is there, the rule forbids the drug: answer with the date it was "
                   f"recorded ({field}, YYYY-MM-DD; the earliest if there are several). If it is not there, "
                   "answer \"none found\".",
            answer=answer, solution=[step, submit(answer or "none found")],
            verifier=answer_spec("date") if answer else answer_spec("none"), difficulty="medium",
            metadata={"drug": drug, "blocker": code, "forbidden": answer is not None})
        (positives if answer else negatives).append(task)
    # "none found" may answer at most a third of the tasks (the dates differ from patient to patient)
    kept = {id(task) for task in ctx.rng.sample(negatives, min(len(negatives), len(positives) // 2))}
    return positives + [task for task in negatives if id(task) in kept]
