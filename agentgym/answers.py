"""How an answer is read: the one place that parses submitted text, numbers, yes/no, lists, dates and codes.

Every verifier in every domain reads a submission through these functions, so one rule holds everywhere and
is tested once (`tests/core/test_answers.py`). The rules lean strict: a submission that could mean two things
("yes/no", "3 or 4", "a, b, c" for a single answer) reads as nothing rather than as the reading that scores.

Unicode first: text is NFKC-normalised (fullwidth digits and letters become ASCII, a non-breaking space
becomes a space, "²" becomes "2"), invisible format characters (zero-width spaces and joiners, bidi marks,
soft hyphens, byte-order marks) are removed, and the Unicode minus sign reads as "-".
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import numbers
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "fold_unicode", "lists_match", "normalize_code", "normalize_text", "numbers_match", "parse_date",
    "parse_list", "parse_number", "parse_yes_no",
]

# Characters stripped from both ends of a text answer: spaces and sentence punctuation, quotes included.
_EDGE_PUNCTUATION = " \t\n\r.,;:!?\"'`\u00ab\u00bb\u201c\u201d\u2018\u2019\u201e\u2039\u203a"
_KEPT_CONTROLS = {"\t", "\n", "\r"}


def fold_unicode(value: Any) -> str:
    """`value` as text, NFKC-normalised, with invisible format and control characters removed.

    Tabs and line breaks are kept (lists are split on them); the Unicode minus sign becomes "-".
    """
    text = unicodedata.normalize("NFKC", value if isinstance(value, str) else str(value))
    text = text.replace("\u2212", "-")
    return "".join(
        character for character in text
        if character in _KEPT_CONTROLS or unicodedata.category(character) not in ("Cf", "Cc")
    )


def normalize_text(value: Any) -> str:
    """The comparable form of a text answer: NFKC, case-folded, runs of white space made one space, and
    surrounding spaces, quotes and sentence punctuation (. , ; : ! ?) stripped. Inner punctuation stays."""
    text = fold_unicode(value).casefold()
    text = re.sub(r"\s+", " ", text)
    return text.strip(_EDGE_PUNCTUATION)


# A number: optional sign, digits with optional comma thousands groups ("1,234"), optional decimals, optional
# exponent. It must not continue a word or another number ("CO2", "m2", "1.2.3" read no number from the
# letters' digits), so the match may not follow a letter, digit, "_" or ".".
_NUMBER = re.compile(
    r"(?<![\w.])[-+]?(?:(?:\d{1,3}(?:,\d{3})+(?![\d,])|\d+)(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?"
)
_PURE_NUMBER = re.compile(r"\s*" + _NUMBER.pattern + r"\s*")


def _numbers_in(text: str) -> list[float]:
    found: list[float] = []
    for match in _NUMBER.finditer(text):
        try:
            number = float(match.group(0).replace(",", ""))
        except ValueError:  # the pattern only matches float syntax; kept so a surprise reads as "no number"
            continue
        if math.isfinite(number):
            found.append(number)
    return found


def parse_number(value: Any) -> float | None:
    """The one number in `value`, or None.

    Accepts an int or float (not a bool), a mapping with a "value" key (a FHIR Quantity), or text holding
    exactly one number, with or without units or words around it: "7.2 mmol/L", "1,234", "-3", "1e-3",
    "12%" (12.0: a percent sign does not rescale). Text with two different numbers ("3 or 4", "3-4",
    "2020-01-02") is ambiguous and gives None; the same number repeated ("7 (7)") is still that number.
    Digits that belong to a word ("CO2", "m²") are not numbers. NaN and infinities give None.
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, numbers.Real):
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, Mapping):
        return parse_number(value["value"]) if "value" in value else None
    if not isinstance(value, str):
        return None
    found = _numbers_in(fold_unicode(value))
    if not found or any(number != found[0] for number in found[1:]):
        return None
    return found[0]


def numbers_match(got: Any, gold: Any, *, rel_tol: float = 1e-6, abs_tol: float = 0.0) -> bool:
    """Whether `got` reads (with `parse_number`) as the number `gold`.

    The tolerance is relative to the gold: |got - gold| <= max(rel_tol * |gold|, abs_tol). There is no hidden
    absolute floor, so for a gold of 0.004 a submission of 0 is wrong unless the caller passes an `abs_tol`
    of at least 0.004 on purpose. A gold of 0 matches only 0 (within `abs_tol`).
    """
    number, expected = parse_number(got), parse_number(gold)
    if number is None or expected is None:
        return False
    allowed = max(abs(rel_tol) * abs(expected), abs(abs_tol))
    return abs(number - expected) <= allowed


_YES_WORDS = {"yes", "true", "yeah", "yep", "affirmative"}
_NO_WORDS = {"no", "false", "nope", "negative"}
# Alone, these are answers; inside a sentence they are too easily something else ("n = 5", "1 tablet").
_YES_ALONE = {"y", "1"}
_NO_ALONE = {"n", "0"}
# Words that make a sentence's yes/no word unreliable: negations and hedges.
_HEDGES = {
    "not", "never", "nor", "neither", "cannot", "can't", "isn't", "aren't", "wasn't", "weren't", "don't",
    "doesn't", "didn't", "won't", "wouldn't", "shouldn't", "hasn't", "haven't", "maybe", "perhaps",
    "possibly", "probably", "unclear", "unknown", "uncertain", "either", "or",
}


def parse_yes_no(value: Any) -> bool | None:
    """True for yes, False for no, None when the answer is not clearly one of them.

    Accepts a bool, the ints 1 / 0, and text: "yes", "No.", "TRUE", "y", "n", or a sentence whose only
    yes/no word is unambiguous ("Yes, the patient takes it."). None for anything that names both ("yes or
    no", "yes/no", "no ... yes"), negates or hedges ("not true", "maybe yes"), or names neither.
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Real):
        return True if value == 1 else False if value == 0 else None
    if value is None or not isinstance(value, str):
        return None
    text = normalize_text(value)
    if text in _YES_WORDS or text in _YES_ALONE:
        return True
    if text in _NO_WORDS or text in _NO_ALONE:
        return False
    words = re.findall(r"[\w']+", text)
    if any(word in _HEDGES for word in words):
        return None
    polarities = {True for word in words if word in _YES_WORDS} | {False for word in words if word in _NO_WORDS}
    return polarities.pop() if len(polarities) == 1 else None


_BULLET = re.compile(r"^(?:[-*\u2022]\s+|\d+[.)]\s+)")


def _clean_item(item: Any) -> str:
    text = normalize_text(item)
    text = _BULLET.sub("", text)
    text = text.removeprefix("and ")  # "a, b, and c": the last item's joining word
    return normalize_text(text)


def _split_text(text: str) -> list[str]:
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            decoded = json.loads(stripped)
        except json.JSONDecodeError:
            decoded = None
        if isinstance(decoded, list):
            return [item if isinstance(item, str) else json.dumps(item) for item in decoded]
    # The strongest separator present wins, so "Smith, John\nDoe, Jane" keeps its commas.
    for separator in ("\n", ";", ","):
        if separator in stripped:
            return stripped.split(separator)
    return [stripped]


def parse_list(value: Any) -> list[str]:
    """The items of a list answer, each read with `normalize_text` (leading bullets "- ", "* ", "1. " and a
    joining "and " removed), empty items dropped.

    Accepts a list, tuple or set; text holding a JSON array; or text split by newlines, else semicolons, else
    commas (the strongest separator present wins). A scalar is a one-item list; None is the empty list.
    """
    if value is None:
        return []
    items: Iterable[Any]
    if isinstance(value, (list, tuple, set, frozenset)):
        items = value
    elif isinstance(value, str):
        items = _split_text(fold_unicode(value))
    else:
        items = [value]
    cleaned = (_clean_item(item) for item in items if item is not None)
    return [item for item in cleaned if item]


def _item_key(item: str) -> str:
    # A purely numeric item compares as a number ("1.0" and "1" are one item).
    if _PURE_NUMBER.fullmatch(item):
        number = parse_number(item)
        if number is not None:
            return f"#{number:.9g}"
    return item


def lists_match(got: Any, gold: Any, *, ordered: bool = False) -> bool:
    """Whether `got` and `gold` (each read with `parse_list`) hold the same items.

    Unordered, the items compare as multisets: every gold item must be there, and an extra item (another
    candidate, a repeat) fails. Ordered, the sequences must be equal. Purely numeric items compare by value.
    """
    got_keys = [_item_key(item) for item in parse_list(got)]
    gold_keys = [_item_key(item) for item in parse_list(gold)]
    if ordered:
        return got_keys == gold_keys
    return Counter(got_keys) == Counter(gold_keys)


_ISO_DATE = re.compile(r"(?<!\d)(\d{4})[-/](\d{1,2})[-/](\d{1,2})(?!\d)")
_WRITTEN_FORMATS = ("%d %B %Y", "%d %b %Y", "%B %d %Y", "%b %d %Y")


def parse_date(value: Any) -> _dt.date | None:
    """The calendar date in `value`, or None.

    Accepts a `date` / `datetime`; text with exactly one year-first date ("2021-03-04",
    "2021-03-04T10:00:00Z", "2021/3/4", "on 2021-03-04."); or a written date alone ("4 March 2021",
    "March 4, 2021", "Mar 4 2021"). Day-first or month-first numeric dates ("03/04/2021") are ambiguous and
    give None, as does text naming two different dates or an impossible one ("2021-02-30").
    """
    if isinstance(value, _dt.datetime):
        return value.date()
    if isinstance(value, _dt.date):
        return value
    if not isinstance(value, str):
        return None
    text = fold_unicode(value).strip()
    found: set[_dt.date] = set()
    for year, month, day in _ISO_DATE.findall(text):
        try:
            found.add(_dt.date(int(year), int(month), int(day)))
        except ValueError:
            return None
    if found:
        return found.pop() if len(found) == 1 else None
    written = re.sub(r"[,.]", " ", text)
    written = re.sub(r"(\d)(st|nd|rd|th)\b", r"\1", written)
    written = " ".join(written.split())
    for form in _WRITTEN_FORMATS:
        try:
            return _dt.datetime.strptime(written, form).date()
        except ValueError:
            continue
    return None


def normalize_code(value: Any) -> str:
    """The comparable form of a code token (ICD-10, LOINC, RxNorm, an id): NFKC, invisible characters
    removed, inner white space collapsed, surrounding spaces, quotes and sentence punctuation stripped,
    upper-cased. "e11.9 " and "E11.9" are one code."""
    text = re.sub(r"\s+", " ", fold_unicode(value))
    return text.strip(_EDGE_PUNCTUATION).upper()
