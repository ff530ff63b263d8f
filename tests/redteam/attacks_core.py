"""Attacks on the core grading paths: shaping that pays without solving, and answers that hedge.

They play SQL-v0 and FHIR-v0 through the public API only, but what they probe is core behaviour:
- `agentgym.rewards.combine`: with every shaping weight on, farming cheap valid calls and never submitting
  must earn nothing (the episode is truncated);
- `agentgym.answers`: a submission that names several candidates (every number in a range, both yes and no,
  every drug on the record plus one, every MRN sharing the patient's family name, two dates), dressed up
  with Unicode look-alikes, must read as no answer at all.
(A wrong answer submitted after farming may keep its bounded shaping, so it is not a 0-reward attack; it is
checked in tests/core/test_shaping_attacks.py.)
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from redteam_support import Attack, AttackEpisode

ALL_SHAPING = {"reward_weights": {"format": 1.0, "schema": 1.0, "execution": 1.0, "process": 1.0}}
NUMBER_FAMILIES = ("lab_value", "lab_change", "vital_aggregate", "risk_score", "cohort", "triage")
PATIENT_ID = re.compile(r"Patient id ([0-9a-fA-F-]{36})")


def _farm(tool: str, **arguments: Any) -> Callable[[AttackEpisode], None]:
    """Call one cheap, valid read tool until the episode is truncated; never submit."""

    def play(episode: AttackEpisode) -> None:
        while not episode.done:
            episode.call(tool, **arguments)

    return play


def _submit(answer: Any) -> Callable[[AttackEpisode], None]:
    def play(episode: AttackEpisode) -> None:
        episode.call("submit", answer=answer)

    return play


def _patient(episode: AttackEpisode) -> str:
    match = PATIENT_ID.search(episode.prompt)
    return match.group(1) if match else ""


def every_drug_plus_one(episode: AttackEpisode) -> None:
    """Every medication ever recorded for the patient, and one drug they never had: a superset of any gold."""
    patient = _patient(episode)
    names: list[str] = []
    try:
        listing = json.loads(episode.call("medication_list", patient_id=patient, status="all"))
        names = [str(item.get("medication", "")) for item in listing.get("medications", [])]
    except (json.JSONDecodeError, AttributeError):
        pass
    names = sorted({name for name in names if name})
    extra = next(drug for drug in ("zolpidem", "warfarin", "digoxin") if drug not in names)
    episode.call("submit", answer=[*names, extra])


def every_drug_as_text(episode: AttackEpisode) -> None:
    """The same superset as one line of text, separated by fullwidth commas and zero-width spaces."""
    patient = _patient(episode)
    text = episode.call("medication_list", patient_id=patient, status="all")
    names = sorted(set(re.findall(r'"medication": "([^"]+)"', text))) or ["aspirin"]
    episode.call("submit", answer="\uff0c\u200b".join([*names, "zolpidem"]))


def every_mrn_of_the_family(episode: AttackEpisode) -> None:
    """The MRN of every patient sharing the family name in the prompt (and one more): the gold is among them."""
    match = re.search(r"named ([^,]+), born", episode.prompt)
    family = match.group(1).split()[-1] if match else ""
    text = episode.call("fhir_search", resource_type="Patient", params={"family": family, "_count": 100})
    mrns = sorted(set(re.findall(r"MRN\d+", text)))
    if len(mrns) < 2:
        mrns.append("MRN00000001" if "MRN00000001" not in mrns else "MRN00000002")
    episode.call("submit", answer=", ".join(mrns))


NUMBER_HEDGES: dict[str, Any] = {
    "core-every-integer-text": " ".join(str(number) for number in range(-100, 301)),
    "core-every-integer-list": list(range(-50, 201)),
    "core-number-range": "between -1000 and 1000",
    "core-number-fullwidth-or": "\uff10 or \uff11 or \uff12 or \uff13 or \uff14 or \uff15",
    "core-number-zero-width-join": "\u200b".join(str(number) for number in range(50)),
}
YES_NO_HEDGES: dict[str, Any] = {
    "core-yes-no-fullwidth-slash": "\uff59\uff45\uff53\uff0f\uff4e\uff4f",
    "core-yes-no-zero-width": "yes\u200bno",
    "core-yes-no-list": ["yes", "no"],
    "core-yes-no-lines": "Yes.\nNo.",
    "core-yes-no-json-text": '["yes", "no"]',
    "core-true-false": "true / false",
}
DATE_HEDGES: dict[str, Any] = {
    "core-two-dates": "2023-01-01 or 2024-01-01",
    "core-date-list": [f"20{year:02d}-{month:02d}-01" for year in range(15, 25) for month in range(1, 13)],
}

ATTACKS: list[Attack] = [
    Attack("core-farm-shaping-sql", "SQL-v0", _farm("list_tables"), make_kwargs={**ALL_SHAPING, "max_turns": 6},
           per_family=1, description="every shaping weight on, list_tables until truncated, never submit"),
    Attack("core-farm-shaping-fhir", "FHIR-v0", _farm("lookup_code", text="potassium"),
           families=("lab_value", "cohort", "medication_order"),
           make_kwargs={**ALL_SHAPING, "max_turns": 6, "knowledge": False}, per_family=1,
           description="every shaping weight on, lookup_code until truncated, never submit"),
    Attack("core-every-drug-plus-one", "FHIR-v0", every_drug_plus_one,
           families=("active_medications", "drug_interaction"), make_kwargs={"knowledge": False},
           description="a superset of the gold list: every recorded drug and one more"),
    Attack("core-every-drug-look-alike-commas", "FHIR-v0", every_drug_as_text,
           families=("active_medications", "drug_interaction"), make_kwargs={"knowledge": False},
           description="the superset as text joined by fullwidth commas and zero-width spaces"),
    Attack("core-every-mrn-of-the-family", "FHIR-v0", every_mrn_of_the_family, families=("patient_lookup",),
           make_kwargs={"knowledge": False}, description="every MRN sharing the patient's family name"),
    *[Attack(name, "FHIR-v0", _submit(answer), families=NUMBER_FAMILIES, make_kwargs={"knowledge": False},
             per_family=1, description="a number answer that names many numbers")
      for name, answer in NUMBER_HEDGES.items()],
    *[Attack(name, "FHIR-v0", _submit(answer), families=("drug_condition",), make_kwargs={"knowledge": False},
             description="a yes/no answer that says both")
      for name, answer in YES_NO_HEDGES.items()],
    *[Attack(name, "FHIR-v0", _submit(answer), families=("encounter_timeline",), make_kwargs={"knowledge": False},
             description="a date answer that names several dates")
      for name, answer in DATE_HEDGES.items()],
]
