"""Cohort questions across patients: how many patients match demographic, condition or medication criteria."""

from __future__ import annotations

from collections import defaultdict

from agentgym.tasks import Task
from agentgym_fhir.tasks.common import Context, answer_spec, call, submit

FAMILY = "cohort"
REQUIRES = "several patients with gender and birth date, coded Conditions and MedicationRequests"
PAGE = 100


def _paged(resource_type: str, params: dict, total: int) -> list[dict]:  # type: ignore[type-arg]
    steps = []
    for offset in range(0, max(total, 1), PAGE):
        steps.append(call("fhir_search", resource_type=resource_type,
                          params={**params, "_count": PAGE, "_offset": offset, "_elements": "subject"}))
    return steps


def build(ctx: Context) -> list[Task]:
    records = ctx.records
    if len(records) < 5:
        return []
    now = max(record.now for record in records)
    tasks = []
    # demographics: patients of one gender born before a year
    years = sorted({int(r.patient["birthDate"][:4]) for r in records if r.patient.get("birthDate")})
    for year in years[len(years) // 10:: max(1, len(years) // 12)][:12]:
        for gender in ("female", "male"):
            count = sum(1 for r in records if r.sex == gender and r.birth_date and r.birth_date.year < year)
            params = {"gender": gender, "birthdate": f"lt{year}-01-01", "_summary": "count"}
            tasks.append(ctx.task(
                key=f"demo:{gender}:{year}", now=now,
                prompt=f"How many {gender} patients in the record system were born before {year}-01-01? Answer "
                       "with a number.",
                answer=count, solution=[call("fhir_search", resource_type="Patient", params=params), submit(count)],
                verifier=answer_spec("number", tolerance=0), difficulty="easy", metadata={"variant": "demographic"}))
    # conditions: distinct patients with an active diagnosis
    holders: dict[tuple[str, str], set[str]] = defaultdict(set)
    condition_totals: dict[str, int] = defaultdict(int)
    for record in records:
        for condition in record.active_conditions():
            for coding in (condition.get("code") or {}).get("coding") or []:
                if coding.get("system") == "http://snomed.info/sct" and coding.get("code"):
                    holders[(coding["code"], coding.get("display") or coding["code"])].add(record.id)
                    condition_totals[coding["code"]] += 1
    for (code, display), patients in sorted(holders.items()):
        if len(patients) < 2:
            continue
        params = {"code": f"http://snomed.info/sct|{code}", "clinical-status": "active"}
        tasks.append(ctx.task(
            key=f"condition:{code}", now=now,
            prompt=f"How many distinct patients have an active diagnosis of {display} (SNOMED CT {code})? Count "
                   "each patient once. Answer with a number.",
            answer=len(patients),
            solution=[*_paged("Condition", params, condition_totals[code]), submit(len(patients))],
            verifier=answer_spec("number", tolerance=0), difficulty="hard", metadata={"variant": "condition"}))
    # medications: distinct patients with an active order of a drug
    takers: dict[tuple[str, str], set[str]] = defaultdict(set)
    order_totals: dict[str, int] = defaultdict(int)
    for record in records:
        for row in record.active_medications():
            if row.get("rxnorm"):
                takers[(str(row["rxnorm"]), str(row.get("medication")))].add(record.id)
                order_totals[str(row["rxnorm"])] += 1
    for (code, name), patients in sorted(takers.items()):
        if len(patients) < 2:
            continue
        params = {"code": f"http://www.nlm.nih.gov/research/umls/rxnorm|{code}", "status": "active"}
        tasks.append(ctx.task(
            key=f"medication:{code}", now=now,
            prompt=f"How many distinct patients have an active order for {name} (RxNorm {code})? Answer with a number.",
            answer=len(patients),
            solution=[*_paged("MedicationRequest", params, order_totals[code]), submit(len(patients))],
            verifier=answer_spec("number", tolerance=0), difficulty="hard", metadata={"variant": "medication"}))
    return tasks
