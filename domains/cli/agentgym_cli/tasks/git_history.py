"""Git history work on `history/` (see data/history.py): find the commit that first broke the check.

The question asks for the oldest commit at which `python3 check.py` fails. Its traps are measured on the
fixture's facts: HEAD passes in some workspaces (the break was repaired later, so there is no bad end to start a
bisection from), and in some a commit broke the module for one commit earlier on (a binary search between the
first commit and a failing one lands on the later break).
"""

from __future__ import annotations

import random

from agentgym_cli.data.fixtures import Fixture
from agentgym_cli.tasks.base import TaskSpec, shell

FAMILY = "git_history"


def bisect(passes: list[bool]) -> int:
    """Where a binary search lands that takes the first commit as good and the newest failing one as bad."""
    good, bad = 0, max(index for index, ok in enumerate(passes) if not ok)
    while bad - good > 1:
        middle = (good + bad) // 2
        if passes[middle]:
            good = middle
        else:
            bad = middle
    return bad


def specs(fixture: Fixture, rng: random.Random) -> list[TaskSpec]:
    """The first-failing-commit question on `fixture`'s history."""
    ids = list(fixture.facts["history_ids"])  # type: ignore[call-overload]
    passes = list(fixture.facts["history_passes"])  # type: ignore[call-overload]
    first = int(fixture.facts["history_first_failing"])  # type: ignore[call-overload]
    traps = []
    if passes[-1]:
        traps.append("HEAD passes: the break was repaired later")
    if bisect(passes) != first:
        traps.append("a binary search lands on a later break")
    command = ("cd history && for c in $(git rev-list --reverse main); do git checkout -q \"$c\" && "
               "if ! python3 -B check.py >/dev/null 2>&1; then found=$c; break; fi; done; git checkout -q main; "
               "cd ..; echo \"$found\"")
    return [TaskSpec(FAMILY, "first_failing", f"The git repository `history/` has {len(ids)} commits on `main`. "
                     "Which is the oldest commit of `main` at which `python3 check.py` (run in `history/`) exits "
                     "with a non-zero status? Submit its full 40-character commit hash.", [shell(command)], answer_kind="text", expected_answer=ids[first],
                     check_state=False, traps=traps, inputs=len(ids))]
