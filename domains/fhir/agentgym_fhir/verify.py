"""Verifiers of FHIR-v0: typed answers, write inspection, and an optional LLM judge.

- ``fhir_answer`` scores a submitted answer against the task's gold by its ``kind``: ``number`` (tolerance;
  with ``unit``, a stated unit must be that unit in any spelling `agentgym_fhir.units` knows, or one the value
  converts from; with ``require_unit`` the unit must be stated), ``date``, ``code``, ``set`` (each gold item may list
  alternatives; partial credit is reported as precision and recall), ``yes_no``, ``none`` ("none found"),
  ``text`` (normalized equality).
- ``fhir_write`` inspects the resources the episode wrote (its copy-on-write view of the store): each expected
  resource must be matched by one written resource with the right type, code, subject, dose, route, timing
  or value; writes that were not asked for fail the task. Exactly what was asked: each coded concept holds
  one coding, the asked code of the asked system (every code of a system, two codes, or a second coding of
  another system fails); a quantity is in the asked unit (its UCUM code or a display of that same unit, not
  another unit it converts to); an order holds one dosage instruction with one dose. A task may also require an answer (``answer``
  params, scored as by ``fhir_answer``), as conditional-order tasks do when no order is right.
- ``llm_judge`` asks an OpenAI-compatible endpoint whether a free-text answer matches the gold. It is off by
  default and used only when a task names it or the env is made with ``judge=...``.
"""

from __future__ import annotations

import json
import math
import os
import re
from datetime import date
from typing import Any

from agentgym import answers
from agentgym.answers import normalize_text, parse_number
from agentgym.rewards import Score, verifier
from agentgym_fhir import units

NONE_ANSWERS = {"none", "none found", "no", "nothing", "n/a", "na", "no results", "not found", "no order",
                "no orders", "[]", "null", "no data", "no record", "none recorded"}
CODE_SYSTEMS = {"icd10cm", "icd-10-cm", "icd10", "loinc", "rxnorm", "snomed", "snomed ct", "sct", "cvx", "mrn"}


# ------------------------------------------------------------------------------------------- parsing
# Every rule here is `agentgym.answers` plus what FHIR answers add: a unit after a number (units hold digits
# of their own: "10*3/uL", "mL/min/1.73m2"), dot-free ICD-10 codes ("E119"), a coding's "system|code" form.
_LEADING_NUMBER = re.compile(r"\s*([-+]?(?:(?:\d{1,3}(?:,\d{3})+(?![\d,])|\d+)(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?)(.*)$",
                             re.DOTALL)
_ANY_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+(?:[.,]\d+)*|\.\d+)")


def _looks_like_unit(text: str) -> bool:
    """A unit such as "mmol/L", "10*3/uL", "mL/min/1.73 m2" or "%": a spelling `agentgym_fhir.units` knows
    ("mL/min per 1.73 m2", "beats per minute"), or one or two tokens, each with a letter or a unit sign, none a
    bare number (so "or 4", "- 5" and "(or 3, 2, 1)" are not units)."""
    if units.known_unit(text):
        return True
    tokens = text.split()
    return 0 < len(tokens) <= 2 and all(re.search(r"[A-Za-z%\u00b0\u00b5\u03bc\[\]{}]", token)
                                        and not re.fullmatch(r"[(\[]?[-+]?[\d.,]+[)\]]?", token) for token in tokens)


# A label before the number ("eGFR 73.6 mL/min/1.73m2", "PHQ-9 = 4", "The eGFR is 80"): up to five words, which
# may hold digits of their own, then an optional ":" or "=". Words that bound or hedge the number ("less than 80",
# "above 80", "about") are no label, so such answers keep reading as no single number.
_LABEL = re.compile(r"^((?:[A-Za-z][\w\-/]*\s*){1,5})[:=]?\s*(?=[-+]?(?:\d|\.\d))")
_NOT_A_LABEL = {"less", "more", "greater", "fewer", "under", "over", "above", "below", "about", "approximately",
                "around", "roughly", "nearly", "almost", "least", "most", "not", "between", "from", "or", "to",
                "than", "up", "maybe", "perhaps", "either", "circa", "approx"}


_BOUNDS = {"less", "more", "greater", "fewer", "under", "over", "above", "below", "least", "most", "between",
           "than", "exceeds", "exceeding"}


def _unlabelled(text: str) -> str:
    """`text` without a leading label (see `_LABEL`)."""
    found = _LABEL.match(text)
    if not found or {word.lower() for word in re.findall(r"[A-Za-z]+", found.group(1))} & _NOT_A_LABEL:
        return text
    return text[found.end():]


def read_quantity(submission: Any) -> tuple[float | None, str | None]:
    """(number, unit) of a numeric answer: 4.1, "4.1", "4.1 mmol/L", "72.3 mL/min/1.73m2", "The latest is
    4.1 mmol/L", {"value": 4.1, "unit": "mmol/L"}. A number followed by anything that is not a unit, or text
    with two different numbers ("4 (or 3)", "3-4"), reads as no number."""
    if isinstance(submission, dict):
        unit = submission.get("unit") or submission.get("code")
        return parse_number(submission.get("value")), (str(unit) if unit else None)
    if not isinstance(submission, str):
        return parse_number(submission), None
    text = answers.fold_unicode(submission).strip().rstrip(".")
    before_number = re.split(r"[-+]?(?:\d|\.\d)", text, maxsplit=1)[0]
    if {word.lower() for word in re.findall(r"[A-Za-z]+", before_number)} & _BOUNDS:
        return None, None  # "above 80", "less than 80": a bound, not the value
    text = _unlabelled(text)
    leading = _LEADING_NUMBER.match(text)
    if leading:
        rest = leading.group(2).strip()
        number = parse_number(leading.group(1))
        if not rest:
            return number, None
        if _looks_like_unit(rest):
            return number, rest
    number = parse_number(text)
    if number is None:
        return None, None
    found = _ANY_NUMBER.search(text)
    tail = text[found.end():].strip() if found else ""
    return number, (tail if tail and _looks_like_unit(tail) else None)


def _unit_of(submission: Any) -> str | None:
    return read_quantity(submission)[1]


def parse_date(value: Any) -> date | None:
    """A calendar date (see `agentgym.answers.parse_date`), also from a {"value"/"date": ...} object."""
    if isinstance(value, dict):
        value = value.get("value") or value.get("date")
    return answers.parse_date(value)


def normalize_code(value: Any) -> str:
    """`'e11.9'`, `'E119'`, `'http://...|E11.9'`, `{"code": "E11.9"}` -> `'E119'` (dots, case and system ignored).

    Anything that is not one code reads as "": several codes ("E11.9, I10", "E11.9 or I10", "I10|E11.9"), or
    a "system|code" whose system part is not a code system. A list of exactly one code, sent as a JSON array or
    as its text ('["M54.17"]'), is that code (FHIR playtest #2).
    """
    if isinstance(value, str) and value.strip().startswith("["):
        items = answers.split_items(value)
        value = items if len(items) != 1 else items[0]
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    if isinstance(value, dict):
        value = value.get("code", "")
    if value is None or isinstance(value, (list, tuple, set, dict, bool)):
        return ""
    text = answers.normalize_code(value)
    if "|" in text:
        system, text = text.rsplit("|", 1)
        if not (system.lower().startswith(("http://", "https://", "urn:")) or system.lower() in CODE_SYSTEMS):
            return ""
    text = re.sub(r"^(?:ICD-?10(?:-?CM)?|LOINC|RXNORM|SNOMED(?: CT)?|MRN)[:\s]+", "", text.strip())
    if not text or re.search(r"[\s,;/|]", text):
        return ""
    return text.replace(".", "")


def is_none_answer(value: Any) -> bool:
    """The submission says there is nothing to report ('none', 'none found', an empty list)."""
    if isinstance(value, (list, tuple)) and not value:
        return True
    if isinstance(value, str):
        return normalize_text(value) in NONE_ANSWERS
    return False


def _items(value: Any) -> list[str]:
    """The items of a list answer (`agentgym.answers.parse_list`; a dict item counts by its code or name, and
    "a and b" is two items)."""
    if isinstance(value, (list, tuple, set)):
        value = [item.get("code") or item.get("name") or item.get("display") or json.dumps(item)
                 if isinstance(item, dict) else item for item in value]
    out: list[str] = []
    for item in answers.parse_list(value):
        out.extend(part for part in re.split(r"\s+and\s+", item) if part)
    return out


def _same_item(got: str, alternatives: list[str]) -> bool:
    g = normalize_text(got)
    code = normalize_code(got)
    return any(g == normalize_text(a) or (code and code == normalize_code(a)) for a in alternatives)


def _names(item: str, alternatives: list[str]) -> bool:
    text = normalize_text(item)
    return any(re.search(rf"(?<![\w/]){re.escape(normalize_text(a))}(?![\w/])", text) for a in alternatives if a)


def _named_item(item: str, gold_items: list[list[Any]], unmatched: list[int]) -> int | None:
    """The position of the one unmatched gold item that `item` names as a whole word with more words around it
    (a dose, the item's own code in brackets), when it names no other gold item and no other drug of the
    vocabulary; None otherwise (so "amlodipine or lisinopril" and "amlodipine/lisinopril" name nothing)."""
    from agentgym_fhir.vocab import DRUGS

    named = [position for position, gold_item in enumerate(gold_items) if _names(item, [str(a) for a in gold_item])]
    if len(named) != 1 or named[0] not in unmatched:
        return None
    own = {normalize_text(a) for a in gold_items[named[0]]}
    others = {drug.name for drug in DRUGS.values()} - own
    return None if _names(item, sorted(others)) else named[0]


def numbers_close(number: float, gold: float, *, tolerance: float, relative: bool) -> bool:
    """Whether `number` is `gold` within the task's tolerance. A relative tolerance scales with the gold; an
    absolute one is never wider than half the gold, so 0 is never right for a small non-zero gold."""
    if relative:
        return answers.numbers_match(number, gold, rel_tol=tolerance)
    allowed = min(tolerance, abs(gold) / 2) if gold else tolerance
    return answers.numbers_match(number, gold, rel_tol=0.0, abs_tol=allowed + 1e-9)


# ------------------------------------------------------------------------------------------- answers
def score_answer(gold: Any, submission: Any, *, kind: str, tolerance: float = 0.0, relative: bool = False,
                 unit: str | None = None, require_unit: bool = False, analyte: str | None = None,
                 alternatives: list[Any] | None = None, daily: bool = False) -> Score:
    """Score `submission` against `gold` by answer kind (see the module docstring). `daily`: the gold is an
    amount a day (a total daily dose in `unit`), so a unit per day ("mg/day", "mg/d", "mg daily") is `unit`."""
    if kind == "none":
        ok = is_none_answer(submission)
        return Score(float(ok), message="" if ok else "expected an answer saying none was found")
    if gold is None or (kind == "set" and gold == []):
        if kind == "set" and isinstance(submission, (list, tuple)) and not submission:
            return Score(1.0)
        ok = is_none_answer(submission)
        return Score(float(ok), message="" if ok else "nothing matches; the answer should say none was found")
    if kind == "number":
        if daily and isinstance(submission, str) and _DIVIDED.search(submission):
            return Score(0.0, message="a dose per administration; the task asks for the total a day")
        number, stated = read_quantity(_per_day_read(submission) if daily else submission)
        if number is None:
            return Score(0.0, message="no single number in the submission")
        slack = 0.0
        if unit and stated:
            converted = _in_unit(number, stated, unit, analyte)
            if converted is None:
                return Score(0.0, {"unit": 0.0}, message=f"the unit {stated!r} is not {unit}")
            if not units.same_unit(stated, unit) and not relative:
                slack = _rounding_slack(submission, number, stated, unit, analyte, tolerance)
            number = converted
        elif unit and require_unit and not units.is_dimensionless(unit):
            return Score(0.0, {"unit": 0.0}, message=f"the answer needs its unit ({unit})")
        gold_number = float(gold)
        ok = numbers_close(number, gold_number, tolerance=tolerance + slack, relative=relative)
        return Score(float(ok), {"unit": 1.0} if unit else {}, message="" if ok else f"expected {gold_number:g}")
    if kind == "date":
        got, want = parse_date(submission), parse_date(gold)
        return Score(float(got is not None and got == want), message="" if got == want else f"expected {gold}")
    if kind == "code":
        options = [gold, *(alternatives or [])]
        got = normalize_code(submission)
        ok = bool(got) and any(got == normalize_code(option) for option in options)
        return Score(float(ok), message="" if ok else f"expected {gold}")
    if kind == "set":
        gold_items = [item if isinstance(item, list) else [item] for item in gold]
        got_items = [] if is_none_answer(submission) else _items(submission)
        unmatched = list(range(len(gold_items)))
        correct = 0
        leftover = []
        for item in got_items:
            for position in unmatched:
                if _same_item(item, [str(a) for a in gold_items[position]]):
                    unmatched.remove(position)
                    correct += 1
                    break
            else:
                leftover.append(item)
        for item in leftover:  # "amlodipine 5 mg", "amlodipine (17767)": the drug and what it is not
            position = _named_item(item, gold_items, unmatched)
            if position is not None:
                unmatched.remove(position)
                correct += 1
        precision = correct / len(got_items) if got_items else 0.0
        recall = correct / len(gold_items) if gold_items else 0.0
        ok = correct == len(gold_items) == len(got_items)
        return Score(float(ok), {"precision": precision, "recall": recall})
    if kind == "yes_no":
        got, want = answers.parse_yes_no(submission), answers.parse_yes_no(gold)
        return Score(float(got is not None and got == want),
                     message="" if got is not None else "answer plainly yes or no")
    if kind == "text":
        return Score(float(normalize_text(submission) == normalize_text(gold)))
    raise ValueError(f"unknown answer kind {kind!r}; use number, date, code, set, yes_no, none or text")


def _in_unit(number: float, stated: str, unit: str, analyte: str | None) -> float | None:
    """`number` (written in `stated`) in the gold's `unit`: as it is when `stated` spells the same unit, converted
    when it is another unit of the same quantity, None when it is neither. A score or ratio ("{score}") is also
    named by its annotation ("points", "INR")."""
    if units.same_unit(stated, unit):
        return number
    try:
        return units.convert(number, stated, unit, analyte)
    except units.UnitError:
        return None


# "1800 mg/day", "1800 mg/d", "1800 mg daily", "1800 mg per day", "1800 mg a day", "1.8 g/24 h".
_PER_DAY = re.compile(r"^(.*?\S)\s*(?:/\s*(?:d|day|24\s*h)|\s(?:daily|per\s+day|a\s+day|each\s+day|every\s+day))\s*\.?$",
                      re.IGNORECASE)


# A dose per administration ("600 mg three times daily", "300 mg every 8 hours"), not an amount a day.
_DIVIDED = re.compile(r"\b(?:times|twice|thrice|bid|tid|qid|q\d+h|every|each\s+dose|per\s+dose)\b", re.IGNORECASE)


def _per_day_read(submission: Any) -> Any:
    """A daily amount's answer with its "per day" taken off the unit (the gold is already an amount a day)."""
    if not isinstance(submission, str):
        return submission
    found = _PER_DAY.match(answers.fold_unicode(submission).strip())
    return found.group(1) if found else submission


def _written_decimals(submission: Any) -> int:
    """How many decimals the submission's number is written with ("0.21 mmol/L": 2)."""
    text = str(submission.get("value")) if isinstance(submission, dict) else str(submission)
    found = _LEADING_NUMBER.match(_unlabelled(answers.fold_unicode(text).strip()))
    number = found.group(1) if found else ""
    return len(number.split(".", 1)[1].split("e")[0].split("E")[0]) if "." in number else 0


def _rounding_slack(submission: Any, number: float, stated: str, unit: str, analyte: str | None,
                    tolerance: float) -> float:
    """An answer given in another unit than the gold's is rounded in its own unit: half its last place, in the
    gold's unit, is added to the tolerance, when it is written with at least the decimals the tolerance asks
    for (0.011 asks for two: "0.21 mmol/L" for +8 mg/dL of cholesterol, whose exact value is 0.2069). A
    coarser answer ("0.2 mmol/L") gets no slack."""
    if tolerance <= 0:
        return 0.0
    asked = max(0, round(-math.log10(2 * tolerance)))
    written = _written_decimals(submission)
    if written < asked:
        return 0.0
    half = 0.5 * 10 ** -written
    low, high = _in_unit(number - half, stated, unit, analyte), _in_unit(number + half, stated, unit, analyte)
    return abs(high - low) / 2 if low is not None and high is not None else 0.0


@verifier("fhir_answer")
def fhir_answer(task: Any, submission: Any, state: Any, *, kind: str, **params: Any) -> Score:
    """A typed answer (see `score_answer`)."""
    return score_answer(task.answer, submission, kind=kind, **params)


# ------------------------------------------------------------------------------------------- writes
def _codes(concept: Any) -> set[tuple[str, str]]:
    result: set[tuple[str, str]] = set()
    if isinstance(concept, dict):
        for coding in concept.get("coding") or []:
            if isinstance(coding, dict) and coding.get("code"):
                result.add((str(coding.get("system", "")), str(coding["code"])))
    return result


def _has_code(concept: Any, expected: list[str]) -> bool:
    """The concept says exactly the asked code: it holds one coding, and that coding is the asked code of the
    asked system. Several codings fail whatever they are: codes of the asked system beside the right one are
    a hedge, and a coding of another system is a second claim the task cannot check (a coding without a code
    counts too)."""
    if not isinstance(concept, dict):
        return False
    codings = concept.get("coding")
    if not isinstance(codings, list) or len(codings) != 1 or not isinstance(codings[0], dict):
        return False
    system, code = expected
    coding = codings[0]
    return str(coding.get("code", "")) == code and (not system or coding.get("system") == system)


def _first(items: Any) -> dict[str, Any]:
    return items[0] if isinstance(items, list) and items and isinstance(items[0], dict) else {}


def _dose(resource: dict[str, Any]) -> dict[str, Any]:
    dosage = _first(resource.get("dosageInstruction"))
    dose_and_rate = _first(dosage.get("doseAndRate"))
    return dose_and_rate.get("doseQuantity") or {}


def _one_dosage(resource: dict[str, Any]) -> bool:
    """The order holds one dosage instruction with (at most) one dose: a second one would be a hedge the
    first-entry checks never read."""
    dosages = resource.get("dosageInstruction")
    if not isinstance(dosages, list) or len(dosages) != 1 or not isinstance(dosages[0], dict):
        return False
    doses = dosages[0].get("doseAndRate")
    return doses is None or (isinstance(doses, list) and len(doses) <= 1)


def _per_day(resource: dict[str, Any]) -> float | None:
    repeat = (_first(resource.get("dosageInstruction")).get("timing") or {}).get("repeat") or {}
    frequency, period = repeat.get("frequency"), repeat.get("period")
    if frequency is None or period is None:
        return None
    per_unit = {"d": 1.0, "h": 24.0, "wk": 1 / 7, "min": 1440.0}.get(repeat.get("periodUnit", "d"))
    if per_unit is None or not period:
        return None
    return float(frequency) / float(period) * per_unit


UCUM = "http://unitsofmeasure.org"


def quantity_unit_is(quantity: dict[str, Any], unit: str) -> bool:
    """The quantity is written in exactly `unit`: its UCUM `code` and its display `unit` (whichever are given,
    at least one) each name that unit, and a `system`, when given, is UCUM. A value in another unit that
    would convert to it (lb for kg, g for mg) is not what was asked."""
    if not isinstance(quantity, dict):
        return False
    given = [quantity.get(key) for key in ("code", "unit") if quantity.get(key) not in (None, "")]
    if not given or (quantity.get("system") not in (None, "", UCUM)):
        return False
    return all(isinstance(text, str) and units.same_unit(text, unit) for text in given)


def _quantity_matches(quantity: dict[str, Any], expected: dict[str, Any]) -> bool:
    if not isinstance(quantity, dict):
        return False
    value = parse_number(quantity.get("value"))
    if value is None:
        return False
    if expected.get("unit") and not quantity_unit_is(quantity, str(expected["unit"])):
        return False
    return numbers_close(value, float(expected["value"]), tolerance=float(expected.get("tolerance", 1e-6)),
                         relative=False)


def check_resource(resource: dict[str, Any], spec: dict[str, Any], now: str | None = None) -> dict[str, bool]:
    """Which fields of `spec` the written `resource` satisfies (field -> ok)."""
    checks: dict[str, bool] = {"type": resource.get("resourceType") == spec["resourceType"]}
    if "subject" in spec:
        checks["subject"] = (resource.get("subject") or {}).get("reference") == spec["subject"]
    if "code" in spec:
        field_name = {"MedicationRequest": "medicationCodeableConcept"}.get(spec["resourceType"], "code")
        checks["code"] = _has_code(resource.get(field_name), spec["code"])
    if "status" in spec:
        checks["status"] = resource.get("status") in spec["status"]
    if "intent" in spec:
        checks["intent"] = resource.get("intent") in spec["intent"]
    if "dose" in spec:
        checks["dose"] = _one_dosage(resource) and _quantity_matches(_dose(resource), spec["dose"])
    if "route" in spec:
        checks["route"] = _has_code(_first(resource.get("dosageInstruction")).get("route"), spec["route"])
    if "per_day" in spec:
        got = _per_day(resource)
        checks["timing"] = got is not None and abs(got - float(spec["per_day"])) < 1e-6
    if "performer_type" in spec:
        checks["performer_type"] = _has_code(resource.get("performerType"), spec["performer_type"])
    if "category" in spec:
        categories = resource.get("category")
        checks["category"] = isinstance(categories, list) and bool(categories) \
            and all(_has_code(c, spec["category"]) for c in categories)
    if "value" in spec:
        checks["value"] = _quantity_matches(resource.get("valueQuantity") or {}, spec["value"])
    if "effective_date" in spec:
        effective = resource.get("effectiveDateTime") or resource.get("authoredOn") or ""
        checks["timing"] = parse_date(effective) == parse_date(spec["effective_date"])
    return checks


def written_resources(state: Any) -> list[dict[str, Any]]:
    """What the episode wrote (its own resources), whatever the backend."""
    if state is None:
        return []
    written = getattr(state, "written", None)
    return list(written()) if callable(written) else []


@verifier("fhir_write")
def fhir_write(task: Any, submission: Any, state: Any, *, expected: list[dict[str, Any]],
               allow_other_writes: bool = False, answer: dict[str, Any] | None = None) -> Score:
    """Expected resources written, nothing else written, and (when asked) the right answer submitted."""
    written = written_resources(state)
    components: dict[str, float] = {}
    remaining = list(written)
    matched = 0
    messages: list[str] = []
    for number, spec in enumerate(expected):
        best: tuple[int, dict[str, bool], dict[str, Any] | None] = (-1, {}, None)
        for resource in remaining:
            checks = check_resource(resource, spec)
            passed = sum(checks.values())
            if passed > best[0]:
                best = (passed, checks, resource)
        checks, resource = best[1], best[2]
        for name, ok in checks.items():
            components[f"{name}"] = min(components.get(name, 1.0), float(ok))
        if resource is not None and all(checks.values()):
            matched += 1
            remaining.remove(resource)
        else:
            wrong = [name for name, ok in checks.items() if not ok] or ["nothing written"]
            messages.append(f"expected {spec['resourceType']} #{number + 1}: wrong {', '.join(wrong)}")
    extra = [] if allow_other_writes else remaining
    if extra:
        messages.append(f"{len(extra)} write(s) that were not asked for: "
                        + ", ".join(r.get("resourceType", "?") for r in extra))
    components["expected_writes"] = matched / len(expected) if expected else 1.0
    components["no_forbidden_writes"] = 0.0 if extra else 1.0
    ok = matched == len(expected) and components["no_forbidden_writes"] == 1.0
    if answer is not None:
        answer_score = score_answer(answer.get("gold"), submission, **{k: v for k, v in answer.items() if k != "gold"})
        components["answer"] = answer_score.value
        if answer_score.value < 1.0:
            ok = False
            messages.append(answer_score.message or "wrong answer")
    return Score(float(ok), components, "; ".join(messages))


# ------------------------------------------------------------------------------------------- LLM judge
JUDGE_PROMPT = (
    "You grade an answer to a clinical records question. Reply with one word: CORRECT if the candidate answer "
    "states the same facts as the reference answer (wording may differ), otherwise INCORRECT.\n\n"
    "Question: {question}\nReference answer: {reference}\nCandidate answer: {candidate}\n"
)


def judge_config(judge: dict[str, Any] | str | None = None) -> dict[str, Any] | None:
    """Resolve a judge configuration from the argument or `AGENTGYM_JUDGE_BASE_URL` / `_MODEL` / `_API_KEY`.

    Returns None when no judge is configured (the default: verification never calls a model).
    """
    if isinstance(judge, str):
        judge = {"model": judge}
    config = dict(judge or {})
    config.setdefault("base_url", os.environ.get("AGENTGYM_JUDGE_BASE_URL"))
    config.setdefault("model", os.environ.get("AGENTGYM_JUDGE_MODEL"))
    config.setdefault("api_key", os.environ.get("AGENTGYM_JUDGE_API_KEY", "none"))
    if not judge and not os.environ.get("AGENTGYM_JUDGE_BASE_URL"):
        return None
    if not config.get("base_url") or not config.get("model"):
        raise ValueError("an LLM judge needs base_url and model (or AGENTGYM_JUDGE_BASE_URL and "
                         "AGENTGYM_JUDGE_MODEL)")
    return config


def ask_judge(config: dict[str, Any], question: str, reference: Any, candidate: Any, timeout: float = 60) -> Score:
    """One grading request to an OpenAI-compatible chat endpoint; CORRECT -> 1, anything else -> 0."""
    import httpx

    body = {"model": config["model"], "temperature": 0, "max_tokens": 5, "messages": [
        {"role": "user", "content": JUDGE_PROMPT.format(question=question, reference=reference, candidate=candidate)}]}
    url = str(config["base_url"]).rstrip("/") + "/chat/completions"
    try:
        response = httpx.post(url, json=body, timeout=timeout,
                              headers={"Authorization": f"Bearer {config.get('api_key', 'none')}"})
        response.raise_for_status()
        reply = response.json()["choices"][0]["message"]["content"] or ""
    except (httpx.HTTPError, KeyError, IndexError, ValueError) as error:
        return Score(0.0, {"judge_error": 1.0}, message=f"judge request failed: {error}")
    verdict = reply.strip().upper()
    ok = verdict.startswith("CORRECT")
    return Score(float(ok), {"judge": float(ok)}, message=f"judge said {verdict[:20]}")


@verifier("llm_judge")
def llm_judge(task: Any, submission: Any, state: Any, *, judge: dict[str, Any] | None = None) -> Score:
    """Free-text answers graded by an OpenAI-compatible model (configured by `judge` or the environment)."""
    config = judge_config(judge)
    if config is None:
        # no judge configured: fall back to normalized equality, never to a silent pass
        return Score(float(normalize_text(submission) == normalize_text(task.answer)),
                     message="no LLM judge configured; compared text exactly")
    return ask_judge(config, task.prompt, task.answer, submission)

