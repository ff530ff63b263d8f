"""Git history work on `history/` (see data/history.py): find the commit that first broke the check, and
restore a broken helper with one commit that changes nothing else.

The question asks for the oldest commit at which `python3 check.py` fails. Its traps are measured on the
fixture's facts: HEAD passes in some workspaces (the break was repaired later, so there is no bad end to start a
bisection from), and in some a commit broke the module for one commit earlier on (a binary search between the
first commit and a failing one lands on the later break).
"""

from __future__ import annotations

import hashlib
import random

from agentgym_cli.data.fixtures import Fixture
from agentgym_cli.data.history import FUNCTIONS
from agentgym_cli.tasks.base import TaskSpec, shell, write

FAMILY = "git_history"


# The gold: every commit's calc.py and check.py read by one `git cat-file --batch`, each check run in-process
# (a fresh module per commit). A few hundred milliseconds however long the history, so the gold stays far below
# the shell's time limit on a loaded machine (a checkout and a Python start per commit took 15-20 s there).
FIRST_FAILING = r"""
import contextlib, io, subprocess, sys, types
def git(*args, data=None):
    return subprocess.run(["git", "-C", "history", *args], input=data, capture_output=True, check=True).stdout
ids = git("rev-list", "--reverse", "main").decode().split()
out = git("cat-file", "--batch", data="".join(f"{c}:calc.py\n{c}:check.py\n" for c in ids).encode())
blobs, position = [], 0
while position < len(out):
    end = out.index(b"\n", position)
    size = int(out[position:end].split()[2])
    blobs.append(out[end + 1:end + 1 + size].decode())
    position = end + 2 + size
def passes(calc, check):
    module = types.ModuleType("calc")
    sys.modules["calc"] = module
    try:
        exec(compile(calc, "calc.py", "exec"), module.__dict__)
    except Exception:
        return False
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # check.py prints PASS or FAIL
            exec(compile(check, "check.py", "exec"), {"__name__": "__main__"})
    except SystemExit as stop:
        return stop.code in (None, 0)
    except Exception:
        return False
    return True
print(next(c for i, c in enumerate(ids) if not passes(blobs[2 * i], blobs[2 * i + 1])))
"""


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


def _restore(fixture: Fixture, ids: list[str], passes: list[bool]) -> TaskSpec | None:
    """Where HEAD still fails: restore the broken helper with one new commit, changing nothing else. Its traps:
    `git revert` of the breaking commit also drops that commit's note line, and checking out `calc.py` from
    before the break loses every later commit's notes; both leave another `calc.py` than the one asked for."""
    if passes[-1]:
        return None
    broken_at = len(passes) - next(index for index, ok in enumerate(reversed(passes)) if ok)
    head_text = fixture.text("history/calc.py")
    victims = [name for name, (_, bad, _) in FUNCTIONS.items() if bad in head_text]
    if len(victims) != 1:
        return None
    victim = victims[0]
    good, bad, _ = FUNCTIONS[victim]
    expected = head_text.replace(bad, good)
    digest = hashlib.sha256(expected.encode()).hexdigest()
    lines = expected.splitlines(keepends=True)
    reverted = "".join(line for line in lines if not line.endswith(f"({broken_at})\n"))
    before = "".join(line for line in lines if not (line.startswith("# ") and
                                                    int(line.rsplit("(", 1)[1].rstrip(")\n")) >= broken_at))
    shortcuts = {"git revert of the breaking commit also drops its note line": reverted,
                 "checking out calc.py from before the break loses the later notes": before}
    traps = [name for name, text in shortcuts.items() if text != expected]
    checks = (
        f'[ "$(git rev-parse HEAD~1)" = {ids[-1]} ] || {{ echo "HEAD is not one new commit on top of main"; exit 1; }}\n'
        '[ "$(git rev-parse --abbrev-ref HEAD)" = main ] || { echo "not on main"; exit 1; }\n'
        '[ -z "$(git status --porcelain --untracked-files=no)" ] || { echo "uncommitted changes"; exit 1; }\n'
        f'[ "$(git show HEAD:calc.py | sha256sum | cut -c1-64)" = {digest} ] || '
        '{ echo "calc.py is not the old one with the helper restored"; exit 1; }\n'
        'git diff --quiet HEAD~1 HEAD -- . ":(exclude)calc.py" || { echo "other files changed"; exit 1; }\n')
    return TaskSpec(FAMILY, "restore", f"In the git repository `history/`, commit {ids[broken_at]} broke the helper "
                    f"`{victim}` in `calc.py`, and `python3 check.py` has failed on `main` ever since. Add one new "
                    f"commit on top of `main` that restores `{victim}` to what it was before that commit and changes "
                    "nothing else, in `calc.py` or any other file: every other line, the later commits' ones "
                    "included, stays as it is on `main` now. Stay on `main`, history unchanged below the new commit.",
                    [write("history/calc.py", expected),
                     shell("git -C history -c user.name=Agent -c user.email=agent@example.org commit -q -am "
                           f"'Restore {victim}'")],
                    check_state=False, tests=[{"name": f"{victim} restored by one commit",
                                               "script": "cd history\n" + checks}],
                    traps=traps, inputs=len(ids))


def specs(fixture: Fixture, rng: random.Random) -> list[TaskSpec]:
    """The first-failing-commit question on `fixture`'s history, and the restore task where HEAD fails."""
    ids = list(fixture.facts["history_ids"])  # type: ignore[call-overload]
    passes = list(fixture.facts["history_passes"])  # type: ignore[call-overload]
    first = int(fixture.facts["history_first_failing"])  # type: ignore[call-overload]
    traps = []
    if passes[-1]:
        traps.append("HEAD passes: the break was repaired later")
    if bisect(passes) != first:
        traps.append("a binary search lands on a later break")
    command = "python3 - <<'AGENTGYM_GOLD'\n" + FIRST_FAILING + "AGENTGYM_GOLD"
    restore = _restore(fixture, ids, passes)
    return [*([restore] if restore is not None else []), TaskSpec(FAMILY, "first_failing", f"The git repository `history/` has {len(ids)} commits on `main`. "
                     "Which is the oldest commit of `main` at which `python3 check.py` (run in `history/`) exits "
                     "with a non-zero status? Submit its full 40-character commit hash.", [shell(command)], answer_kind="text", expected_answer=ids[first],
                     check_state=False, traps=traps, inputs=len(ids))]
