"""Vital-sign aggregates over a window: mean, highest or lowest reading between two dates."""

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
    half_up,
    rounding_tolerance,
    submit,
    units_agree,
)
from agentgym_fhir.vocab.labs import VITALS

FAMILY = "vital_aggregate"
REQUIRES = "vital-sign Observations (LOINC vitals such as 8480-6, 8867-4) repeated within a window"
VITAL_CODES = ("8480-6", "8462-4", "8867-4", "9279-1", "8310-5", "59408-5", "29463-7")


def build(ctx: Context) -> list[Task]:
    tasks = []
    for record in ctx.records:
        choices = []
        for code in VITAL_CODES:
            if record.has_future(code):
                continue
            for days in (90, 180, 365, 730):
                start = record.now.date() - timedelta(days=days)
                inside = [r for r in record.series(code) if start <= r.day <= record.now.date()]
                if len(inside) >= 2 and units_agree(inside):
                    choices.append((code, days, inside))
                    break
        if not choices:
            continue
        code, days, inside = ctx.rng.choice(choices)
        statistic = ctx.rng.choice(["mean", "max", "min"])
        values = [r.value for r in inside]
        # a mean is graded against its exact value, so both roundings of a tie score (docs/fhir-env.md)
        answer = sum(values) / len(values) if statistic == "mean" else (max(values) if statistic == "max" else min(values))
        shown = half_up(answer, 1) if statistic == "mean" else answer
        name = VITALS[code].name.lower() if code in VITALS else inside[0].display
        start = record.now.date() - timedelta(days=days)
        wording = {"mean": "average (mean, to one decimal)", "max": "highest (as recorded)",
                   "min": "lowest (as recorded)"}[statistic]
        tasks.append(ctx.task(
            key=f"{record.id}:{code}:{days}:{statistic}", record=record,
            prompt=f"What was the {wording} {name} (LOINC {code}) of {record.describe()} over the last {days} days "
                   f"({start.isoformat()} through today)? {RESULT_RULE} Answer with the number and its unit: {UNIT_CONTRACT}.",
            answer=answer,
            solution=[call("observation_history", patient_id=record.id, code=code, start=start.isoformat(),
                           end=record.now.date().isoformat()),
                      submit(f"{fmt(shown)} {inside[0].unit}")],
            verifier=answer_spec("number", tolerance=rounding_tolerance(1) if statistic == "mean" else 0.001, unit=inside[0].unit,
                                 require_unit=True),
            difficulty="medium" if statistic != "mean" else "hard",
            metadata={"loinc": code, "window_days": days, "statistic": statistic, "readings": len(inside)}))
    return tasks
