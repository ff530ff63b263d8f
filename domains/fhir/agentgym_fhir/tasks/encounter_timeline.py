"""Encounters and timeline: last admission date, visit counts in a window, length of stay."""

from __future__ import annotations

from datetime import timedelta

from agentgym.tasks import Task
from agentgym_fhir.tasks.common import Context, answer_spec, call, parse_instant, submit

FAMILY = "encounter_timeline"
REQUIRES = "Encounter resources with a class (AMB, EMER, IMP) and a period"
CLASS_NAMES = {"IMP": "inpatient admission", "EMER": "emergency department visit", "AMB": "outpatient visit"}


def _class(encounter: dict) -> str:  # type: ignore[type-arg]
    return str((encounter.get("class") or {}).get("code", ""))


def build(ctx: Context) -> list[Task]:
    tasks = []
    for record in ctx.records:
        encounters = []
        for encounter in record.encounters:
            start = parse_instant((encounter.get("period") or {}).get("start"))
            end = parse_instant((encounter.get("period") or {}).get("end"))
            if start is not None and start <= record.now:
                encounters.append((start, end, _class(encounter), encounter))
        if not encounters:
            continue
        encounters.sort(key=lambda item: item[0])
        if any(parse_instant((e.get("period") or {}).get("start")) and
               parse_instant((e.get("period") or {}).get("start")) > record.now for e in record.encounters):
            continue
        variants = []
        inpatient = [e for e in encounters if e[2] == "IMP"]
        if inpatient:
            variants += ["last_admission"] + (["length_of_stay"] if inpatient[-1][1] is not None else [])
        variants += ["count_window", "last_visit"]
        variant = ctx.rng.choice(variants)
        if variant == "last_admission":
            when = inpatient[-1][0].date().isoformat()
            tasks.append(ctx.task(
                key=f"{record.id}:{variant}", record=record,
                prompt=f"On what date did the most recent inpatient admission of {record.describe()} begin? "
                       "Answer as YYYY-MM-DD.",
                answer=when,
                solution=[call("fhir_search", resource_type="Encounter",
                               params={"patient": record.id, "class": "IMP", "_sort": "-date", "_count": 1}),
                          submit(when)],
                verifier=answer_spec("date"), difficulty="easy", metadata={"variant": variant}))
        elif variant == "length_of_stay":
            start, end = inpatient[-1][0], inpatient[-1][1]
            assert end is not None
            days = (end.date() - start.date()).days
            tasks.append(ctx.task(
                key=f"{record.id}:{variant}", record=record,
                prompt=f"How many days did the most recent inpatient stay of {record.describe()} last, counting "
                       "calendar days from the admission date to the discharge date? Answer with a number.",
                answer=days,
                solution=[call("fhir_search", resource_type="Encounter",
                               params={"patient": record.id, "class": "IMP", "_sort": "-date", "_count": 1}),
                          call("date_diff", start=start.date().isoformat(), end=end.date().isoformat(), unit="days"),
                          submit(days)],
                verifier=answer_spec("number", tolerance=0), difficulty="medium", metadata={"variant": variant}))
        elif variant == "count_window":
            windows = [(kind, years) for kind in ("EMER", "AMB", "IMP") for years in (1, 2, 3)]
            counted = {window: sum(1 for e in encounters if e[2] == window[0]
                                   and e[0].date() >= (record.now - timedelta(days=365 * window[1])).date())
                       for window in windows}
            # mostly windows that hold encounters: else "0" would answer most counting tasks
            nonzero = [window for window in windows if counted[window]]
            if nonzero and ctx.rng.random() < 0.8:
                kind, years = ctx.rng.choice(nonzero)
            else:
                kind, years = ctx.rng.choice(windows)
            since = (record.now - timedelta(days=365 * years)).date()
            count = counted[(kind, years)]
            tasks.append(ctx.task(
                key=f"{record.id}:{variant}:{kind}:{years}", record=record,
                prompt=f"How many encounters of class {kind} ({CLASS_NAMES[kind]}) did {record.describe()} have "
                       f"that started on or after {since.isoformat()}? Answer with a number.",
                answer=count,
                solution=[call("fhir_search", resource_type="Encounter",
                               params={"patient": record.id, "class": kind, "date": f"ge{since.isoformat()}",
                                       "_summary": "count"}),
                          submit(count)],
                verifier=answer_spec("number", tolerance=0), difficulty="medium", metadata={"variant": variant}))
        else:
            start, _end, kind, encounter = encounters[-1]
            if sum(1 for e in encounters if e[0] == start) > 1:
                continue
            when = start.date().isoformat()
            tasks.append(ctx.task(
                key=f"{record.id}:{variant}", record=record,
                prompt=f"When did {record.describe()} last have an encounter of any kind with us? Answer with the "
                       "start date as YYYY-MM-DD.",
                answer=when,
                solution=[call("fhir_search", resource_type="Encounter",
                               params={"patient": record.id, "_sort": "-date", "_count": 1}), submit(when)],
                verifier=answer_spec("date"), difficulty="easy", metadata={"variant": variant}))
    return tasks
