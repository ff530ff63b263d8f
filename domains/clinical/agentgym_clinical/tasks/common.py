"""What every ClinicalQA-v0 task shares: the task shape, the prompt, and the split of a fact.

A task stores its options in a canonical order (`metadata["options"]`) and its gold option's text as
`answer`; the env shows the options in a seeded order per episode and the solution submits the gold text,
so the oracle is right whatever the order. `metadata["contexts"]` holds the question's own passages, if any.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

from agentgym import Task, VerifierSpec

from ..verify import LETTERS, named_options, option_key

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
