"""ClinicalQA-v0's generated task families, over this project's own clinical facts; `generate` makes them all.

Families (one module each): drug_class, drug_interaction, lab_range, code_lookup, calculator. Every one is
balanced so that no constant answer (an option's text, a letter) is right more often than chance, and every
fact lands in one split only (`common.split_of`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from agentgym import Task, TaskSet

from . import calculator, code_lookup, drug_class, drug_interaction, lab_range

FAMILIES = {module.FAMILY: module for module in (drug_class, drug_interaction, lab_range, code_lookup, calculator)}


def generate(seed: int = 0, families: Sequence[str] | None = None, **options: object) -> list[Task]:
    """Every generated task for `seed` (or only `families`). Deterministic: same seed, same tasks."""
    if options:
        raise TypeError(f"unknown options {sorted(options)}; ClinicalQA-v0 generation takes seed and families")
    chosen = list(families or FAMILIES)
    unknown = [name for name in chosen if name not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown families {unknown}; known: {', '.join(FAMILIES)}")
    return [task for name in chosen for task in FAMILIES[name].generate(seed)]


@functools.lru_cache(maxsize=8)
def default_tasks(seed: int = 0) -> TaskSet:
    """The generated tasks for `seed`, made once per process and shared by every env."""
    return TaskSet(generate(seed))
