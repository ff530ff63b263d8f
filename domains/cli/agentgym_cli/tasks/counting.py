"""Counting and aggregation questions: files, lines, bytes, folders, JSON records."""

from __future__ import annotations

import json
import random

from agentgym_cli.data.fixtures import Fixture
from agentgym_cli.tasks.base import TaskSpec, shell

FAMILY = "counting"


def specs(fixture: Fixture, rng: random.Random) -> list[TaskSpec]:
    """Three counting questions on `fixture`."""
    users = json.loads(fixture.text("data/users.json"))
    all_dirs = {e.path for e in fixture.entries if e.kind == "dir" and e.path.startswith("project/")}
    for entry in fixture.entries:  # the parents of every entry, empty folders' included
        parts = entry.path.split("/")[:-1]
        if parts[:1] == ["project"]:
            all_dirs |= {"/".join(parts[:depth]) for depth in range(2, len(parts) + 1)}
    made: list[TaskSpec] = []
    for template in rng.sample(["files", "python_lines", "log_bytes", "countries", "active_users", "folders"], 3):
        if template == "files":
            sizes = sorted({len(e.data) for e in fixture.files("project/")})
            limit = rng.choice(sizes[:-1] or sizes)  # below the largest: the count varies with the limit
            made.append(TaskSpec(FAMILY, template, "How many regular files are there under `project/`, hidden ones "
                                 f"included, that are larger than {limit} bytes?",
                                 [shell(f"find project -type f -size +{limit}c | wc -l")], answer_kind="number",
                                 expected_answer=sum(len(e.data) > limit for e in fixture.files("project/")),
                                 check_state=False, difficulty="easy"))
        elif template == "python_lines":
            lines = sum(e.data.count(b"\n") for e in fixture.files("project/src/") if e.path.endswith(".py"))
            made.append(TaskSpec(FAMILY, template, "How many lines do the `.py` files under `project/src/` have in "
                                 "total?", [shell("find project/src -name '*.py' -exec cat {} + | wc -l")],
                                 answer_kind="number", expected_answer=lines, check_state=False))
        elif template == "log_bytes":
            made.append(TaskSpec(FAMILY, template, "What is the total size in bytes of all regular files under "
                                 "`logs/` (recursively)?",
                                 [shell("find logs -type f -printf '%s\\n' | awk '{s += $1} END {print s}'")],
                                 answer_kind="number", expected_answer=sum(len(e.data) for e in fixture.files("logs/")),
                                 check_state=False))
        elif template == "countries":
            made.append(TaskSpec(FAMILY, template, "How many distinct countries appear in `data/users.json`?",
                                 [shell("grep -o '\"country\": \"[A-Z]*\"' data/users.json | sort -u | wc -l")],
                                 answer_kind="number", expected_answer=len({u["country"] for u in users}),
                                 check_state=False))
        elif template == "active_users":
            age = rng.randint(20, 60)
            count = sum(1 for u in users if u["active"] and u["age"] > age)
            made.append(TaskSpec(FAMILY, template, f"How many users in `data/users.json` are active and older than "
                                 f"{age}?",
                                 [shell("python3 -c \"import json; print(sum(1 for u in json.load(open("
                                        f"'data/users.json')) if u['active'] and u['age'] > {age}))\"")],
                                 answer_kind="number", expected_answer=count, check_state=False, difficulty="medium"))
        else:
            made.append(TaskSpec(FAMILY, template, "How many folders are there below `project/` (not counting "
                                 "`project/` itself)?", [shell("find project -mindepth 1 -type d | wc -l")],
                                 answer_kind="number", expected_answer=len(all_dirs), check_state=False))
    return made
