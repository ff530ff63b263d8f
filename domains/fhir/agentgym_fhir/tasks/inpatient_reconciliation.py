"""Medication reconciliation across encounters: which drugs given during an inpatient stay the patient does not
take today.

Multi-hop across resource types: the stay (Encounter, class IMP), the drugs given during it
(MedicationAdministration whose context is that Encounter; a long stay holds more administrations than one
page shows), and today's active orders (MedicationRequest). Drugs are compared by RxNorm ingredient code, so the
intravenous potassium chloride of a stay is the same drug as an active oral order of it.
"""

from __future__ import annotations

from typing import Any

from agentgym.tasks import Task
from agentgym_fhir.tasks.common import (
    RXNORM,
    Context,
    PatientRecord,
    answer_spec,
    balance,
    call,
    identify,
    parse_instant,
    submit,
)

FAMILY = "inpatient_reconciliation"
REQUIRES = "inpatient Encounters (class IMP) with MedicationAdministrations whose context is the stay"
WHICH = {"last": "most recent", "previous": "second most recent", "first": "first"}
PAGE = 20  # fhir_search's default page: more administrations than this need paging


def _stay(record: PatientRecord, which: str) -> dict[str, Any] | None:
    stays = record.inpatient_stays()
    if which == "last":
        return stays[-1] if stays else None
    if len(stays) < 2:
        return None
    return stays[-2] if which == "previous" else stays[0]


def _drug(resource: dict[str, Any]) -> tuple[str, str] | None:
    for coding in (resource.get("medicationCodeableConcept") or {}).get("coding") or []:
        if coding.get("system") == RXNORM and coding.get("code"):
            return str(coding["code"]), str(coding.get("display") or coding["code"])
    return None


def build(ctx: Context) -> list[Task]:
    candidates: dict[str, list[tuple[Any, Task]]] = {}
    for record in ctx.records:
        active = {str(row["rxnorm"]) for row in record.active_medications() if row.get("rxnorm")}
        for which, wording in WHICH.items():
            stay = _stay(record, which)
            if stay is None:
                continue
            reference = f"Encounter/{stay['id']}"
            given = [a for a in record.administrations
                     if (a.get("context") or {}).get("reference") == reference and a.get("status") == "completed"]
            drugs = {found for found in map(_drug, given) if found is not None}
            if not drugs:
                continue
            answer = sorted([[name, code] for code, name in drugs if code not in active])
            started = parse_instant(stay["period"]["start"])
            assert started is not None
            who, find, traps = identify(ctx, record)
            traps += ["paging"] if len(given) > PAGE else []
            if any((a.get("context") or {}).get("reference") == reference and a.get("status") != "completed"
                   for a in record.administrations):
                traps.append("not_given")  # a dose held or refused: its drug was not given
            if any(code in active for code, _name in drugs):
                traps.append("derived_value")  # a drug given in the stay is on today's list under another order
            pages = [call("fhir_search", resource_type="MedicationAdministration",
                          params={"context": reference, "_count": 100, "_offset": offset,
                                  "_elements": "medicationCodeableConcept,status"})
                     for offset in range(0, len(given), 100)]
            task = ctx.task(
                key=f"{record.id}:{which}", record=record,
                prompt=(f"Medication reconciliation for {who}: which drugs were given "
                        f"(MedicationAdministration, status completed) during the {wording} inpatient stay "
                        "(Encounter class IMP) and are not on the patient's active medication orders today? Compare "
                        "drugs by RxNorm ingredient code, whatever the route or dose. Answer with a JSON array of the "
                        "drug names or RxNorm codes, each drug once, in any order; answer with an empty array [] if every "
                        "drug given is still active."),
                answer=answer or None,
                solution=[*find, call("fhir_search", resource_type="Encounter",
                               params={"patient": record.id, "class": "IMP", "_sort": "date"}),
                          *pages, call("medication_list", patient_id=record.id, status="active"),
                          submit([name for name, _code in answer])],
                verifier=answer_spec("set") if answer else answer_spec("none"), difficulty="hard",
                metadata={"which": which, "encounter": stay["id"], "admitted": started.date().isoformat(),
                          "administrations": len(given), "traps": traps})
            candidates.setdefault(task.split, []).append((answer, task))
    tasks: list[Task] = []
    for split in sorted(candidates):
        tasks.extend(balance(candidates[split], ctx.rng))
    return sorted(tasks, key=lambda task: task.id)
