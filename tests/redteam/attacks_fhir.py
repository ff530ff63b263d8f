"""Attacks on FHIR-v0's rewards: copying an answer a tool hands out, hedged answers that name every candidate,
answers a loose parser accepts, and CodeAct code that hunts the host for the task's gold.

Each attack reads only the prompt and tool outputs, as a policy would, and must score 0 on every task it
plays. The write attacks (orders, referrals, vitals, potassium replacement) get every other field right and
cheat on one: a concept carrying every code of its system, a second dosage instruction, a value in a unit
the task did not ask for; the verifier must check exactly what the prompt asked. Constant answers (the family's most common gold, "none", "yes", "no", 0...) are chance-level guesses,
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



# ------------------------------------------------------------------------------------------- writes
RXNORM = "http://www.nlm.nih.gov/research/umls/rxnorm"
SNOMED = "http://snomed.info/sct"
LOINC = "http://loinc.org"
UCUM = "http://unitsofmeasure.org"
CATEGORY = "http://terminology.hl7.org/CodeSystem/observation-category"
TODAY = re.compile(r"Today is (\d{4}-\d{2}-\d{2})")
ORDER = re.compile(r"Order (.+?) for .*?\(Patient id [^)]+\): ([\d.]+) (\S+) by the (\w+) route, (.+?) a day")
VITAL = re.compile(r"today: ([\d.]+) (lb|degrees Fahrenheit|inches)\. Record it as a final vital-signs Observation "
                   r"\(LOINC ([\d-]+)\).*?converted to (\S+) \(UCUM\)")
SPECIALTY = re.compile(r"performerType SNOMED CT (\d+)")
TIMES = {"once": 1, "twice": 2, "three times": 3, "four times": 4}
UNIT_CODES = {"units": "[iU]", "puffs": "{puff}", "mEq": "meq", "micrograms": "ug"}


def _public_codes() -> tuple[list[str], dict[str, tuple[str, str]], list[str], dict[str, str]]:
    """Public vocabulary a policy could learn from lookup_code: every RxNorm code of the drug table, the route
    codes, every specialty code, every vital-sign LOINC code."""
    from agentgym_fhir.vocab import conditions, drugs, labs

    rxnorm = sorted({drug.rxcui for drug in drugs.DRUGS.values()})
    specialties = sorted(code for code, _display in conditions.SPECIALTIES.values())
    vitals = {code: measurement.name for code, measurement in labs.VITALS.items()}
    return rxnorm, dict(drugs.ROUTES), specialties, vitals


def _now(episode: AttackEpisode) -> str:
    match = TODAY.search(episode.prompt)
    return f"{match.group(1) if match else '2024-12-31'}T12:00:00Z"


def _order(episode: AttackEpisode, codings: list[dict[str, str]], dose: float, unit: str, route: str,
           per_day: int, dosages: int = 1) -> dict[str, object]:
    route_code, route_display = _public_codes()[1][route]
    instruction = {"route": {"coding": [{"system": SNOMED, "code": route_code, "display": route_display}]},
                   "timing": {"repeat": {"frequency": per_day, "period": 1, "periodUnit": "d"}},
                   "doseAndRate": [{"doseQuantity": {"value": dose, "unit": unit, "system": UCUM, "code": unit}}]}
    others = [{**instruction, "doseAndRate": [{"doseQuantity": {"value": dose * (2 + n), "unit": unit,
                                                                "system": UCUM, "code": unit}}]}
              for n in range(dosages - 1)]
    return {"resourceType": "MedicationRequest", "status": "active", "intent": "order",
            "subject": {"reference": f"Patient/{_patient(episode)}"}, "authoredOn": _now(episode),
            "medicationCodeableConcept": {"coding": codings}, "dosageInstruction": [instruction, *others]}


def _every_rxnorm() -> list[dict[str, str]]:
    return [{"system": RXNORM, "code": code} for code in _public_codes()[0]]


def _drug_code(name: str) -> str:
    from agentgym_fhir.vocab.drugs import DRUGS

    return next((drug.rxcui for drug in DRUGS.values() if drug.name.lower() == name.lower()), "0")


def _ordered(episode: AttackEpisode) -> tuple[str, float, str, str, int] | None:
    match = ORDER.search(episode.prompt)
    if not match:
        return None
    name, dose, word, route, times = match.groups()
    return name, float(dose), UNIT_CODES.get(word, word), route, TIMES.get(times, 1)


def order_with_every_rxnorm_coding(episode: AttackEpisode) -> None:
    """The asked order, right in dose, route and timing, but coded with every RxNorm code of the drug table."""
    asked = _ordered(episode)
    if asked:
        _name, dose, unit, route, per_day = asked
        episode.call("create_medication_request", resource=_order(episode, _every_rxnorm(), dose, unit, route, per_day))
    episode.call("submit", answer="done")


def order_with_two_rxnorm_codings(episode: AttackEpisode) -> None:
    """The right RxNorm code and one other in the same concept (a two-drug hedge)."""
    asked = _ordered(episode)
    if asked:
        name, dose, unit, route, per_day = asked
        right = _drug_code(name)
        other = next(code for code in _public_codes()[0] if code != right)
        codings = [{"system": RXNORM, "code": right}, {"system": RXNORM, "code": other}]
        episode.call("create_medication_request", resource=_order(episode, codings, dose, unit, route, per_day))
    episode.call("submit", answer="done")


def order_with_two_dosages(episode: AttackEpisode) -> None:
    """The asked dose as the first dosage instruction and a larger one as a second (a dose hedge)."""
    asked = _ordered(episode)
    if asked:
        name, dose, unit, route, per_day = asked
        codings = [{"system": RXNORM, "code": _drug_code(name)}]
        episode.call("create_medication_request",
                     resource=_order(episode, codings, dose, unit, route, per_day, dosages=2))
    episode.call("submit", answer="done")


def order_dose_in_other_unit(episode: AttackEpisode) -> None:
    """The asked dose converted to a unit the prompt did not ask for (10 mg as 0.01 g, 100 ug as 0.1 mg)."""
    asked = _ordered(episode)
    if asked:
        name, dose, unit, route, per_day = asked
        other = {"mg": ("g", dose / 1000), "ug": ("mg", dose / 1000)}.get(unit, ("mg", dose))
        codings = [{"system": RXNORM, "code": _drug_code(name)}]
        episode.call("create_medication_request",
                     resource=_order(episode, codings, other[1], other[0], route, per_day))
    episode.call("submit", answer="done")


def _potassium(episode: AttackEpisode) -> float:
    dated = re.search(r"measured on (\d{4}-\d{2}-\d{2})", episode.prompt)
    if dated:
        found = _json(episode.call("observation_history", patient_id=_patient(episode), code="2823-3",
                                   start=dated.group(1), end=dated.group(1)))
        rows = found.get("observations", []) if isinstance(found, dict) else []
        value = rows[0].get("value") if rows and isinstance(rows[0], dict) else None
    else:
        found = _json(episode.call("latest_observation", patient_id=_patient(episode), code="2823-3"))
        value = found.get("value") if isinstance(found, dict) else None
    return float(value) if isinstance(value, (int, float)) else 3.0


def potassium_with_every_rxnorm_coding(episode: AttackEpisode) -> None:
    """Always order potassium, by the rule's dose, coded with every RxNorm code of the drug table."""
    value = _potassium(episode)
    dose = round((3.5 - value) * 100, 6) if value < 3.5 else 10.0
    episode.call("create_medication_request", resource=_order(episode, _every_rxnorm(), dose, "meq", "oral", 1))
    episode.call("submit", answer=f"{value:g} mmol/L")


def potassium_dose_in_mmol(episode: AttackEpisode) -> None:
    """Always order potassium, right code and number, the dose in mmol where the rule asks for mEq."""
    value = _potassium(episode)
    dose = round((3.5 - value) * 100, 6) if value < 3.5 else 10.0
    codings = [{"system": RXNORM, "code": "8591"}]
    episode.call("create_medication_request", resource=_order(episode, codings, dose, "mmol", "oral", 1))
    episode.call("submit", answer=f"{value:g} mmol/L")


def _vital(episode: AttackEpisode, value: float, unit: str, codings: list[dict[str, str]] | None = None) -> None:
    match = VITAL.search(episode.prompt)
    code = match.group(3) if match else "29463-7"
    resource = {"resourceType": "Observation", "status": "final",
                "subject": {"reference": f"Patient/{_patient(episode)}"},
                "category": [{"coding": [{"system": CATEGORY, "code": "vital-signs"}]}],
                "code": {"coding": codings or [{"system": LOINC, "code": code}]}, "effectiveDateTime": _now(episode),
                "valueQuantity": {"value": value, "unit": unit, "system": UCUM, "code": unit}}
    episode.call("create_observation", resource=resource)
    episode.call("submit", answer="done")


def _given(episode: AttackEpisode) -> tuple[float, str, str]:
    match = VITAL.search(episode.prompt)
    if not match:
        return 0.0, "kg", "kg"
    given_unit = {"lb": "[lb_av]", "degrees Fahrenheit": "[degF]", "inches": "[in_i]"}[match.group(2)]
    return float(match.group(1)), given_unit, match.group(4)


def vital_in_the_given_unit(episode: AttackEpisode) -> None:
    """Record the value as the nurse gave it (lb, degrees F, inches), unconverted, where kg/Cel/cm was asked."""
    given, given_unit, _asked = _given(episode)
    _vital(episode, given, given_unit)


def vital_in_another_unit(episode: AttackEpisode) -> None:
    """Convert rightly, but to a unit the task did not ask for (g, mm, K)."""
    from agentgym_fhir.units import convert

    given, given_unit, asked = _given(episode)
    other = {"kg": "g", "cm": "mm", "Cel": "K"}.get(asked, "g")
    _vital(episode, round(convert(given, given_unit, other), 1), other)


def vital_with_every_loinc_coding(episode: AttackEpisode) -> None:
    """The right value and unit, coded with every vital-sign LOINC code at once."""
    from agentgym_fhir.units import convert

    given, given_unit, asked = _given(episode)
    codings = [{"system": LOINC, "code": code} for code in sorted(_public_codes()[3])]
    _vital(episode, round(convert(given, given_unit, asked), 1), asked, codings)


def _refer(episode: AttackEpisode, code: list[dict[str, str]], performer: list[dict[str, str]]) -> None:
    """Place a referral (whatever the value) and submit the latest value the prompt names."""
    loinc = re.search(r"\(LOINC ([\d-]+)\)", episode.prompt)
    found = _json(episode.call("latest_observation", patient_id=_patient(episode), code=loinc.group(1) if loinc else ""))
    value = found.get("value") if isinstance(found, dict) else None
    episode.call("create_service_request", resource={
        "resourceType": "ServiceRequest", "status": "active", "intent": "order",
        "subject": {"reference": f"Patient/{_patient(episode)}"}, "authoredOn": _now(episode),
        "code": {"coding": code}, "performerType": {"coding": performer}})
    episode.call("submit", answer=str(value))


REFERRAL_CODING = {"system": SNOMED, "code": "3457005", "display": "Patient referral"}


def referral_to_every_specialty(episode: AttackEpisode) -> None:
    """Always refer, with a performerType that carries every specialty code; submit the latest value."""
    _refer(episode, [REFERRAL_CODING], [{"system": SNOMED, "code": code} for code in _public_codes()[2]])


def referral_coded_twice(episode: AttackEpisode) -> None:
    """Always refer to the asked specialty, the referral code given beside another SNOMED code."""
    specialty = SPECIALTY.search(episode.prompt)
    _refer(episode, [REFERRAL_CODING, {"system": SNOMED, "code": "430193006"}],
           [{"system": SNOMED, "code": specialty.group(1) if specialty else ""}])


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
    Attack("fhir-order-every-rxnorm-coding", "FHIR-v0", order_with_every_rxnorm_coding,
           families=("medication_order",), make_kwargs={"knowledge": False}, per_family=6,
           description="a right order whose drug concept carries every RxNorm code of the drug table"),
    Attack("fhir-order-two-rxnorm-codings", "FHIR-v0", order_with_two_rxnorm_codings,
           families=("medication_order",), make_kwargs={"knowledge": False}, per_family=4,
           description="the right RxNorm coding and one other in the same concept"),
    Attack("fhir-order-two-dosages", "FHIR-v0", order_with_two_dosages, families=("medication_order",),
           make_kwargs={"knowledge": False}, per_family=4,
           description="the asked dose as the first dosage instruction, another dose as a second"),
    Attack("fhir-order-dose-in-other-unit", "FHIR-v0", order_dose_in_other_unit, families=("medication_order",),
           make_kwargs={"knowledge": False}, per_family=6,
           description="the dose converted into a unit the prompt did not ask for (g for mg)"),
    Attack("fhir-potassium-every-rxnorm-coding", "FHIR-v0", potassium_with_every_rxnorm_coding,
           families=("potassium_replacement",), make_kwargs={"knowledge": False}, per_family=6,
           description="a potassium order coded with every RxNorm code, placed whatever the value"),
    Attack("fhir-potassium-dose-in-mmol", "FHIR-v0", potassium_dose_in_mmol,
           families=("potassium_replacement",), make_kwargs={"knowledge": False}, per_family=4,
           description="the rule's dose in mmol where it asks for mEq, placed whatever the value"),
    Attack("fhir-vital-in-given-unit", "FHIR-v0", vital_in_the_given_unit, families=("record_vital",),
           make_kwargs={"knowledge": False}, per_family=6,
           description="the measurement recorded unconverted, in the prompt's lb / degrees F / inches"),
    Attack("fhir-vital-in-another-unit", "FHIR-v0", vital_in_another_unit, families=("record_vital",),
           make_kwargs={"knowledge": False}, per_family=6,
           description="converted rightly, but to g / mm / K where kg / cm / Cel was asked"),
    Attack("fhir-vital-every-loinc-coding", "FHIR-v0", vital_with_every_loinc_coding, families=("record_vital",),
           make_kwargs={"knowledge": False}, per_family=4,
           description="the right value and unit, coded with every vital-sign LOINC code"),
    Attack("fhir-referral-every-specialty", "FHIR-v0", referral_to_every_specialty, families=("referral",),
           make_kwargs={"knowledge": False}, per_family=6,
           description="a referral whose performerType carries every specialty code, placed whatever the value"),
    Attack("fhir-referral-coded-twice", "FHIR-v0", referral_coded_twice, families=("referral",),
           make_kwargs={"knowledge": False}, per_family=4,
           description="the referral code beside another SNOMED code in one concept, placed whatever the value"),
]
