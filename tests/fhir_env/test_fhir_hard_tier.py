"""FHIR-v0's hard tier and the mess of real data it reads: results entered in error, outside-lab units, amended
results, namesakes; the measured difficulty; rounding that takes either neighbour of a tie (playtest #4)."""

from __future__ import annotations

import json
from collections import Counter
from decimal import ROUND_HALF_DOWN, Decimal

import pytest
from agentgym_fhir.env import make_env
from agentgym_fhir.store import FhirStore
from agentgym_fhir.tasks.cohort_labs import LABS as COHORT_LABS
from agentgym_fhir.tasks.common import (
    half_up,
    load_records,
    measured_difficulty,
    rounding_tolerance,
    task_work,
)
from agentgym_fhir.units import convert, same_unit
from agentgym_fhir.verify import score_answer

from agentgym.tasks import Task

HARD_FAMILIES = ("renal_dosing", "admission_labs", "inpatient_reconciliation", "trend_since_order", "cohort_labs")


@pytest.fixture()
def env(small_store: FhirStore, small_tasks: list[Task]):  # type: ignore[no-untyped-def]
    environment = make_env(store=small_store, tasks=small_tasks, knowledge=False, max_turns=40)
    yield environment
    environment.close()


def _tool(env, name: str, **arguments):  # type: ignore[no-untyped-def]
    outcome = env.unwrapped.tools[name].invoke(env.unwrapped.state, arguments)
    assert outcome.ok, outcome.text
    return outcome.value


def _step(task: Task, name: str) -> dict:  # type: ignore[type-arg]
    return next(step["arguments"] for step in task.solution if step["name"] == name)


# ------------------------------------------------------------------------------- rounding (playtest FHIR #4)
def test_a_tie_rounds_the_way_people_round() -> None:
    assert half_up((107.5 + 110.6) / 2, 1) == 109.1  # the float is 109.04999..., Python's round gives 109.0
    assert half_up(2.675, 2) == 2.68 and half_up(-1.25, 1) == -1.3 and half_up(7.0, 1) == 7.0


@pytest.mark.parametrize(("submission", "expected"), [
    ("109.1 kg", 1.0), ("109.0 kg", 1.0), ("109 kg", 1.0), ("109.05 kg", 1.0), ("240.4 lb", 1.0),
    ("109.2 kg", 0.0), ("108.9 kg", 0.0), ("109.1", 0.0), ("110.6 kg", 0.0), ("109.1 lb", 0.0),
])
def test_a_mean_to_one_decimal_takes_either_rounding_of_a_tie(submission: str, expected: float) -> None:
    gold = (107.5 + 110.6) / 2
    score = score_answer(gold, submission, kind="number", tolerance=rounding_tolerance(1), unit="kg",
                         require_unit=True)
    assert score.value == expected, submission


def test_every_rounded_gold_accepts_both_roundings_and_nothing_a_step_away(small_tasks: list[Task]) -> None:
    checked = 0
    for task in small_tasks:
        decimals = {"vital_aggregate": 1}.get(task.family) if task.metadata.get("statistic") == "mean" else None
        if task.family == "trend_since_order":
            decimals = 1
        if decimals is None:
            continue
        unit = task.verifier.params["unit"]
        step = 10 ** -decimals
        low = float(Decimal(repr(task.answer)).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_DOWN))
        # a step past the tolerance (half a last place, plus a conversion factor's slack where one is read)
        beyond = float(f"{task.answer + task.verifier.params['tolerance'] + step / 2:.{decimals}f}") + step
        assert task.verifier.params["tolerance"] >= rounding_tolerance(decimals)
        for near, expected in ((half_up(task.answer, decimals), 1.0), (low, 1.0), (beyond, 0.0)):
            got = score_answer(task.answer, f"{near} {unit}", **task.verifier.params).value
            assert got == expected, (task.id, task.answer, near)
        checked += 1
    assert checked >= 10


# ------------------------------------------------------------------------------- the mess in the records
def test_the_generated_records_hold_the_mess_hard_tasks_read(small_store: FhirStore) -> None:
    records = load_records(small_store)
    statuses = Counter(o.get("status") for r in records for o in r.observations)
    assert statuses["entered-in-error"] >= 3 and statuses["amended"] + statuses["corrected"] >= 3
    units = Counter(reading.unit for r in records for code in ("2345-7", "2160-0", "29463-7") for reading in r.series(code))
    assert units["mmol/L"] and units["umol/L"] and units["[lb_av]"]
    names = Counter(r.name for r in records)
    assert any(count > 1 for count in names.values()), "no two patients share a name"


def test_a_newer_result_entered_in_error_shows_its_status(env, small_store: FhirStore,
                                                          small_tasks: list[Task]) -> None:
    """latest_observation shows the newest observation whatever its status, saying the status; the history
    shows every row with its status, and the valid latest is the one the golds take."""
    records = load_records(small_store)
    found = [(r, code) for r in records for code in ("2160-0", "2823-3", "2345-7", "4548-4", "2951-2", "98979-8")
             if r.invalid(code) and r.latest(code) and r.invalid(code)[-1].when > r.latest(code).when]
    assert found
    record, code = found[0]
    env.reset(options={"task_id": next(t.id for t in small_tasks if t.metadata.get("patient_id") == record.id)})
    latest = _tool(env, "latest_observation", patient_id=record.id, code=code)
    assert latest["status"] == "entered-in-error" and latest["value"] == record.invalid(code)[-1].value
    history = _tool(env, "observation_history", patient_id=record.id, code=code)
    rows = history["observations"]
    assert rows[-1]["status"] == "entered-in-error"
    assert [row for row in rows if row["status"] != "entered-in-error"][-1]["value"] == record.latest(code).value
    assert history["shown"] == len(rows) == history["total"]


# ------------------------------------------------------------------------------- the hard families
def test_hard_families_are_generated_and_solved_by_the_oracle(env, small_tasks: list[Task], play) -> None:  # type: ignore[no-untyped-def]
    from agentgym.agents.oracle import OracleAgent

    hard = [task for task in small_tasks if task.family in HARD_FAMILIES]
    assert set(HARD_FAMILIES) <= {task.family for task in hard}
    oracle = OracleAgent()
    failures = [task.id for task in hard if play(env, task, oracle)[0] != 1.0]
    assert not failures, failures[:5]


def test_the_tools_show_what_the_hard_answers_say(env, small_tasks: list[Task]) -> None:  # type: ignore[no-untyped-def]
    checked: Counter[str] = Counter()
    for task in small_tasks:
        if task.family == "admission_labs" and task.metadata["statistic"] == "count":
            env.reset(options={"task_id": task.id})
            stays = json.loads(_tool(env, "fhir_search", resource_type="Encounter",
                                     params={"patient": task.metadata["patient_id"], "class": "IMP"}))
            assert any(e["period"]["start"][:10] == task.metadata["admitted"] for e in stays["entry"])
            history = _tool(env, "observation_history", **_step(task, "observation_history"))
            valid = [row for row in history["observations"] if row["status"] != "entered-in-error"]
            assert len(valid) == task.answer, task.id
        elif task.family == "cohort_labs":
            env.reset(options={"task_id": task.id})
            patients = json.loads(_tool(env, "fhir_search", **task.solution[0]["arguments"]))  # the practice
            assert patients["total"] == task.metadata["patients"]
            latest: dict[str, dict] = {}  # type: ignore[type-arg]
            searches = [step["arguments"] for step in task.solution[1:-1]]
            pages = [arguments for arguments in searches if arguments["resource_type"] == "Observation"]
            for join in (arguments for arguments in searches if arguments["resource_type"] == "Condition"):
                holders = json.loads(_tool(env, "fhir_search", **join))  # the diagnosis narrows the practice
                assert {e["subject"]["reference"].split("/")[-1] for e in holders["entry"]} == \
                    set(pages[0]["params"]["patient"].split(","))
            for arguments in pages:  # the solution's pages show every result, none left out
                page = json.loads(_tool(env, "fhir_search", **arguments))
                assert "left_out" not in page, page.get("notes")
                for entry in page["entry"]:
                    if entry["status"] != "entered-in-error":
                        latest.setdefault(entry["subject"]["reference"], entry["valueQuantity"])
            _, unit, analyte, _ = COHORT_LABS[task.metadata["loinc"]]
            values = [q["value"] if same_unit(q["code"], unit) else convert(q["value"], q["code"], unit, analyte)
                      for q in latest.values()]
            threshold = task.metadata["threshold"]
            above = task.metadata["direction"] == "at or above"
            assert sum((v >= threshold - 1e-9) if above else (v < threshold - 1e-9) for v in values) == task.answer
        elif task.family == "renal_dosing" and task.metadata["source"] == "computed":
            env.reset(options={"task_id": task.id})
            result = _tool(env, "calculate", **_step(task, "calculate"))
            assert result["value"] == task.metadata["egfr"]
        else:
            continue
        checked[task.family] += 1
    assert checked["admission_labs"] and checked["renal_dosing"] and checked["cohort_labs"]


def test_difficulty_is_the_measured_work(small_tasks: list[Task]) -> None:
    for task in small_tasks:
        assert task.difficulty == measured_difficulty(task) and task.metadata["work"] == task_work(task)
    hard = [task for task in small_tasks if task.difficulty == "hard"]
    assert hard and all(task_work(task) >= 6 for task in hard)
    assert {task.family for task in hard} & set(HARD_FAMILIES)


def test_submit_schema_types_the_answer(env, small_tasks: list[Task]) -> None:  # type: ignore[no-untyped-def]
    wanted = {"inpatient_reconciliation": "array", "renal_dosing": "number", "trend_since_order": "string"}
    for family, kind in wanted.items():
        task = next(t for t in small_tasks if t.family == family and t.answer is not None)
        _, info = env.reset(options={"task_id": task.id})
        submit = next(tool for tool in info["tools"] if tool["function"]["name"] == "submit")
        assert submit["function"]["parameters"]["properties"]["answer"]["type"] == kind, family


# ------------------------------------------------------------------------------- labelled numbers (playtest FHIR #6, #11, #12)
@pytest.mark.parametrize(("gold", "submission", "params", "expected"), [
    (73.6, "eGFR 73.6 mL/min/1.73m2", {"tolerance": 0.6}, 1.0),
    (73.6, "eGFR = 73.6 mL/min/1.73m2", {"tolerance": 0.6}, 1.0),
    (73.6, "eGFR: 73.6", {"tolerance": 0.6}, 1.0),
    (80.0, "The eGFR is 80 mL/min/1.73m2", {"unit": "mL/min/{1.73_m2}", "require_unit": True}, 1.0),
    (4.0, "PHQ-9 = 4", {}, 1.0),
    (4.0, "PHQ-9 score 4", {}, 1.0),
    (73.6, "eGFR 74.5 mL/min/1.73m2", {"tolerance": 0.6}, 0.0),
    (73.6, "eGFR 73.6 or 74.5", {"tolerance": 0.6}, 0.0),
    (80.0, "less than 80 mL/min/1.73m2", {}, 0.0),
    (80.0, "eGFR above 80", {}, 0.0),
    (4.0, "PHQ-9 = 4 or 5", {}, 0.0),
    (4.0, "PHQ-9 = 6", {}, 0.0),
])
def test_a_labelled_number_reads_as_its_number(gold: float, submission: str, params: dict, expected: float) -> None:  # type: ignore[type-arg]
    assert score_answer(gold, submission, kind="number", **params).value == expected, submission
