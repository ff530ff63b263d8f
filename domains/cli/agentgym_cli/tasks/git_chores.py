"""Git repository chores: commit, branch, discard changes, untrack files, and questions about history."""

from __future__ import annotations

import random
from collections import Counter

from agentgym_cli.data.fixtures import WORDS, Fixture
from agentgym_cli.tasks.base import TaskSpec, shell

FAMILY = "git_chores"


def _test(name: str, *conditions: str) -> dict[str, str]:
    body = "".join(f"{condition} || {{ echo {name!r}': failed: '{condition!r}; exit 1; }}\n"
                   for condition in conditions)
    return {"name": name, "script": "cd repo\n" + body}


def specs(fixture: Fixture, rng: random.Random) -> list[TaskSpec]:
    """Three git tasks on `fixture`'s repository (`repo/`, a modified app.py and an untracked TODO.txt)."""
    head = str(fixture.facts["repo_head"])
    commits = list(fixture.facts["repo_commits"])  # type: ignore[call-overload]
    made: list[TaskSpec] = []
    for template in rng.sample(["commit_all", "branch", "discard", "top_author", "count_commits", "untrack"], 4):
        if len(made) == 3:
            break
        if template == "commit_all":
            message = f"Finish {rng.choice(WORDS)} work for release 1.{rng.randint(0, 40)}"
            made.append(TaskSpec(FAMILY, template, f"In the git repository `repo/`, commit all pending changes "
                                 f"(modified and new files) in one commit with the message `{message}`.",
                                 [shell(f"git -C repo add -A && git -C repo commit -q -m '{message}'")],
                                 tests=[_test("everything is committed", '[ -z "$(git status --porcelain)" ]',
                                              f'[ "$(git log -1 --format=%s)" = "{message}" ]',
                                              f'[ "$(git rev-parse HEAD~1)" = {head} ]',
                                              "git ls-files --error-unmatch TODO.txt >/dev/null")]))
        elif template == "branch":
            branch = f"feature/{rng.choice(WORDS)}-{rng.randint(1, 99)}"
            made.append(TaskSpec(FAMILY, template, f"In `repo/`, create a branch named `{branch}` at the current "
                                 "commit and switch to it, keeping the uncommitted changes as they are.",
                                 [shell(f"git -C repo switch -q -c {branch}")],
                                 tests=[_test("on the new branch", f'[ "$(git rev-parse --abbrev-ref HEAD)" = '
                                                                   f'{branch} ]',
                                              f'[ "$(git rev-parse HEAD)" = {head} ]',
                                              "! git diff --quiet -- app.py")], difficulty="easy"))
        elif template == "discard":
            made.append(TaskSpec(FAMILY, template, "In `repo/`, discard the uncommitted changes to `app.py` so that "
                                 "it matches the last commit again. Leave the untracked `TODO.txt` alone.",
                                 [shell("git -C repo checkout -- app.py")],
                                 tests=[_test("app.py is clean", "git diff --quiet -- app.py", "[ -f TODO.txt ]")],
                                 difficulty="easy"))
        elif template == "top_author":
            ranking = Counter(author for author, _ in commits).most_common()
            if len(ranking) > 1 and ranking[0][1] == ranking[1][1]:
                continue  # a tie has no single answer
            made.append(TaskSpec(FAMILY, template, "Who authored the most commits in `repo/`? Answer with the "
                                 "author's name.",
                                 [shell("git -C repo log --format=%an | sort | uniq -c | sort -k1,1nr | head -1 | "
                                        "sed 's/^ *[0-9]* //'")], answer_kind="text", expected_answer=ranking[0][0],
                                 check_state=False))
        elif template == "count_commits":
            made.append(TaskSpec(FAMILY, template, "How many commits does the current branch of `repo/` have?",
                                 [shell("git -C repo rev-list --count HEAD")], answer_kind="number",
                                 expected_answer=len(commits), check_state=False, difficulty="easy"))
        else:
            made.append(TaskSpec(FAMILY, template, "In `repo/`, stop tracking `debug.log` without deleting the file, "
                                 "add the line `*.log` to `repo/.gitignore` (create it), and commit exactly these two "
                                 "changes with the message `Ignore logs`. Do not commit the other pending changes.",
                                 [shell("printf '*.log\\n' >> repo/.gitignore && git -C repo rm -q --cached "
                                        "debug.log && git -C repo add .gitignore && git -C repo commit -q -m "
                                        "'Ignore logs'")], ignore=["repo/.gitignore"],
                                 tests=[_test("debug.log untracked and ignored",
                                              "! git ls-files --error-unmatch debug.log 2>/dev/null",
                                              "[ -f debug.log ]", "grep -qx '[*].log' .gitignore",
                                              "git ls-files --error-unmatch .gitignore >/dev/null",
                                              '[ "$(git log -1 --format=%s)" = "Ignore logs" ]',
                                              f'[ "$(git rev-parse HEAD~1)" = {head} ]',
                                              "! git diff --quiet -- app.py")], difficulty="medium"))
    return made
