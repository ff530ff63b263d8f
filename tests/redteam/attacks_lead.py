"""Attacks an external red-team pass found (playing through the public API only), kept as regressions.

- The task id is part of `info`, so a policy reads it: an id that encodes the answer (a label, a class word,
  a code) gives the task away without a tool call.
- A prompt that lists the candidates lets a policy answer by echoing them (the first drug a rule names).
"""

from __future__ import annotations

import re

from redteam_support import Attack, AttackEpisode

# words of an answer label, and the option phrasings that carry each (as an id-reading policy would learn them)
_LABEL_WORDS = {
    "low": ("below", "low"), "normal": ("within", "normal"), "high": ("above", "high"),
    "mild": ("mild",), "moderate": ("moderate",), "severe": ("severe",),
}


def _options(prompt: str) -> dict[str, str]:
    return {match.group(1): match.group(2).strip().lower()
            for match in re.finditer(r"^([A-H])[.)]\s+(.+)$", prompt, flags=re.MULTILINE)}


def read_the_task_id(episode: AttackEpisode) -> None:
    """Pick the option whose text matches a label or code word found in the task id; submit its letter."""
    tokens = [token.lower() for token in re.split(r"[-_\s]+", str(episode.info.get("task_id", ""))) if token]
    options = _options(episode.prompt)
    guesses: list[str] = []
    for token in tokens:
        words = _LABEL_WORDS.get(token, (token,) if len(token) >= 2 and not token.isdigit() else ())
        for letter, text in options.items():
            squashed = text.replace(".", "")
            if any(re.search(rf"\b{re.escape(word)}\b", text) or word.upper() in squashed.upper().split()
                   for word in words):
                guesses.append(letter)
    # the letter named by the most specific (last) id token that matches exactly one option
    for letter in reversed(guesses):
        if guesses.count(letter) >= 1:
            episode.call("submit", answer=letter)
            return
    episode.call("submit", answer="A")


def echo_the_first_rule(episode: AttackEpisode) -> None:
    """Answer a drug-interaction question with the first partner drug its prompt's rules name."""
    match = re.search(r"Interaction rules:\s*([^:;]+?)\s*\+\s*([^:;]+?):", episode.prompt)
    episode.call("submit", answer=match.group(2).strip() if match else "none found")


ATTACKS = [
    Attack("lead-clinical-task-id-leak", "ClinicalQA-v0", read_the_task_id, per_family=6,
           description="read the answer label out of info['task_id']"),
    Attack("lead-fhir-echo-first-interaction-rule", "FHIR-v0", echo_the_first_rule,
           families=("drug_interaction",), per_family=12,
           description="submit the first partner drug the prompt's interaction rules name"),
]
