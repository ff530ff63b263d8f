"""Labs in a window before an inpatient admission: find the stay, then count or take the highest result in the
days before it.

Multi-hop and temporal: the admission is found among the patient's Encounters (class IMP; the first, the most
recent, or the one before the most recent), the window is counted back from its start date, and the results are
read from the record, where some are entered in error and an outside lab reports glucose and creatinine in
other units. Windows are chosen, where the record allows, so that a result falls exactly on the window's first
day.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from agentgym.tasks import Task
from agentgym_fhir.tasks.common import (
    RESULT_RULE,
    Context,
    PatientRecord,
    Reading,
    answer_spec,
    balance,
    call,
    fmt,
    half_up,
    identify,
    parse_instant,
    rounding_tolerance,
    submit,
)
from agentgym_fhir.units import convert, same_unit

FAMILY = "admission_labs"
REQUIRES = "inpatient Encounters (class IMP) and lab results in the months before them"
LABS = {"2823-3": ("potassium", "mmol/L", None), "2160-0": ("creatinine", "mg/dL", "creatinine"),
        "2345-7": ("glucose", "mg/dL", "glucose"), "2951-2": ("sodium", "mmol/L", None),
        "6690-2": ("white blood cell count", "10*3/uL", None), "718-7": ("hemoglobin", "g/dL", None)}
WINDOWS = (7, 14, 30, 60, 90, 180, 365, 730)
MIN_DAYS, MAX_DAYS = 7, 730
# How far a converted value may be off when the agent converts with a rounded factor (18 for glucose, 88.4 for
# creatinine) instead of the molar mass the record's conversion uses.
CONVERSION_SLACK = {"glucose": 0.5, "creatinine": 0.002}
WHICH = {"last": "most recent", "first": "first", "previous": "second most recent"}


def _stay(record: PatientRecord, which: str) -> dict[str, Any] | None:
    stays = record.inpatient_stays()
    if which == "previous":
        return stays[-2] if len(stays) >= 2 else None
    if which == "first" and len(stays) < 2:
        return None
    return (stays[0] if which == "first" else stays[-1]) if stays else None


def _in_unit(reading: Reading, unit: str, analyte: str | None) -> float:
    return reading.value if same_unit(reading.unit, unit) else convert(reading.value, reading.unit, unit, analyte)


def _window(ctx: Context, record: PatientRecord, code: str, admitted: date,
            least: int) -> tuple[int, list[Reading], bool, bool] | None:
    """A window length holding at least `least` valid readings, with those readings, whether one falls on its
    first day and whether a result entered in error falls inside. Lengths are the round `WINDOWS` and those that
    put a result exactly on the first day; windows with an edge or an error are preferred (80%), so the rules
    of the prompt decide the answer. None when no window holds enough readings."""
    options = []
    # Besides the round windows, every length that puts a valid result exactly on the window's first day.
    edges = {(admitted - r.day).days for r in record.series(code) if MIN_DAYS <= (admitted - r.day).days <= MAX_DAYS}
    for days in sorted(set(WINDOWS) | edges):
        start = admitted - timedelta(days=days)
        inside = [r for r in record.series(code) if start <= r.day <= admitted]
        edge = any(r.day == start for r in inside)
        error = any(start <= r.day <= admitted for r in record.invalid(code))
        if len(inside) >= least:
            options.append((days, inside, edge, error))
    if not options:
        return None
    tricky = [option for option in options if option[2] or option[3]]
    return ctx.rng.choice(tricky if tricky and ctx.rng.random() < 0.8 else [o for o in options if o[0] in WINDOWS] or options)


def build(ctx: Context) -> list[Task]:
    candidates: dict[tuple[str, str, str], list[tuple[Any, Task]]] = {}
    for record in ctx.records:
        for which, wording in WHICH.items():
            stay = _stay(record, which)
            if stay is None:
                continue
            started = parse_instant(stay["period"]["start"])
            assert started is not None
            admitted = started.date()
            for code, (name, unit, analyte) in LABS.items():
                if record.has_future(code) or not [r for r in record.series(code) if r.day <= admitted]:
                    continue
                statistic = "count" if ctx.rng.random() < 0.5 else "max"
                window = _window(ctx, record, code, admitted, 2 if statistic == "count" else 3)
                if window is None:
                    continue
                days, inside, edge, error = window
                start = admitted - timedelta(days=days)
                who, find, traps = identify(ctx, record)
                traps += (["window_edge"] if edge else []) + (["entered_in_error"] if error else [])
                if statistic == "count":
                    answer: float = len(inside)
                    ask = (f"How many valid {name} results (LOINC {code}) does the record hold from {days} days "
                           f"before the start date of the {wording} inpatient admission of {who} "
                           "through that start date (both days included; a result counts by its date)?")
                    contract = "Answer with the count as a whole number."
                    final = fmt(answer)
                    spec = answer_spec("number", tolerance=0)
                else:
                    values = [_in_unit(r, unit, analyte) for r in inside]
                    answer = max(values)
                    if any(not same_unit(r.unit, unit) for r in inside):
                        traps.append("unit_conversion")
                    ask = (f"What was the highest valid {name} result (LOINC {code}) of {who} from "
                           f"{days} days before the start date of the {wording} inpatient admission through "
                           "that start date (both days included; a result counts by its date)?")
                    decimals = 2 if unit == "mg/dL" and name == "creatinine" else 1
                    contract = (f"Answer with the value in {unit} (convert a result reported in another unit), "
                                f"to {decimals} decimal{'s' if decimals > 1 else ''}, with its unit.")
                    final = f"{fmt(half_up(answer, decimals))} {unit}"
                    # graded against the exact value: either rounding of a tie, and either usual conversion factor
                    spec = answer_spec("number", tolerance=rounding_tolerance(decimals) + CONVERSION_SLACK.get(analyte, 0),
                                       unit=unit, require_unit=True, analyte=analyte)
                steps = [call("fhir_search", resource_type="Encounter",
                              params={"patient": record.id, "class": "IMP", "_sort": "date"}),
                         call("date_shift", date_from=admitted.isoformat(), days=-days),
                         call("observation_history", patient_id=record.id, code=code, start=start.isoformat(),
                              end=admitted.isoformat())]
                if "unit_conversion" in traps:
                    steps.append(call("convert_units", value=inside[0].value, from_unit=inside[0].unit, to_unit=unit,
                                      analyte=analyte))
                task = ctx.task(
                    key=f"{record.id}:{which}:{code}", record=record,
                    prompt=f"{ask} {RESULT_RULE} {contract}", answer=answer, solution=[*find, *steps, submit(final)],
                    verifier=spec, difficulty="hard",
                    metadata={"loinc": code, "which": which, "window_days": days, "statistic": statistic,
                              "admitted": admitted.isoformat(), "traps": sorted(set(traps))})
                candidates.setdefault((statistic, code, task.split), []).append((answer, task))
    tasks: list[Task] = []
    for key in sorted(candidates):
        made = candidates[key]
        tasks.extend(balance(made, ctx.rng) if key[0] == "count" else [task for _answer, task in made])
    return sorted(tasks, key=lambda task: task.id)
