"""drug_class: "Which class of medicine is metformin?" Four classes, the gold from the drug's facts passage.

Distractors are other drugs' classes that share no telling word with the gold ("statin" is never a
distractor of "statin (HMG-CoA reductase inhibitor)"), so exactly one option is right.
"""

from __future__ import annotations

import random
import re

from agentgym_knowledge.clinical_facts import DRUGS

from agentgym import Task

from .common import arrange, choice_task, difficulty_of, split_of

FAMILY = "drug_class"
WORK = {"lookups": 1}  # the steps it needs (common.difficulty_of)
OPTIONS = 4
# Words many classes share; sharing only these does not make two classes the same.
_GENERIC = frozenset({"inhibitor", "antagonist", "agonist", "blocker", "receptor", "drug", "antibiotic", "with",
                      "and", "of", "the", "a", "diuretic", "anticoagulant", "oral", "acting", "inhaled",
                      "long", "short", "for", "ii", "type"})


def _telling_words(drug_class: str) -> set[str]:
    return {word for word in re.findall(r"[a-z0-9]+", drug_class.lower()) if word not in _GENERIC}


def generate(seed: int = 0) -> list[Task]:
    rng = random.Random(f"{FAMILY}:{seed}")
    classes = sorted({drug.drug_class for drug in DRUGS})
    tasks = []
    # A drug whose name shares a word with its class ("heparin", "unfractionated heparin anticoagulant") is not
    # asked: the question would point at its answer by that word.
    drugs = [drug for drug in DRUGS if not set(re.findall(r"[a-z0-9]+", drug.name.lower())) & _telling_words(drug.drug_class)]
    for ordinal, drug in enumerate(drugs):
        words = _telling_words(drug.drug_class)
        pool = [other for other in classes if other != drug.drug_class and not (_telling_words(other) & words)]
        distractors = rng.sample(pool, OPTIONS - 1)
        tasks.append(choice_task(
            task_id=f"clinical-{FAMILY}-{drug.name.replace(' ', '-')}", family=FAMILY,
            split=split_of(f"drug:{drug.name}"),
            question=f"To which group of medicines does {drug.name} belong?",
            options=arrange(drug.drug_class, distractors, ordinal), answer=drug.drug_class, difficulty=difficulty_of(WORK),
            metadata={"fact": f"drug:{drug.name}", "work": WORK},
        ))
    return tasks
