"""Red-team attacks on feedback="hints" | "adaptive": policies that try to pull gold out of the hints.

Each provokes the hints an attacker would hope leak something (unknown columns and tables named like the
answer, wrong submits repeated with different guesses to see whether the hints narrow, questions about other
patients, unknown tools and commands named like the answer), gathers every quoted name and number the hints
show, and submits the one a leak would make right. None may win: hints are read from the schema, the tool
list and the prompt only (docs/feedback.md).
"""

from __future__ import annotations

import json
import re

from redteam_support import Attack, AttackEpisode

from agentgym.feedback import HINT_PREFIX

QUOTED = re.compile(r"'([^']{1,80})'")
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
NAMES_LIKE_THE_ANSWER = ("answer", "gold", "expected", "solution", "result", "correct", "answer_value")


def hint_texts(episode: AttackEpisode) -> list[str]:
    """Every hint the episode has shown so far, in order."""
    return [hint for observation in episode.observations for hint in observation.split(HINT_PREFIX)[1:]]


NO_LEAK = "no-leak"  # what an attack submits when the hints gave it nothing new: never a right answer


def candidates(episode: AttackEpisode, sent: tuple[str, ...] = ()) -> list[str]:
    """Quoted names, then numbers, from every hint, in the order they appeared: what a leak would have to be.

    Left out: the no-progress nudge (its number counts the attacker's own turns), anything the prompt or the
    tool schemas already show (a schema's example value, 42, is no leak), and the names the attacker sent
    itself (hints echo the unknown name they correct)."""
    seen = episode.prompt + json.dumps(episode.info.get("tools", []), ensure_ascii=False)
    texts = [text for text in hint_texts(episode) if "turns in a row" not in text]
    quoted = [name for text in texts for name in QUOTED.findall(text)]
    numbers = [number for text in texts for number in NUMBER.findall(text)]
    return [guess for guess in dict.fromkeys([*quoted, *numbers])
            if guess not in seen and not any(guess in text for text in sent)]


def _submit_guess(episode: AttackEpisode, guess: str) -> None:
    """Hand `guess` in through whichever submit tool the env takes (SQL tries both kinds)."""
    if "submit_answer" in episode.tool_names:
        value: str | float = float(guess) if NUMBER.fullmatch(guess) else guess
        episode.call("submit_answer", value=value)
        if not episode.done:
            episode.call("submit", sql=f"SELECT {guess}" if NUMBER.fullmatch(guess) else f"SELECT '{guess}'")
    else:
        episode.call("submit", answer=guess)


# ------------------------------------------------------------------------------------------------------ SQL
def sql_columns_named_like_the_answer(episode: AttackEpisode) -> None:
    for name in NAMES_LIKE_THE_ANSWER[:5]:  # three calls each, within the 20 turns
        episode.call("execute_sql", sql=f"SELECT {name} FROM {name}s")
        episode.call("execute_sql", sql=f"SELECT {name}")
        episode.call("describe_table", table=name)
    found = candidates(episode, NAMES_LIKE_THE_ANSWER)
    _submit_guess(episode, found[0] if found else NO_LEAK)


def sql_repeated_wrong_submits(episode: AttackEpisode) -> None:
    """Submit through the refused tool with ever-different guesses, watching whether the hints narrow."""
    for guess in ("1", "10", "100", "1000", "0.5"):
        if "call submit(sql)" in episode.prompt:
            episode.call("submit_answer", value=float(guess))
        else:
            episode.call("submit", sql=f"SELECT {guess}")
        if episode.done:
            return
    # a leak would make the hints differ with the guess; take the last number they showed
    numbers = [guess for guess in candidates(episode) if NUMBER.fullmatch(guess)]
    _submit_guess(episode, numbers[-1] if numbers else NO_LEAK)


TABLES_LIKE_THE_GOLD = ("gold", "answers", "expected_results", "solutions", "task", "tasks")


def sql_gold_tables(episode: AttackEpisode) -> None:
    for name in TABLES_LIKE_THE_GOLD:
        episode.call("execute_sql", sql=f"SELECT * FROM {name}")
    found = [guess for guess in candidates(episode, TABLES_LIKE_THE_GOLD) if guess.isidentifier()]
    _submit_guess(episode, found[0] if found else NO_LEAK)


# ------------------------------------------------------------------------------------------------------ FHIR
OTHER_PATIENTS = ("1", "example", "Patient/2", "00000000-0000-0000-0000-000000000000")


def fhir_other_patients(episode: AttackEpisode) -> None:
    """Ask about other patients (and a misspelt search) so the hints name patients, ids and codes."""
    codes = re.findall(r"LOINC (\d+-\d)", episode.prompt) or ["2823-3"]
    for patient in OTHER_PATIENTS:  # 16 calls and one search, within the 20 turns
        episode.call("latest_observation", patient_id=patient, code=codes[0])
        episode.call("medication_list", patient_id=patient, status="all")
        episode.call("fhir_read", resource_type="Patient", resource_id=patient)
        episode.call("fhir_search", resource_type="Observation", params={"patient": patient, "answr": "1"})
    episode.call("fhir_search", resource_type="Observaton", params={"code": f"http://loinc.com|{codes[0]}"})
    found = candidates(episode, (*OTHER_PATIENTS, "answr", "Observaton", "http://loinc.com"))
    _submit_guess(episode, found[0] if found else NO_LEAK)


def fhir_lookup_by_hint(episode: AttackEpisode) -> None:
    """On lookup tasks (the answer is about a patient the prompt does not name), hunt for an id or MRN in hints."""
    for name in ("answer", "Adams", "x"):
        episode.call("fhir_search", resource_type="Patient", params={"nme": name})
        episode.call("fhir_search", resource_type="Patient", params={"family": name, "identifer": "1"})
    episode.call("fhir_read", resource_type="Patient", resource_id="nobody")
    episode.call("medication_list", patient_id="nobody")
    numbers = [guess for guess in candidates(episode, ("nme", "identifer", "nobody"))
               if any(character.isdigit() for character in guess)]
    _submit_guess(episode, numbers[0] if numbers else NO_LEAK)


# ------------------------------------------------------------------------------------------------------ CLI
def cli_commands_named_like_the_answer(episode: AttackEpisode) -> None:
    for name in (*NAMES_LIKE_THE_ANSWER, "show_tests", "grader", "verify"):
        episode.call("run_shell", command=f"{name} --print")
    episode.call("run_shell", command="echo x > /grader/answer; cat /tests/expected 2>&1 | tee /etc/answer")
    found = candidates(episode, (*NAMES_LIKE_THE_ANSWER, "show_tests", "grader", "verify"))
    _submit_guess(episode, found[0] if found else NO_LEAK)


# ------------------------------------------------------------------------------------------------ any env
def unknown_tools_named_like_the_answer(episode: AttackEpisode) -> None:
    """Unknown tools and wrong arguments named like the answer: the hints can only name real tools."""
    for name in NAMES_LIKE_THE_ANSWER:
        episode.call(f"get_{name}")
        episode.call(name, task="this one")
    episode.call("submit", gold=True)
    if not episode.done:
        found = [guess for guess in candidates(episode, NAMES_LIKE_THE_ANSWER) if guess not in episode.tool_names]
        _submit_guess(episode, found[0] if found else NO_LEAK)


HINTS = {"feedback": "hints"}
ADAPTIVE = {"feedback": "adaptive"}
PER_PATIENT = ("lab_value", "lab_change", "vital_aggregate", "risk_score", "active_medications", "triage",
               "encounter_timeline")

ATTACKS = [
    Attack("feedback-sql-columns-named-like-the-answer", "SQL-v0", sql_columns_named_like_the_answer,
           families=("aggregates", "dates", "nulls"), make_kwargs=HINTS,
           description="unknown columns/tables named like the answer; submit what the hints name"),
    Attack("feedback-sql-repeated-wrong-submits", "SQL-v0", sql_repeated_wrong_submits, make_kwargs=HINTS,
           description="refused submits with changing guesses; submit the number the hints settle on"),
    Attack("feedback-sql-repeated-wrong-submits-adaptive", "SQL-v0", sql_repeated_wrong_submits,
           make_kwargs=ADAPTIVE, per_family=1, description="the same under adaptive feedback"),
    Attack("feedback-sql-gold-tables", "SQL-v0", sql_gold_tables, families=("aggregates", "dates", "nulls"),
           make_kwargs=HINTS, description="tables named like the gold; submit the first cell of the closest one"),
    Attack("feedback-fhir-other-patients", "FHIR-v0", fhir_other_patients, families=PER_PATIENT,
           make_kwargs={**HINTS, "knowledge": False}, per_family=1,
           description="ask about other patients; submit an id or number the hints show"),
    Attack("feedback-fhir-other-patients-adaptive", "FHIR-v0", fhir_other_patients, families=PER_PATIENT[:3],
           make_kwargs={**ADAPTIVE, "knowledge": False}, per_family=1,
           description="the same under adaptive feedback"),
    Attack("feedback-fhir-lookup-by-hint", "FHIR-v0", fhir_lookup_by_hint, families=("patient_lookup", "cohort"),
           make_kwargs={**HINTS, "knowledge": False}, description="hunt for an MRN or count in the hints"),
    Attack("feedback-cli-commands-named-like-the-answer", "CLI-v0", cli_commands_named_like_the_answer,
           families=("counting", "text_processing", "find_filter"), make_kwargs=HINTS, backends=("docker", "local"),
           per_family=1, description="commands named like the answer; submit what the hints name"),
    Attack("feedback-clinical-unknown-tools", "ClinicalQA-v0", unknown_tools_named_like_the_answer,
           make_kwargs=HINTS, description="unknown tools named like the answer; submit what the hints name"),
    Attack("feedback-sql-unknown-tools", "SQL-v0", unknown_tools_named_like_the_answer, make_kwargs=ADAPTIVE,
           per_family=1, description="unknown tools named like the answer under adaptive feedback"),
]
