"""code_lookup: "Which ICD-10-CM code is atrial fibrillation?" / "Which LOINC code is serum potassium?"

Four codes of the same system, every one of them the gold of another task, so no code is favoured. Only codes
that the `lookup_code` tool knows are asked or offered (playtest #63-#65: a gold it could not find steered a
model that trusts the tool away from the right option).
"""

from __future__ import annotations

import random

from agentgym_fhir import codes
from agentgym_knowledge.clinical_facts import CONDITIONS, LABS

from agentgym import Task

from .common import arrange, choice_task, difficulty_of, slug, split_of

FAMILY = "code_lookup"
WORK = {"lookups": 1}  # the steps it needs (common.difficulty_of)
OPTIONS = 4


def _known(system: str, code: str) -> bool:
    """Whether `lookup_code` finds `code` in `system` (the tool the question is answered with)."""
    try:
        codes.lookup(system.lower().replace("-", ""), code)
    except codes.CodeLookupError:
        return False
    return True


def generate(seed: int = 0) -> list[Task]:
    rng = random.Random(f"{FAMILY}:{seed}")
    facts = [fact for fact in ([("ICD-10-CM", c.name, c.icd10, f"condition:{c.icd10}") for c in CONDITIONS]
                               + [("LOINC", lab.name, lab.loinc, f"lab:{lab.loinc}") for lab in LABS])
             if _known(fact[0], fact[2])]
    tasks = []
    for ordinal, (system, name, code, key) in enumerate(facts):
        pool = sorted({other for other_system, _, other, _ in facts if other_system == system and other != code})
        distractors = rng.sample(pool, OPTIONS - 1)
        tasks.append(choice_task(
            task_id=f"clinical-{FAMILY}-{system.lower()}-{slug(name)}", family=FAMILY, split=split_of(key),
            question=f"Which {system} code stands for {name}?",
            options=arrange(code, distractors, ordinal), answer=code, difficulty=difficulty_of(WORK),
            metadata={"fact": key, "system": system, "work": WORK},
        ))
    return tasks
