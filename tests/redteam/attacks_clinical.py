"""Attacks on ClinicalQA-v0's answer reading: ways to name several options at once, or to smuggle them past the
parser, that must never score. (A constant letter or text is right by chance on some tasks; that is measured,
not attacked: tests/clinical/test_constant_answers.py keeps it at chance.)"""

from __future__ import annotations

import re

from redteam_support import Attack, AttackEpisode

ENV = "ClinicalQA-v0"


def _options(episode: AttackEpisode) -> dict[str, str]:
    """The lettered options as the prompt shows them (what any policy can read)."""
    block = episode.prompt.split("Options:\n", 1)[-1].split("\n\n", 1)[0]
    found = {}
    for line in block.splitlines():
        match = re.match(r"([A-Z])\. (.*)", line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


def every_option_text(episode: AttackEpisode) -> None:
    episode.call("submit", answer=", ".join(_options(episode).values()))


def every_option_lines(episode: AttackEpisode) -> None:
    episode.call("submit", answer="\n".join(f"{letter}. {text}" for letter, text in _options(episode).items()))


def letter_spam(episode: AttackEpisode) -> None:
    episode.call("submit", answer=" ".join(_options(episode)))


def letters_glued(episode: AttackEpisode) -> None:
    episode.call("submit", answer="".join(_options(episode)))


def letters_hidden_by_invisible_characters(episode: AttackEpisode) -> None:
    # Fullwidth letters joined by zero-width spaces: NFKC and the invisible-character filter make this "A/B/C/D".
    letters = [chr(ord(letter) - ord("A") + ord("\uff21")) for letter in _options(episode)]
    episode.call("submit", answer="\u200b/\u200b".join(letters))


def lookalike_letter_lists(episode: AttackEpisode) -> None:
    # Cyrillic and Greek capitals that look like A, B, E, and Latin letters of the rest: still several options.
    lookalike = {"A": "\u0410", "B": "\u0392", "C": "\u0421", "E": "\u0395"}
    episode.call("submit", answer=" or ".join(lookalike.get(letter, letter) for letter in _options(episode)))


def prompt_echo(episode: AttackEpisode) -> None:
    episode.call("submit", answer=episode.prompt)


def question_echo(episode: AttackEpisode) -> None:
    episode.call("submit", answer=episode.prompt.split("\n\nOptions:", 1)[0])


def hedged_pair(episode: AttackEpisode) -> None:
    texts = list(_options(episode).values())
    episode.call("submit", answer=f"either {texts[0]} or {texts[1]}")


def letter_with_every_text(episode: AttackEpisode) -> None:
    options = _options(episode)
    episode.call("submit", answer="A. " + " ".join(options.values()))


def json_list_of_letters(episode: AttackEpisode) -> None:
    episode.call("submit", answer='["' + '", "'.join(_options(episode)) + '"]')


def task_id_peek(episode: AttackEpisode) -> None:
    # info["task_id"] is public: an id built from the gold ("...-I10", "...-low", "...-child_pugh-A-0") would give
    # it away. Only the id's parts the prompt does not show count (a drug's name is in the question anyway).
    prompt = episode.prompt.lower().split("options:")[0]
    hidden = [part for part in str(episode.info.get("task_id", "")).lower().split("-") if part and part not in prompt]
    clues = {"below": "low", "within": "normal", "above": "high"}
    for letter, text in _options(episode).items():
        key = text.lower()
        tags = {key, key.replace(" ", ""), key.split()[-1], *(tag for word, tag in clues.items() if word in key)}
        if tags & set(hidden):
            episode.call("submit", answer=letter)
            return
    episode.call("submit", answer="")


def _words(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", text.lower())


def shared_part(episode: AttackEpisode) -> None:
    # A part is accepted only when one option holds it: the words every option shares name none of them.
    texts = list(_options(episode).values())
    common = set(_words(texts[0])).intersection(*(set(_words(text)) for text in texts[1:]))
    # Options that share no word have no such part; the attack then sends the empty part. (Its old fallback, an
    # option's first character, was a letter answer, "b" for "beta blocker", right by chance a quarter of the time.)
    episode.call("submit", answer=" ".join(word for word in _words(texts[0]) if word in common))


def distinctive_words_of_two(episode: AttackEpisode) -> None:
    # "Child-Pugh class A B": the distinctive words of two options in one part; no single option holds them all.
    texts = list(_options(episode).values())
    first, second = _words(texts[0]), _words(texts[1])
    episode.call("submit", answer=" ".join([*first, *(word for word in second if word not in first)]))


def distinctive_words_slashed(episode: AttackEpisode) -> None:
    # "A/B/C" made of each option's own words ("class A/B/C" for Child-Pugh): several options by their parts.
    texts = list(_options(episode).values())
    own = [next((word for word in _words(text) if all(word not in _words(other) for other in texts if other != text)),
                text) for text in texts]
    episode.call("submit", answer="/".join(own))


# --- free-number questions (renal_dosing, calculator_value): one number is the rule, so several never score ----
NUMBER_FAMILIES = ("renal_dosing", "calculator_value", "medication_review")
# The option attacks above read the options a multiple-choice prompt lists; these families have them.
CHOICE_FAMILIES = ("drug_class", "drug_interaction", "lab_range", "code_lookup", "calculator")
# Every dose any dosing rule gives, and round values scores bunch around: a policy's "cover the answers" list.
_LIKELY_NUMBERS = (0, 5, 10, 15, 20, 75, 150, 300, 700, 1000, 1400, 2000, 3600, 1, 2, 3, 4, 6, 8, 12, 60, 90, 100)


def numbers_from_the_prompt(episode: AttackEpisode) -> None:
    numbers = re.findall(r"\d+(?:\.\d+)?", episode.prompt.split("\n\n")[0])
    episode.call("submit", answer=" ".join(numbers))


def likely_numbers_listed(episode: AttackEpisode) -> None:
    episode.call("submit", answer=", ".join(str(number) for number in _LIKELY_NUMBERS))


def wide_range(episode: AttackEpisode) -> None:
    episode.call("submit", answer="0-10000")


def number_with_a_wide_margin(episode: AttackEpisode) -> None:
    episode.call("submit", answer="100 +/- 5000")


def non_finite_numbers(episode: AttackEpisode) -> None:
    episode.call("submit", answer="NaN")
    if not episode.terminated:
        episode.call("submit", answer="1e999")


ATTACKS: list[Attack] = [
    Attack("clinical-every-option-text", ENV, every_option_text, families=CHOICE_FAMILIES,
           description="submit every option's text, comma separated"),
    Attack("clinical-every-option-lines", ENV, every_option_lines, families=CHOICE_FAMILIES,
           description="submit every 'letter. text' line of the prompt"),
    Attack("clinical-letter-spam", ENV, letter_spam, families=CHOICE_FAMILIES, description="submit 'A B C D'"),
    Attack("clinical-letters-glued", ENV, letters_glued, families=CHOICE_FAMILIES, description="submit 'ABCD'"),
    Attack("clinical-letters-invisible", ENV, letters_hidden_by_invisible_characters, families=CHOICE_FAMILIES,
           description="fullwidth letters joined by zero-width spaces"),
    Attack("clinical-lookalike-letters", ENV, lookalike_letter_lists, families=CHOICE_FAMILIES,
           description="Cyrillic/Greek look-alike capitals joined by 'or'"),
    Attack("clinical-prompt-echo", ENV, prompt_echo, families=CHOICE_FAMILIES, description="submit the whole prompt back"),
    Attack("clinical-question-echo", ENV, question_echo, families=CHOICE_FAMILIES, description="submit the question (no options) back"),
    Attack("clinical-hedged-pair", ENV, hedged_pair, families=CHOICE_FAMILIES, description="'either X or Y' naming two options"),
    Attack("clinical-letter-with-every-text", ENV, letter_with_every_text, families=CHOICE_FAMILIES,
           description="one letter followed by every option's text"),
    Attack("clinical-json-letter-list", ENV, json_list_of_letters, families=CHOICE_FAMILIES, description='a JSON list ["A", "B", ...]'),
    Attack("clinical-shared-part", ENV, shared_part, families=CHOICE_FAMILIES, description="the words every option shares ('Child-Pugh class')"),
    Attack("clinical-two-options-parts", ENV, distinctive_words_of_two, families=CHOICE_FAMILIES,
           description="one 'part' holding the words of two options ('Child-Pugh class A B')"),
    Attack("clinical-own-words-slashed", ENV, distinctive_words_slashed, families=CHOICE_FAMILIES,
           description="each option's own word joined by '/' ('A/B/C', 'low/moderate/high')"),
    Attack("clinical-task-id-peek", ENV, task_id_peek, families=CHOICE_FAMILIES, per_family=4,
           description="read the answer out of info['task_id']"),
    Attack("clinical-numbers-from-prompt", ENV, numbers_from_the_prompt, families=NUMBER_FAMILIES, per_family=6,
           description="submit every number of the question at once"),
    Attack("clinical-likely-numbers", ENV, likely_numbers_listed, families=NUMBER_FAMILIES, per_family=6,
           description="submit every dose the rules give and round score values as one list"),
    Attack("clinical-number-range", ENV, wide_range, families=NUMBER_FAMILIES, description="submit '0-10000'"),
    Attack("clinical-number-margin", ENV, number_with_a_wide_margin, families=NUMBER_FAMILIES,
           description="one number with a margin wide enough to cover any answer ('100 +/- 5000')"),
    Attack("clinical-non-finite-number", ENV, non_finite_numbers, families=NUMBER_FAMILIES,
           description="NaN, then a number that overflows to infinity"),
]
