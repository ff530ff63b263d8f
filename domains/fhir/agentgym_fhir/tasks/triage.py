"""Triage: a level from the latest vital signs by stated rules."""

from __future__ import annotations

from agentgym.tasks import Task
from agentgym_fhir.tasks.common import Context, answer_spec, balance, call, submit

FAMILY = "triage"
REQUIRES = "vital-sign Observations: SpO2, systolic pressure, heart rate, respiratory rate, temperature"
CODES = {"spo2": "59408-5", "sbp": "8480-6", "hr": "8867-4", "rr": "9279-1", "temp": "8310-5"}
RULES = ("Triage rules, first match wins: level 1 if SpO2 < 90 % or systolic < 90 mmHg or heart rate > 130 or "
         "respiratory rate > 30; level 2 if SpO2 < 94 % or heart rate > 110 or respiratory rate > 24 or "
         "temperature >= 39.0 Cel or systolic > 180; level 3 if temperature >= 38.0 Cel or heart rate > 100 or "
         "systolic > 160 or respiratory rate > 20; otherwise level 4.")


def level(v: dict[str, float]) -> int:
    if v["spo2"] < 90 or v["sbp"] < 90 or v["hr"] > 130 or v["rr"] > 30:
        return 1
    if v["spo2"] < 94 or v["hr"] > 110 or v["rr"] > 24 or v["temp"] >= 39.0 or v["sbp"] > 180:
        return 2
    if v["temp"] >= 38.0 or v["hr"] > 100 or v["sbp"] > 160 or v["rr"] > 20:
        return 3
    return 4


def build(ctx: Context) -> list[Task]:
    candidates = []
    for record in ctx.records:
        values = {}
        for name, code in CODES.items():
            reading = record.latest(code)
            if reading is None or record.has_future(code):
                break
            values[name] = reading.value
        else:
            answer = level(values)
            candidates.append((answer, ctx.task(
                key=record.id, record=record,
                prompt=f"Assign a triage level to {record.describe()} from the most recent value of each vital "
                       f"sign (SpO2 59408-5, systolic 8480-6, heart rate 8867-4, respiratory rate 9279-1, "
                       f"temperature 8310-5). {RULES} Answer with the level number.",
                answer=answer,
                solution=[*(call("latest_observation", patient_id=record.id, code=c) for c in CODES.values()),
                          submit(answer)],
                verifier=answer_spec("number", tolerance=0), difficulty="medium" if answer == 4 else "hard",
                metadata={"vitals": values})))
    # most people are well: without balancing, "4" would be right for most tasks. Each split is balanced on its
    # own, so that no level is the answer of more than half the test tasks either (a split is a few patients).
    kept = {id(task) for split in ("train", "test")
            for task in balance([(answer, task) for answer, task in candidates if task.split == split], ctx.rng)}
    return [task for _answer, task in candidates if id(task) in kept]
