"""ClinicalQA-v0's generated task families, over this project's own clinical facts; `generate` makes them all.

Families (one module each): drug_class, drug_interaction, lab_range, code_lookup, calculator (multiple choice),
renal_dosing and calculator_value (free numbers), medication_review (a list of numbers). Every one is balanced so that no constant answer (an option's
text, a letter, a number) is right more often than its share, and every fact or case lands in one split only
(`common.split_of`).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
from collections.abc import Sequence
from pathlib import Path

from agentgym import Task, TaskSet
from agentgym.tasks import TaskFileError, load_tasks, save_tasks

from . import (
    calculator,
    calculator_value,
    code_lookup,
    drug_class,
    drug_interaction,
    lab_range,
    medication_review,
    renal_dosing,
)

FAMILIES = {module.FAMILY: module for module in (drug_class, drug_interaction, lab_range, code_lookup, calculator,
                                                  renal_dosing, calculator_value, medication_review)}


def generate(seed: int = 0, families: Sequence[str] | None = None, **options: object) -> list[Task]:
    """Every generated task for `seed` (or only `families`). Deterministic: same seed, same tasks."""
    if options:
        raise TypeError(f"unknown options {sorted(options)}; ClinicalQA-v0 generation takes seed and families")
    chosen = list(families or FAMILIES)
    unknown = [name for name in chosen if name not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown families {unknown}; known: {', '.join(FAMILIES)}")
    return [task for name in chosen for task in FAMILIES[name].generate(seed)]


# Bump when generated task content changes in a way the hashed sources below do not show.
TASKS_VERSION = 2
# Modules whose code or tables make the tasks: a change to any of them makes a new cache key.
_MADE_FROM = ("agentgym_clinical.tasks", "agentgym_clinical.verify", "agentgym_knowledge.clinical_facts",
              "agentgym_fhir.calculators", "agentgym_fhir.vocab.labs", "agentgym_fhir.codes", "agentgym.tasks",
              "agentgym.answers")


def cache_key() -> str:
    """A hash of `TASKS_VERSION` and the source of every module the generated tasks are made from."""
    digest = hashlib.sha256(f"clinical-tasks:{TASKS_VERSION}".encode())
    sources = [Path(__file__).parent.glob("*.py")] + [[Path(importlib.import_module(name).__file__ or "")]
                                                      for name in _MADE_FROM[1:]]
    for path in sorted(path for group in sources for path in group):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:16]


@functools.lru_cache(maxsize=8)
def default_tasks(seed: int = 0) -> TaskSet:
    """The generated tasks for `seed`, made once per process and shared by every env.

    Generating takes 2-3 s (about 2,000 calculator runs to keep only cases no conversion factor decides);
    the tasks are cached as JSONL in the agentgym cache (`clinical/tasks-KEY-seedN.jsonl`, read in about
    0.4 s) and rebuilt when `cache_key()` changes."""
    from agentgym.cache import NotBuilt, building, cache_dir

    folder = cache_dir("clinical")
    path = folder / f"tasks-{cache_key()}-seed{seed}.jsonl"
    if path.exists():
        try:
            return TaskSet(load_tasks(path))
        except TaskFileError:
            path.unlink(missing_ok=True)  # a damaged file is made again below
    try:
        with building("the ClinicalQA-v0 task set", path, estimate="a few seconds"):
            tasks = generate(seed)
            try:
                save_tasks(tasks, path)
            except FileExistsError:  # another process is writing the same file: its copy will do next time
                pass
    except NotBuilt:  # a caller that wants no builds (`agentgym list`) still gets the tasks, in memory only
        return TaskSet(generate(seed))
    for stale in folder.glob(f"tasks-*-seed{seed}.jsonl"):
        if stale != path:
            stale.unlink(missing_ok=True)
    return TaskSet(tasks)
