"""drug_interaction: "What is the main risk of giving warfarin with aspirin?" The options are the five kinds of
risk in the interactions table, which has four pairs of each, so no kind is right more often than chance."""

from __future__ import annotations

from agentgym_knowledge.clinical_facts import INTERACTION_EFFECTS, INTERACTIONS

from agentgym import Task

from .common import arrange, choice_task, difficulty_of, split_of

FAMILY = "drug_interaction"
WORK = {"lookups": 1}  # the steps it needs (common.difficulty_of)


def generate(seed: int = 0) -> list[Task]:
    tasks = []
    for ordinal, pair in enumerate(INTERACTIONS):
        # The pair is named in either order, from the seed, so the first drug named is no clue to the risk.
        first, second = (pair.first, pair.second) if (ordinal + seed) % 2 == 0 else (pair.second, pair.first)
        key = f"interaction:{pair.first}+{pair.second}"
        distractors = [effect for effect in INTERACTION_EFFECTS if effect != pair.effect]
        tasks.append(choice_task(
            task_id=f"clinical-{FAMILY}-{pair.first.replace(' ', '-')}-{pair.second.replace(' ', '-')}",
            family=FAMILY, split=split_of(key),
            question=f"A patient takes {first} and is started on {second}. What is the main risk of this "
                     "combination?",
            options=arrange(pair.effect, distractors, ordinal + seed), answer=pair.effect,
            difficulty=difficulty_of(WORK), metadata={"fact": key, "work": WORK},
        ))
    return tasks
