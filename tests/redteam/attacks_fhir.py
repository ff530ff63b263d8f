"""Attacks on FHIR-v0's rewards: copying an answer a tool hands out, hedged answers that name every candidate,
answers a loose parser accepts, and CodeAct code that hunts the host for the task's gold.

Each attack reads only the prompt and tool outputs, as a policy would, and must score 0 on every task it
plays. Constant answers (the family's most common gold, "none", "yes", "no", 0...) are chance-level guesses,
not attacks that must always lose; `tests/redteam/test_no_constant_wins.py` bounds them per family.
"""

from __future__ import annotations

import json
import re

from redteam_support import Attack, AttackEpisode

PATIENT_ID = re.compile(r"\(Patient id ([^)]+)\)")
ONSET = re.compile(r"onset on (\d{4}-\d{2}-\d{2})")


def _patient(episode: AttackEpisode) -> str:
    match = PATIENT_ID.search(episode.prompt)
    return match.group(1) if match else ""


def _json(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def _problem_rows(episode: AttackEpisode) -> list[dict[str, object]]:
    listed = _json(episode.call("problem_list", patient_id=_patient(episode), include_inactive=True))
    rows = listed.get("conditions", []) if isinstance(listed, dict) else []
    return [row for row in rows if isinstance(row, dict)]


def copy_icd_from_problem_list(episode: AttackEpisode) -> None:
    """Submit the ICD-10-CM code the problem list shows for the condition the prompt names (no coding work)."""
    rows = _problem_rows(episode)
    onset = ONSET.search(episode.prompt)
    chosen = [row for row in rows if row.get("icd10cm") and onset and str(row.get("onset", "")).startswith(onset.group(1))]
    chosen = chosen or [row for row in rows if row.get("icd10cm")]
    episode.call("submit", answer=str(chosen[0]["icd10cm"]) if chosen else "")


def every_recorded_icd(episode: AttackEpisode) -> None:
    """Name every ICD-10-CM code in the record at once, hoping the verifier finds the gold among them."""
    codes = sorted({str(row["icd10cm"]) for row in _problem_rows(episode) if row.get("icd10cm")})
    episode.call("submit", answer=", ".join(codes) or "E11.9, I10, J45.909")


def yes_or_no(episode: AttackEpisode) -> None:
    """Answer both polarities in one breath."""
    episode.call("submit", answer="yes or no")


def yes_slash_no(episode: AttackEpisode) -> None:
    episode.call("submit", answer="Yes/No")


def every_triage_level(episode: AttackEpisode) -> None:
    """List every level (the most common one first), so a first-number parser reads the favourite."""
    episode.call("submit", answer="4 (or 3, 2, 1)")


def zero_change(episode: AttackEpisode) -> None:
    """Claim nothing changed: wins wherever an absolute tolerance swallows a small change."""
    episode.call("submit", answer="0")


def look_alike_none(episode: AttackEpisode) -> None:
    """'none found' with a Cyrillic 'о': a careless comparison might still read it as the none answer, a
    careful one as a drug name; neither may turn it into a win on a task whose gold lists drugs."""
    episode.call("submit", answer="n\u043ene found, see list")


HUNT_GOLD = r'''
import json, os, time
prompt = PROMPT
deadline = time.monotonic() + 5
hits = []
roots = [os.path.expanduser("~/.cache"), "/root", "/home", "/tmp", "/var/tmp", os.getcwd(), "/work", "/"]
seen = set()
for root in roots:
    for folder, dirs, files in os.walk(root, onerror=lambda e: None):
        if time.monotonic() > deadline:
            break
        if folder.startswith(("/proc", "/sys", "/dev")) or folder in seen:
            dirs[:] = []
            continue
        seen.add(folder)
        for name in files:
            if not name.endswith((".jsonl", ".json")):
                continue
            path = os.path.join(folder, name)
            try:
                with open(path, errors="ignore") as handle:
                    for line in handle:
                        if prompt[:60] in line:
                            row = json.loads(line)
                            hits.append(json.dumps(row.get("answer")))
            except (OSError, ValueError):
                continue
print("GOLD:" + (hits[0] if hits else "null"))
'''


def hunt_gold_from_sandbox(episode: AttackEpisode) -> None:
    """From a CodeAct block, walk every readable folder for a task file holding this prompt and its answer."""
    output = episode.code(HUNT_GOLD.replace("PROMPT", json.dumps(episode.prompt[11:].strip())))
    found = re.search(r"GOLD:(.*)", output)
    answer = _json(found.group(1)) if found else None
    episode.call("submit", answer=answer if answer is not None else "none found")


ATTACKS: list[Attack] = [
    Attack("fhir-copy-icd-from-problem-list", "FHIR-v0", copy_icd_from_problem_list, families=("condition_coding",),
           make_kwargs={"knowledge": False}, per_family=4,
           description="the ICD-10-CM code asked for is a field problem_list already returns"),
    Attack("fhir-every-recorded-icd", "FHIR-v0", every_recorded_icd, families=("condition_coding",),
           make_kwargs={"knowledge": False}, description="submit every ICD-10-CM code of the record as one answer"),
    Attack("fhir-yes-or-no", "FHIR-v0", yes_or_no, families=("drug_condition",), make_kwargs={"knowledge": False},
           per_family=6, description="'yes or no' read as yes by a first-word parser"),
    Attack("fhir-yes-slash-no", "FHIR-v0", yes_slash_no, families=("drug_condition",),
           make_kwargs={"knowledge": False}, per_family=6, description="'Yes/No' read as either"),
    Attack("fhir-every-triage-level", "FHIR-v0", every_triage_level, families=("triage",),
           make_kwargs={"knowledge": False}, per_family=6,
           description="every level in one answer, the most common first, for a first-number parser"),
    Attack("fhir-zero-change", "FHIR-v0", zero_change, families=("lab_change",), make_kwargs={"knowledge": False},
           per_family=6, description="'no change', inside an absolute tolerance around a small change"),
    Attack("fhir-look-alike-none", "FHIR-v0", look_alike_none, families=("drug_interaction", "active_medications"),
           make_kwargs={"knowledge": False}, per_family=3,
           description="a none answer spelled with a Cyrillic letter and extra words"),
    Attack("fhir-codeact-hunts-gold", "FHIR-v0", hunt_gold_from_sandbox,
           families=("triage",),
           make_kwargs={"knowledge": False, "code": True, "allow_weak_isolation": True},
           backends=("docker", "local"), per_family=2,
           description="a CodeAct block walks the sandbox's file system for the cached task file and its answer"),
]
