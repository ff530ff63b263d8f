"""`ClinicalQaEnv` (registered as ClinicalQA-v0): clinical multiple-choice and yes/no/maybe questions.

Each episode shows the question's options in an order drawn from the episode's seed. The gold option's place
is the task's position in its family plus a per-reset random offset, modulo the option count: for any one
task, every letter is equally likely across seeds, and across a family's tasks at any one seed, every letter is
gold equally often, so a policy can learn no letter prior. The verifier reads the answer in the order shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentgym import Score, Task, TaskSet, ToolEnv
from agentgym.answers import answer_schema
from agentgym.diagnosis import TurnRecord

from . import verify as _verify  # noqa: F401  (registers the clinical_choice verifier)
from .diagnosis import clinical_labels
from .tasks import default_tasks
from .tasks.common import render_prompt
from .tools import TASK_KB, ClinicalEpisode, clinical_tools

SYSTEM_PROMPT = (
    "You answer clinical questions. Look facts up with search_knowledge, compute clinical scores with "
    "calculate, and find what medical codes mean with lookup_code. Finish with submit(answer) in the form the "
    "question asks: for a multiple-choice question the letter of one option or that option's text; for a "
    "number, one number in the unit asked. Naming more than one option, or more than one number, scores 0."
)
CONTEXT_MODES = ("prompt", "search")


class ClinicalQaEnv(ToolEnv):
    """Clinical question answering with a knowledge base, clinical calculators and code lookup.

    Args:
        tasks: A task file or list; default: the generated tasks for `seed`.
        kb: The knowledge base `search_knowledge` searches: None for the default clinical one, the path of a
            knowledge base (`agentgym kb build`), or "task" for the question's own context passages.
        shuffle: Show the options in a seeded order per episode (default). False keeps the stored order,
            for reproducing a benchmark's published letters.
        context: "prompt" shows a question's context passages in the prompt, "search" only through
            search_knowledge; default "search" with kb="task", else "prompt".
        seed: Seed of the generated task set.
        **kwargs: `ToolEnv` options (split, families, max_turns, reward_weights, ...).
    """

    def __init__(self, tasks: TaskSet | Sequence[Task] | str | Path | None = None, *, kb: Any = None,
                 shuffle: bool = True, context: str | None = None, seed: int = 0, **kwargs: Any) -> None:
        context = context or ("search" if isinstance(kb, str) and kb == TASK_KB else "prompt")
        if context not in CONTEXT_MODES:
            raise ValueError(f"context must be one of {', '.join(CONTEXT_MODES)}, got {context!r}")
        self.shuffle = shuffle
        self.show_contexts = context == "prompt"
        kwargs.setdefault("system_prompt", SYSTEM_PROMPT)
        super().__init__(default_tasks(seed) if tasks is None else tasks, clinical_tools(kb), **kwargs)
        for task in self.task_set:
            choice = len(task.metadata.get("options", [])) >= 2 and task.verifier.name == "clinical_choice"
            number = task.verifier.name in ("clinical_number", "clinical_numbers") and "tolerance" in task.metadata
            if not (choice or number):
                raise ValueError(f"task {task.id} is not a ClinicalQA-v0 task (it needs metadata.options and the "
                                 "clinical_choice verifier, or metadata.tolerance and the clinical_number "
                                 "verifier); make tasks with `agentgym tasks generate` or import")
        self._ordinal: dict[str, int] = {}
        seen: dict[str, int] = {}
        for task in self.task_set:
            self._ordinal[task.id] = seen.get(task.family, 0)
            seen[task.family] = self._ordinal[task.id] + 1

    def _choose_task(self, options: dict[str, Any]) -> Task:
        task = super()._choose_task(options)
        if task.verifier.name != "clinical_choice":
            return task  # a free-number question: its prompt is shown as generated
        choices = list(task.metadata["options"])
        count = len(choices)
        order = list(range(count))
        if self.shuffle:
            gold = choices.index(task.answer) if task.answer in choices else 0
            others = [index for index in order if index != gold]
            offset = int(self.np_random.integers(count))
            self.np_random.shuffle(others)
            place = (offset + self._ordinal.get(task.id, 0)) % count
            order = [*others[:place], gold, *others[place:]]
        prompt = render_prompt(task.metadata.get("question", task.prompt), [choices[i] for i in order],
                               task.metadata.get("contexts", []), show_contexts=self.show_contexts)
        return task.model_copy(update={"prompt": prompt, "metadata": {**task.metadata, "episode_order": order}})

    def answer_schema(self, task: Task) -> dict[str, Any] | None:
        """`submit`'s answer typed for the question shown: a number for a free-number task, an option's letter
        or text (a string) for a multiple-choice one."""
        declared = task.metadata.get("answer_schema")
        if isinstance(declared, dict):
            return declared  # a list of numbers (medication_review)
        return answer_schema("number" if task.verifier.name == "clinical_number" else "option")

    def begin_episode(self, task: Task) -> ClinicalEpisode:
        return ClinicalEpisode(contexts=tuple(task.metadata.get("contexts", [])),
                               extra={"output_limit": self.output_limit})

    def feedback_hints(self, call: Any, outcome: Any, view: Any) -> list[Any]:
        """Closest code system, calculator and calculator input in errors of lookup_code and calculate
        (docs/feedback.md); the answer options are never hinted at."""
        from agentgym_fhir.feedback import calculator_and_code_hints

        return calculator_and_code_hints(call, outcome)

    def diagnose_extra(self, turns: Sequence[TurnRecord], score: Score) -> list[str]:
        """ClinicalQA-v0's diagnosis labels (`agentgym_clinical.diagnosis`, docs/diagnosis.md)."""
        assert self.task is not None
        return clinical_labels(self.task, turns, score)


def make_env(**kwargs: Any) -> ClinicalQaEnv:
    """Factory for `gym.make("ClinicalQA-v0", ...)`; see `ClinicalQaEnv` for the arguments."""
    return ClinicalQaEnv(**kwargs)

