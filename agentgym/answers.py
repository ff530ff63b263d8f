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
import string
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "ANSWER_SCHEMAS", "OPTION_LETTERS", "answer_schema", "fold_unicode", "list_separators", "lists_match", "named_options", "normalize_code",
    "normalize_text", "normalize_unit", "numbers_match", "option_key", "parse_date", "parse_list", "parse_number",
    "parse_yes_no", "read_option", "same_unit", "split_items", "split_quantity",
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


_BULLET = re.compile(r"^\s*(?:[-*\u2022]\s+|\d+[.)]\s+)")
_LIST_SEPARATORS = (";", ",")


def _decoded_array(text: str) -> list[Any] | None:
    """The items of `text` when it is a JSON array, or a JSON string that holds one (an array encoded twice)."""
    stripped = text.strip()
    for _ in range(2):
        if not stripped.startswith(("[", '"')):
            return None
        try:
            decoded = json.loads(stripped)
        except (json.JSONDecodeError, RecursionError):
            return None
        if isinstance(decoded, list):
            return decoded
        if not isinstance(decoded, str):
            return None
        stripped = decoded.strip()
    return None


# A one-line bracketed list that is not JSON ("[a, b]", "['a', 'b']"): brackets only at its two ends.
_BRACKETED = re.compile(r"\[[^\[\]\n]*\]")


def split_items(value: Any, *, separators: Iterable[str] = _LIST_SEPARATORS, json_arrays: bool = True,
                bullets: bool = True) -> list[str]:
    """The raw items of a list answer, as written (no case folding): the one rule for what makes a list.

    - a list, tuple or set: its items (`str()` of what is not text), None items dropped;
    - text holding a JSON array, or a JSON string that holds one (`json_arrays`): its items; a one-line
      bracketed list that is not JSON ("[a, b]", "['a', 'b']") is read without its brackets;
    - text on several lines: its non-blank lines;
    - a single line: split on the first of `separators` it holds (";" before ","), and a joining "and "
      before the last item ("a, b, and c") dropped. Pass `separators=()` where a line is one item (a command's
      output), or leave out a separator that a gold item itself holds (then splitting would be ambiguous).
    Markdown bullets ("- ", "* ", "1. ") are removed when every item carries one (`bullets`; a command's output
    keeps them). Items are stripped of
    surrounding white space; empty items are dropped. None gives [].
    """
    if value is None:
        return []
    raw: list[Any]
    if isinstance(value, (list, tuple, set, frozenset)):
        raw = [item for item in value if item is not None]
    elif isinstance(value, str):
        text = fold_unicode(value)
        decoded = _decoded_array(text) if json_arrays else None
        if decoded is None and json_arrays and _BRACKETED.fullmatch(text.strip()):
            text = text.strip()[1:-1]  # "[a, b]": a list whose items lost their JSON quotes
        if decoded is not None:
            raw = [item for item in decoded if item is not None]
        elif "\n" in text.strip() or "\r" in text.strip():
            raw = text.splitlines()
        else:
            raw = [text]
            for separator in separators:
                if separator in text:
                    raw = text.split(separator)
                    if len(raw) > 1 and raw[-1].strip().startswith("and "):
                        raw[-1] = raw[-1].strip()[len("and "):]
                    break
    else:
        raw = [value]
    items = [(item if isinstance(item, str) else json.dumps(item) if isinstance(item, (list, dict)) else str(item))
             for item in raw]
    items = [item.strip() for item in items if item.strip()]
    if bullets and items and all(_BULLET.match(item) for item in items):
        items = [_BULLET.sub("", item, count=1).strip() for item in items]
    return [item for item in items if item]


def parse_list(value: Any, *, separators: Iterable[str] = _LIST_SEPARATORS) -> list[str]:
    """The items of a list answer (`split_items`), each read with `normalize_text`, empty items dropped.

    Accepts a list, tuple or set; text holding a JSON array (or a JSON-encoded one); or text split by
    newlines, else semicolons, else commas. A scalar is a one-item list; None is the empty list.
    """
    cleaned = (normalize_text(item) for item in split_items(value, separators=separators))
    return [item for item in cleaned if item]


def list_separators(gold: Any) -> tuple[str, ...]:
    """The separators a single-line answer may be split on for this gold: those no gold item holds."""
    items = split_items(gold)
    return tuple(separator for separator in _LIST_SEPARATORS if not any(separator in item for item in items))


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
    A single line of `got` is split on a separator only when no gold item holds it (`list_separators`).
    """
    got_keys = [_item_key(item) for item in parse_list(got, separators=list_separators(gold))]
    gold_keys = [_item_key(item) for item in parse_list(gold)]
    if ordered:
        return got_keys == gold_keys
    return Counter(got_keys) == Counter(gold_keys)


# --- options --------------------------------------------------------------------------------------------

OPTION_LETTERS = string.ascii_uppercase
# "b", "(b)", "b)", "answer: b", "the answer is b", "option (b)", "final answer: b"
_LETTER_ONLY = re.compile(
    r"^(?:(?:the\s+)?(?:final\s+|correct\s+)?(?:answer|option|choice)\s*(?:is\s*)?[:=-]?\s*)?"
    r"[(\[]?([a-z])[)\]]?$"
)
# "b. simple goiter", "(b) simple goiter", "b) simple goiter", "b: simple goiter"
_LETTER_AND_TEXT = re.compile(r"^[(\[]?([a-z])(?:[.):\]]|\s+-)\s*(.+)$")
_MARKUP = re.compile(r"[*_`#]+")
_LEADING_LETTER = re.compile(
    r"^(?:(?:the\s+)?(?:final\s+|correct\s+)?(?:answer|option|choice)\s*(?:is\s*)?[:=-]?\s*)?[(\[]?([a-z])[)\]]?"
    r"\s*[(\[,;:]"
)
_OPTION_WORD = re.compile(r"[^\W_]+(?:[.,][^\W_]+)*")
# Words too common to pick an option alone ("of" is in many options' text).
_FILLER_WORDS = frozenset({
    "a", "an", "and", "as", "at", "by", "for", "from", "in", "is", "of", "on", "the", "to", "with", "class",
    "type", "stage", "grade", "option", "answer",
})


# British and American spellings of medical words read as one ("hyperkalaemia" is "hyperkalemia", "oedema" is
# "edema", "diarrhoea" is "diarrhea"): both sides of a comparison are folded, so no option is lost or gained.
_SPELLING_FOLDS = (
    (re.compile(r"(?<=[^\W\d_])ae(?=[^\W\d_])"), "e"),  # haem-, -aemia, anaesth-, paediatric, leukaemia
    (re.compile(r"(?<![^\W\d_])oe(?=[^\W\d_aeiou])"), "e"),  # oedema, oesophagus, oestrogen
    (re.compile(r"(?<=[^\W\d_])oea(?![^\W\d_])"), "ea"),  # diarrhoea, gonorrhoea
    # Plurals read as their singular ("fluoroquinolones", "ACE inhibitors"): -ies as -y, and a final -s after
    # four or more letters, except -ss, -us, -is (class, status, sepsis); short words (yes, has, does) stay.
    (re.compile(r"(?<![\w])([^\W\d_]{2,})ies(?![\w])"), r"\1y"),
    (re.compile(r"(?<![\w])([^\W\d_]{3,}[^\W\d_sui])s(?![\w])"), r"\1"),
    (re.compile(r"(?<![\w])qtc(?![\w])"), "qt"),  # "QTc prolongation" is "QT prolongation"
    (re.compile(r"(?<![\w])anti-(?=[^\W\d_])"), "anti"),  # "anti-seizure" is "antiseizure"
    # British drug names for the same substance (the International Nonproprietary Name and the US one).
    (re.compile(r"(?<![\w])noradrenaline(?![\w])"), "norepinephrine"),
    (re.compile(r"(?<![\w])adrenaline(?![\w])"), "epinephrine"),
    (re.compile(r"(?<![\w])paracetamol(?![\w])"), "acetaminophen"),
)


def option_key(text: Any) -> str:
    """The comparable form of an option's text (and of a submission): `normalize_text`, markup removed, British
    medical spellings folded to American ones and plurals to singulars (`_SPELLING_FOLDS`)."""
    key = normalize_text(_MARKUP.sub(" ", normalize_text(text)))
    for pattern, replacement in _SPELLING_FOLDS:
        key = pattern.sub(replacement, key)
    return key


def named_options(text: str, keys: Sequence[str]) -> set[int]:
    """Indices of the options whose text occurs in `text` as whole words, ignoring an occurrence that lies
    inside a longer option's occurrence ("beta blocker" inside "beta blocker with alpha blockade")."""
    spans: list[tuple[int, int, int]] = []
    for index, key in enumerate(keys):
        if not key:
            continue
        pattern = (r"(?<!\w)" if key[0].isalnum() else "") + re.escape(key) + (r"(?!\w)" if key[-1].isalnum() else "")
        spans.extend((match.start(), match.end(), index) for match in re.finditer(pattern, text))
    named = set()
    for start, end, index in spans:
        inside_longer = any(other != index and o_start <= start and end <= o_end and (o_end - o_start) > (end - start)
                            for o_start, o_end, other in spans)
        if not inside_longer:
            named.add(index)
    return named


def _telling(word: str, keys: Sequence[str]) -> bool:
    """Whether `word` can pick an option: not filler, or a single letter that is a word of some option's text
    (the "a" of "Child-Pugh class A" is that option's mark, not an article)."""
    return word not in _FILLER_WORDS or (len(word) == 1 and any(word in _OPTION_WORD.findall(key) for key in keys))


def _part_words(text: str) -> list[str]:
    """The words of `text` for the part rule: a hyphenated token with a digit (a code such as "33914-3" or
    "718-7") is one word, so a fragment of a code ("3", "718") is no part of it; other tokens split as
    `_OPTION_WORD` splits them ("child-pugh" gives "child", "pugh")."""
    words: list[str] = []
    for token in text.split():
        bare = token.strip(_EDGE_PUNCTUATION + "()[]")
        if any(character.isdigit() for character in bare) and "-" in bare.strip("-"):
            words.append(bare)
        else:
            words.extend(_OPTION_WORD.findall(token))
    return words


def _by_part(text: str, keys: Sequence[str]) -> int | None:
    """The one option whose words include every word of `text` ("class b" and "child-pugh b" are parts of
    "child-pugh class b"), when `text` has a telling word (`_telling`) and no other option holds all its words.
    Filler words that no option holds ("the", "a" before "fluoroquinolone") are left out first. A code's
    fragment is no part of it (`_part_words`)."""
    key_words = [set(_part_words(key)) for key in keys]
    owned = set().union(*key_words) if key_words else set()
    words = [word for word in _part_words(text) if word not in _FILLER_WORDS or word in owned]
    if not words or not any(_telling(word, keys) for word in words):
        return None
    holding = [index for index, held in enumerate(key_words) if set(words) <= held]
    return holding[0] if len(holding) == 1 else None


def _words_and_code_stems(key: str) -> set[str]:
    """An option's words, and the stem of each code among them ("g40" of "g40.909"): a stem names that code's
    option as much as a word does ("I10/G40" names two codes)."""
    words = set(_OPTION_WORD.findall(key))
    return words | {re.split(r"[.-]", word)[0] for word in words if any(c.isdigit() for c in word)}


def _by_text(text: str, keys: Sequence[str], question: str) -> int | None:
    exact = [index for index, key in enumerate(keys) if key == text]
    if len(exact) == 1:
        return exact[0]
    if exact:
        return None  # two options read the same: no way to tell which was meant
    named = named_options(text, keys)
    if not named:
        return _by_part(text, keys)
    if len(named) != 1:
        return None
    chosen = next(iter(named))
    # The rest of the sentence may not name another option by a part of it ("within the usual range, below"):
    # a word that another option holds and the chosen one does not makes it a hedge. Filler words do not count,
    # except a single letter ("class B or A"), which is all that tells "class A" from "class B".
    rest = set(_OPTION_WORD.findall(text)) - set(_OPTION_WORD.findall(keys[chosen]))
    rest = {word for word in rest if word not in _FILLER_WORDS or len(word) == 1}
    if any(rest & _words_and_code_stems(key) for index, key in enumerate(keys) if index != chosen):
        return None
    # An option the question itself names cannot be chosen by a sentence that contains it: echoing the question
    # back would choose it. Its letter or its exact text still can.
    if question and named & named_options(question, keys):
        return None
    return named.pop()


_BRACKETED = re.compile(r"\(([^()]*)\)|\[([^\[\]]*)\]")


def _without_working(text: str, keys: Sequence[str], letters: str) -> str:
    """`text` less its working: bracketed parts and comma- or semicolon-separated clauses that name no option
    ("child-pugh b (7 points)", "class b, score 7" give "child-pugh b", "class b"). A part that holds a letter of
    the options, or a word that some option holds and not every option does, may name an option: it stays."""
    shared = set.intersection(*(set(_OPTION_WORD.findall(key)) for key in keys)) if keys else set()
    owned = {word for key in keys for word in _OPTION_WORD.findall(key)} - shared

    def names_nothing(part: str) -> bool:
        words = _OPTION_WORD.findall(part)
        return not any(word in owned or (len(word) == 1 and word in letters) for word in words)

    text = _BRACKETED.sub(lambda match: " " if names_nothing(match.group(0)) else match.group(0), text)
    clauses = [clause.strip() for clause in re.split(r"[,;]", text)]
    kept = [clause for clause in clauses if clause and not names_nothing(clause)]
    return normalize_text(", ".join(kept))


def read_option(submission: Any, options: Sequence[str], question: str = "") -> int | None:
    """The position (in `options`, the order the agent saw, lettered A, B, ...) of the one option `submission`
    names, else None.

    Rules, in order: the exact text of an option (case, spacing, Unicode forms and markdown aside); a letter
    alone ("B", "(b)", "Answer: B"); a letter with text ("B. Simple goiter"), which must name the same option;
    a sentence containing exactly one option's text, unless `question` names that option too; a distinctive
    part of one option's text, every word of it in that option and not all in any other ("Class B" or
    "Child-Pugh B" for "Child-Pugh class B" beside "Child-Pugh class A"). When none of these reads it, the same
    rules on the text less its working (bracketed parts and comma clauses that name no option: "Child-Pugh B
    (7 points)"). A list, several letters, text naming two options ("A or B", "class A or B") or none, and empty
    text give None.
    """
    if isinstance(submission, bool) or submission is None or isinstance(submission, (list, tuple, dict, set)):
        return None
    text = option_key(submission)
    if not text:
        return None
    keys = [option_key(option) for option in options]
    question = option_key(question)
    chosen = _read_option_key(text, keys, question)
    if chosen is None:
        bare = _without_working(text, keys, OPTION_LETTERS[: len(options)].lower())
        if bare and bare != text:
            chosen = _read_option_key(bare, keys, question)
    return chosen


def _read_option_key(text: str, keys: Sequence[str], question: str) -> int | None:
    """`read_option`'s rules on a submission already read with `option_key`."""
    exact = [index for index, key in enumerate(keys) if key == text]
    if exact:
        return exact[0] if len(exact) == 1 else None
    letters = OPTION_LETTERS[: len(keys)].lower()
    letter = _LETTER_ONLY.match(text)
    if letter:
        return letters.index(letter.group(1)) if letter.group(1) in letters else None
    combined = _LETTER_AND_TEXT.match(text)
    if combined and combined.group(1) in letters:
        chosen = letters.index(combined.group(1))
        return chosen if _by_text(option_key(combined.group(2)), keys, question) == chosen else None
    by_text = _by_text(text, keys, question)
    # A leading letter before a bracket, comma or colon ("D (bleeding)", "answer D, bleeding") must agree with
    # the text it comes with; "A biguanide" (an article) is not such a letter.
    leading = _LEADING_LETTER.match(text)
    if by_text is not None and leading and leading.group(1) in letters and letters.index(leading.group(1)) != by_text:
        return None
    return by_text


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


# --- answer contracts -----------------------------------------------------------------------------------

# The JSON schema of `submit`'s `answer` for each shape of answer a task can ask for. The env puts the task's
# one into the `submit` schema it shows (`ToolEnv.answer_schema`); the verifiers still read every unambiguous
# spelling (a list sent as text, a number as a string), so the schema guides a model and never fails it.
ANSWER_SCHEMAS: dict[str, dict[str, Any]] = {
    "list": {"type": "array", "items": {"type": "string"},
             "description": "The answer: a JSON array of strings, one item each (any order unless the task says)."},
    "number": {"type": "number", "description": "The answer: one number, without a unit."},
    "quantity": {"type": "string",
                 "description": 'The answer: one number followed by its unit, for example "93 mL/min/1.73m2".'},
    "text": {"type": "string", "description": "The answer: one short text."},
    "option": {"type": "string",
               "description": "The answer: one option, by its letter, its full text or a part only it holds."},
    "yes_no": {"type": "string", "enum": ["yes", "no"], "description": "The answer: yes or no."},
    "none": {"type": "null", "description": "No answer: this task is graded on the changes you made."},
}


def answer_schema(kind: str) -> dict[str, Any]:
    """A copy of the JSON schema of an answer of `kind` (a key of `ANSWER_SCHEMAS`).

    Raises:
        ValueError: for an unknown kind, naming the known ones.
    """
    if kind not in ANSWER_SCHEMAS:
        raise ValueError(f"unknown answer kind {kind!r}; use one of {', '.join(ANSWER_SCHEMAS)}")
    copied: dict[str, Any] = json.loads(json.dumps(ANSWER_SCHEMAS[kind]))
    return copied


# --- units ----------------------------------------------------------------------------------------------

_SUPERSCRIPT_DIGITS = "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207b\u207a"
_SUPERSCRIPT_TABLE = str.maketrans(_SUPERSCRIPT_DIGITS, "0123456789-+")
_SUPERSCRIPT_RUN = re.compile(f"[{_SUPERSCRIPT_DIGITS}]+")
# One spelling per unit factor (a part between "/"), keyed by its case-folded, space-free form. The value is
# the UCUM code, case-folded. Only spellings of the *same* unit meet here: mEq/L and mmol/L, or mg/dL and
# mmol/L, stay apart (converting between them is a domain's job, `agentgym_fhir.units`).
_UNIT_FACTORS: dict[str, str] = {
    "cel": "cel", "°c": "cel", "degc": "cel", "degreesc": "cel", "celsius": "cel", "degreescelsius": "cel",
    "[degf]": "[degf]", "°f": "[degf]", "degf": "[degf]", "degreesf": "[degf]", "fahrenheit": "[degf]",
    "[lb_av]": "[lb_av]", "lb": "[lb_av]", "lbs": "[lb_av]", "pound": "[lb_av]", "pounds": "[lb_av]",
    "[oz_av]": "[oz_av]", "oz": "[oz_av]", "ounce": "[oz_av]", "ounces": "[oz_av]",
    "[in_i]": "[in_i]", "in": "[in_i]", "inch": "[in_i]", "inches": "[in_i]",
    "[ft_i]": "[ft_i]", "ft": "[ft_i]", "foot": "[ft_i]", "feet": "[ft_i]",
    "mm[hg]": "mm[hg]", "mmhg": "mm[hg]", "cm[h2o]": "cm[h2o]", "cmh2o": "cm[h2o]",
    "[iu]": "[iu]", "iu": "[iu]", "[iu]s": "[iu]", "ius": "[iu]",
    "ug": "ug", "mcg": "ug", "microgram": "ug", "micrograms": "ug",
    "mg": "mg", "milligram": "mg", "milligrams": "mg", "g": "g", "gram": "g", "grams": "g",
    "kg": "kg", "kilogram": "kg", "kilograms": "kg", "kgs": "kg",
    "l": "l", "liter": "l", "litre": "l", "liters": "l", "litres": "l",
    "ml": "ml", "milliliter": "ml", "millilitre": "ml", "milliliters": "ml", "millilitres": "ml", "cc": "ml",
    "m": "m", "meter": "m", "metre": "m", "meters": "m", "metres": "m",
    "cm": "cm", "centimeter": "cm", "centimetre": "cm", "centimeters": "cm", "centimetres": "cm",
    "s": "s", "sec": "s", "second": "s", "seconds": "s", "min": "min", "minute": "min", "minutes": "min",
    "h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h", "d": "d", "day": "d", "days": "d",
    "wk": "wk", "week": "wk", "weeks": "wk", "mo": "mo", "month": "mo", "months": "mo",
    "a": "a", "yr": "a", "yrs": "a", "year": "a", "years": "a",
    "%": "%", "percent": "%", "pct": "%",
    "m2": "m2", "sqm": "m2",
}
# Words that name what is counted, not a unit: "beats/min" and "{beats}/min" are UCUM's "/min".
_COUNTED = {"beat", "beats", "breath", "breaths", "cell", "cells", "count", "counts"}
_WHOLE_UNITS = {"bpm": "/min", "k/ul": "10*3/ul", "thou/ul": "10*3/ul", "1": "", "{score}": "", "score": ""}


def _fold_factor(factor: str) -> str:
    if factor.startswith("{") and factor.endswith("}") and not any(c.isdigit() for c in factor):
        return ""  # a UCUM annotation such as {cells} carries no meaning
    factor = re.sub(r"\{([^{}]*)\}", lambda match: match.group(1).replace("_", ""), factor)
    if factor in _COUNTED:
        return ""
    return _UNIT_FACTORS.get(factor, factor)


def normalize_unit(value: Any) -> str:
    """The comparable form of a unit: two spellings of one unit give the same text, different units differ.

    Read as the same unit: the UCUM code and its common display ("Cel" and "°C", "[lb_av]" and "lb",
    "mm[Hg]" and "mmHg", "ug" and "mcg"); case and spacing ("mg/dL", "MG / DL"); Unicode superscripts and
    carets ("m²", "m^2", "m2"); powers of ten ("10*9/L", "10^9/L", "×10⁹/L", "x10e9/L"); UCUM annotations
    ("mL/min/{1.73_m2}", "mL/min/1.73m2", "mL/min/1.73 m²", "mL/min per 1.73 m2"; "{cells}/uL" is "/uL");
    counted things ("beats/min", "bpm", "/min"). Units are not converted: "mEq/L" and "mmol/L" differ.
    None and "" give "" (no unit), as do UCUM's unity "1" and a bare annotation ("{score}").
    """
    if value is None:
        return ""
    raw = value if isinstance(value, str) else str(value)
    # Superscripts first: NFKC alone would turn "10⁹" into "109".
    raw = _SUPERSCRIPT_RUN.sub(lambda match: "^" + match.group(0).translate(_SUPERSCRIPT_TABLE), raw)
    text = fold_unicode(raw).casefold().replace("\u03bc", "u").replace("\u00b5", "u")
    text = re.sub(r"\s+per\s+", "/", text.strip())
    text = re.sub(r"\s+", "", text).strip(".,;:!?\"'`")
    while text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    text = re.sub(r"^[x\u00d7*\u00b7]+(?=10)", "", text)  # "×10^9/L" is 10^9/L
    text = re.sub(r"(?<![\d.])10(?:\^|\*|e)([-+]?\d+)", r"10*\1", text)  # 10^9, 10e9 -> UCUM's 10*9
    text = re.sub(r"(?<=[a-z\]])\^([-+]?\d+)", r"\1", text)  # m^2 -> m2
    if text in _WHOLE_UNITS:
        return _WHOLE_UNITS[text]
    factors = [_fold_factor(factor) for factor in text.split("/")]
    if len(factors) > 1 and factors[0] == "1":
        factors[0] = ""  # "1/min" is "/min"
    joined = "/".join(factors)
    return _WHOLE_UNITS.get(joined, joined)


def same_unit(got: Any, gold: Any) -> bool:
    """Whether `got` and `gold` spell the same unit (`normalize_unit`)."""
    return normalize_unit(got) == normalize_unit(gold)


def split_quantity(value: Any) -> tuple[float, str] | None:
    """(number, unit text) of a quantity answer, or None when it holds no number.

    Accepts a number (unit ""), a mapping with "value" and "unit" or "code" (a FHIR Quantity), or text: the
    first number is the value and everything after it, edge punctuation aside, is the unit ("93 mL/min/1.73m2"
    gives (93.0, "mL/min/1.73m2"); "7.2%" gives (7.2, "%")). Words before the number may not hold another
    number. A hedge keeps its second candidate in the unit ("3 or 4 mg" gives (3.0, "or 4 mg")), so comparing
    the unit with `same_unit` refuses it.
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, numbers.Real):
        number = float(value)
        return (number, "") if math.isfinite(number) else None
    if isinstance(value, Mapping):
        amount = parse_number(value.get("value"))
        unit = value.get("unit") or value.get("code") or ""
        return None if amount is None else (amount, str(unit))
    if not isinstance(value, str):
        return None
    text = fold_unicode(value)
    match = _NUMBER.search(text)
    if match is None:
        return None
    try:
        number = float(match.group(0).replace(",", ""))
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    return number, text[match.end():].strip().strip(".,;:!?")
