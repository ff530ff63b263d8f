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
    """Pick the option that a label or code word of the task id names, and submit its letter.

    Only words the prompt does not show count (reading the prompt is the task, not a leak); when the id holds
    none, the attack submits nothing an option could match, so it wins only through a leak, never by luck.
    """
    prompt = episode.prompt.lower()
    tokens = [token.lower() for token in re.split(r"[-_\s]+", str(episode.info.get("task_id", ""))) if token]
    leaked = [token for token in tokens
              if token in _LABEL_WORDS or (re.fullmatch(r"[a-z]\d[\d.a-z]*", token) and token not in prompt)]
    options = _options(episode.prompt)
    for token in reversed(leaked):  # the most specific (last) word first
        words = _LABEL_WORDS.get(token, (token,))
        matching = [letter for letter, text in options.items()
                    if any(re.search(rf"\b{re.escape(word)}\b", text.replace(".", "")) for word in words)
                    or token.replace(".", "") in text.replace(".", "")]
        if len(matching) == 1:
            episode.call("submit", answer=matching[0])
            return
    episode.call("submit", answer="")


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
