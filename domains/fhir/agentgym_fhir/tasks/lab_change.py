"""Change of a lab value over a window: last minus first measurement between two dates."""

from __future__ import annotations

from datetime import timedelta

from agentgym.tasks import Task
from agentgym_fhir.tasks.common import (
    RESULT_RULE,
    UNIT_CONTRACT,
    Context,
    answer_spec,
    call,
    fmt,
    submit,
    units_agree,
)
from agentgym_fhir.tasks.lab_value import _analyte, lab_name
from agentgym_fhir.vocab.labs import LABS

FAMILY = "lab_change"
REQUIRES = "a lab measured at least twice within a window before the task's date"
WINDOWS = (180, 365, 730, 1095)


def build(ctx: Context) -> list[Task]:
    tasks = []
    for record in ctx.records:
        options = []
        for code in sorted(LABS):
            if record.has_future(code):
                continue
            for days in WINDOWS:
                start = record.now.date() - timedelta(days=days)
                inside = [r for r in record.series(code) if start <= r.day <= record.now.date()]
                # no ties at either end (which result is "first"?) and a real change: "0" must never be the gold
                if len(inside) >= 2 and inside[0].when != inside[1].when and inside[-1].when != inside[-2].when \
                        and round(inside[-1].value - inside[0].value, 4) != 0 and units_agree(inside):
                    options.append((code, days, inside))
                    break
        if not options:
            continue
        code, days, inside = ctx.rng.choice(options)
        start = record.now.date() - timedelta(days=days)
        change = round(inside[-1].value - inside[0].value, 4)
        name = lab_name(code, inside[0].display)
        tasks.append(ctx.task(
            key=f"{record.id}:{code}:{days}", record=record,
            prompt=f"By how much did the {name} (LOINC {code}) of {record.describe()} change between "
                   f"{start.isoformat()} and today? {RESULT_RULE} Take the last result in that period minus the first one "
                   f"(negative if it fell), to two decimals, and answer with the number and its unit: "
                   f"{UNIT_CONTRACT}.",
            answer=change,
            solution=[call("date_shift", date_from="now", days=-days),
                      call("observation_history", patient_id=record.id, code=code, start=start.isoformat(),
                           end=record.now.date().isoformat()),
                      submit(f"{fmt(change)} {inside[0].unit}")],
            verifier=answer_spec("number", tolerance=0.011, unit=inside[0].unit, require_unit=True,
                                 analyte=_analyte(name)),
            difficulty="medium",
            metadata={"loinc": code, "window_days": days}))
    return tasks
