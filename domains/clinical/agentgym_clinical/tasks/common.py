"""What every ClinicalQA-v0 task shares: the task shape, the prompt, and the split of a fact.

A multiple-choice task stores its options in a canonical order (`metadata["options"]`) and its gold option's
text as `answer`; the env shows the options in a seeded order per episode and the solution submits the gold
text, so the oracle is right whatever the order. `metadata["contexts"]` holds the question's own passages, if
any. A free-number task (`number_task`) stores the gold number as `answer`, the accepted unit spellings and the
tolerance in its metadata, and states all three in its prompt (`number_contract`).

Difficulty is measured from the work a task needs, not from its family (`difficulty_of`): the steps are the
tool calls of its solution before `submit`, the unit conversions and the threshold comparisons the question
needs, each counted once.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

from agentgym import Task, VerifierSpec

from ..verify import LETTERS, named_options, option_key, within_tolerance

DOMAIN = "clinical"
TEST_SHARE = 0.3
INSTRUCTION = ('Answer with submit(answer="...") naming one option: its letter as listed ("B"), its full text, or a '
               "part of its text that only that option holds. An answer that names more than one option, or none, "
               "scores 0.")


def split_of(fact: str) -> str:
    """"train" or "test" for a fact, from a hash of its key alone: every task built on one fact, whatever the
    seed, lands in the same split, so train and test never share a fact."""
    digest = hashlib.sha256(f"clinical-split:{fact}".encode()).digest()
    return "test" if int.from_bytes(digest[:8], "big") / 2**64 < TEST_SHARE else "train"


def slug(text: str) -> str:
    """`text` as an id part: lower case, runs of other characters made one "-"."""
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-")


def question_digest(question: str) -> str:
    """A short id part made from the question alone. Task ids are public (`info["task_id"]`), so they are built
    only from what the prompt already shows, never from the answer."""
    return hashlib.sha256(question.encode()).hexdigest()[:12]


def render_prompt(question: str, options: Sequence[str], contexts: Sequence[str] = (), *,
                  show_contexts: bool = True) -> str:
    """The text the agent reads: the question, its context passages (when shown), the lettered options."""
    parts = [question.strip()]
    if contexts and show_contexts:
        parts.append("Context:\n" + "\n".join(f"[{number}] {text.strip()}" for number, text in
                                              enumerate(contexts, start=1)))
    elif contexts:
        parts.append(f"This question comes with {len(contexts)} context passages; read them with "
                     "search_knowledge.")
    parts.append("Options:\n" + "\n".join(f"{LETTERS[index]}. {option}" for index, option in enumerate(options)))
    parts.append(INSTRUCTION)
    return "\n\n".join(parts)


def choice_task(*, task_id: str, family: str, split: str, question: str, options: Sequence[str], answer: str,
                contexts: Sequence[str] = (), solution_prefix: Sequence[dict[str, Any]] = (),
                difficulty: str = "medium", metadata: dict[str, Any] | None = None,
                question_may_name_options: bool = False) -> Task:
    """A multiple-choice (or yes/no/maybe) task whose gold is the option with text `answer`.

    A generated question may name no option (`ValueError` otherwise). Imported benchmarks pass
    `question_may_name_options=True`: real exam questions name options (a drug the patient took), and the
    importer screens the cases where that gives the answer away (`data.benchmarks`)."""
    if answer not in options:
        raise ValueError(f"{task_id}: the answer {answer!r} is not one of the options {list(options)!r}")
    if len(set(options)) != len(options):
        raise ValueError(f"{task_id}: two options are the same: {list(options)!r}")
    named = set() if question_may_name_options else named_options(option_key(question),
                                                                  [option_key(option) for option in options])
    if named:
        raise ValueError(f"{task_id}: the question names option {options[min(named)]!r}; reword it")
    return Task(
        id=task_id, domain=DOMAIN, family=family, split=split,
        prompt=render_prompt(question, options, contexts),
        answer=answer,
        solution=[*solution_prefix, {"name": "submit", "arguments": {"answer": answer}}],
        verifier=VerifierSpec(name="clinical_choice"),
        metadata={"question": question, "options": list(options), "contexts": list(contexts), **(metadata or {})},
        difficulty=difficulty,
    )


def arrange(gold: str, distractors: Sequence[str], position: int) -> list[str]:
    """The options in their stored order: the distractors, with the gold inserted at `position` modulo the
    option count. Families pass the task's ordinal, so the stored gold position cycles through every letter."""
    options = list(distractors)
    options.insert(position % (len(options) + 1), gold)
    return options


# ----------------------------------------------------------------------------------------- difficulty
HARD_STEPS = 4


STEP_KINDS = ("tool_calls", "lookups", "conversions", "thresholds", "edges", "arithmetic")


def difficulty_of(work: dict[str, int]) -> str:
    """The task's level from the work it needs (`work`, counts by kind): `tool_calls` of the solution before
    `submit` (calculate, lookup_code), `lookups` of a knowledge-base fact, unit `conversions`, `thresholds`
    compared, `edges` (a value exactly on a cut-off, where the rule's wording decides), `arithmetic` done by
    hand; `distractors` (values the question gives that the answer must not use) are recorded, not counted.
    "hard": at least `HARD_STEPS` steps that join a knowledge-base lookup, a calculation and a threshold.
    "medium": 2 or more steps. "easy": one step (a single lookup)."""
    steps = sum(work.get(kind, 0) for kind in STEP_KINDS)
    calculated = work.get("tool_calls", 0) + work.get("arithmetic", 0) > 0
    joined = work.get("lookups", 0) > 0 and calculated and work.get("thresholds", 0) > 0
    if steps >= HARD_STEPS and joined:
        return "hard"
    return "medium" if steps >= 2 else "easy"


# ----------------------------------------------------------------------------------------- number answers
def number_contract(unit: str, decimals: int, tolerance: dict[str, float], *, grams: bool = False) -> str:
    """The answer contract of a free-number question: shape, unit, rounding and the tolerance the verifier
    applies (`verify.clinical_number`), in the words the prompt shows."""
    rounding = "a whole number" if decimals == 0 else f"{decimals} decimal place{'s' if decimals > 1 else ''}"
    allowances = []
    if tolerance.get("rel"):
        allowances.append(f"{tolerance['rel'] * 100:g}% of the exact value")
    if tolerance.get("abs"):
        allowances.append(f"{tolerance['abs']:g} {unit}".rstrip())
    larger = " (whichever is larger)" if len(allowances) > 1 else ""
    allowed = (f"The exact value rounded so, and answers within {' or '.join(allowances)}{larger}, score 1"
               if allowances else "Only the exact value scores 1")
    also = "; g also works, 1 g being 1,000 mg" if grams else ""
    unit_part = (f"in {unit}, rounded to {rounding}: the number alone or followed by its unit ({unit}{also}), "
                 "nothing else" if unit else f"rounded to {rounding}: the number alone")
    return (f'Answer with submit(answer=...) giving one number {unit_part}. {allowed}; an answer with more than '
            "one number, another unit or no number scores 0.")


def number_task(*, task_id: str, family: str, split: str, question: str, answer: float, unit: str,
                units: Sequence[str], decimals: int, tolerance: dict[str, float], work: dict[str, int],
                solution_prefix: Sequence[dict[str, Any]] = (), metadata: dict[str, Any] | None = None,
                grams: bool = False) -> Task:
    """A free-number task: `question` then the answer contract; the gold is `answer` rounded to `decimals`
    (checked to lie within `tolerance` of `answer`, so the oracle's submission scores 1)."""
    gold = round(float(answer), decimals)
    if not within_tolerance(gold, float(answer), tolerance):
        raise ValueError(f"{task_id}: the rounded gold {gold} is outside the tolerance {tolerance} of {answer}")
    submitted: float | int = int(gold) if decimals == 0 else gold
    return Task(
        id=task_id, domain=DOMAIN, family=family, split=split,
        prompt=f"{question.strip()}\n\n{number_contract(unit, decimals, tolerance, grams=grams)}",
        answer=submitted,
        solution=[*solution_prefix, {"name": "submit", "arguments": {"answer": submitted}}],
        verifier=VerifierSpec(name="clinical_number"),
        metadata={"question": question, "units": [unit, *units] if unit else list(units),
                  "tolerance": dict(tolerance), "decimals": decimals, "work": dict(work),
                  "exact": float(answer), "answer_schema": "number", "grams_read_as_mg": grams, **(metadata or {})},
        difficulty=difficulty_of(work),
    )
