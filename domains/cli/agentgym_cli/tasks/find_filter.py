"""Find and filter files: by name, size, content, modification time, type, and awkward names."""

from __future__ import annotations

import random

from agentgym_cli.data.fixtures import BASE_TIME, Fixture
from agentgym_cli.tasks.base import TaskSpec, set_test, shell

FAMILY = "find_filter"


def specs(fixture: Fixture, rng: random.Random) -> list[TaskSpec]:
    """Three find-and-filter tasks on `fixture`."""
    made: list[TaskSpec] = []
    for template in rng.sample(["extension", "size", "content", "symlinks", "mtime", "spaces"], 3):
        if template == "extension":
            root, ext = rng.choice([("project", "py"), ("project", "md"), ("project", "sh"), ("logs", "log"),
                                    ("downloads", "txt")])
            expected = [e.path for e in fixture.files("" if root == "." else root + "/") if e.path.endswith("." + ext)]
            where = "anywhere in the workspace" if root == "." else f"under `{root}/`"
            made.append(TaskSpec(FAMILY, template, f"List every file {where} whose name ends in `.{ext}` (files in "
                                 "hidden folders count too).", [shell(f"find {root} -type f -name '*.{ext}' | sort")],
                                 answer_kind="lines", expected_answer=expected, check_state=False,
                                 difficulty="easy"))
        elif template == "size":
            sizes = sorted({len(e.data) for e in fixture.files("logs/old/")})
            limit = rng.choice(sizes[:-1] or sizes) + 1  # below the largest rotated log: which ones pass varies
            expected = [e.path for e in fixture.files("logs/") if len(e.data) > limit]
            made.append(TaskSpec(FAMILY, template, f"Which files under `logs/` are larger than {limit} bytes?",
                                 [shell(f"find logs -type f -size +{limit}c | sort")], answer_kind="lines",
                                 expected_answer=expected, check_state=False))
        elif template == "content":
            texts = [e for e in fixture.files("downloads/") if b"keyword-" in e.data]
            word = rng.choice(texts).data.decode().split("keyword-")[1].split()[0]
            expected = [e.path for e in fixture.files("downloads/") if f"keyword-{word}".encode() in e.data]
            made.append(TaskSpec(
                FAMILY, template,
                f"Write the paths of all files under `downloads/` (recursively, hidden files included) whose content "
                f"contains the text `keyword-{word}` to a new file `found.txt` in the workspace root, one path per "
                "line, relative to the workspace root.",
                [shell(f"grep -rl 'keyword-{word}' downloads | sort > found.txt")],
                ignore=["found.txt"], tests=[set_test("found.txt lists the matching files", "cat found.txt",
                                                      expected)]))
        elif template == "symlinks":
            expected = sorted(e.path for e in fixture.entries if e.kind == "symlink")
            made.append(TaskSpec(FAMILY, template, "List every symbolic link in the workspace (do not follow links "
                                 "into folders).", [shell("find . -type l | sort")], answer_kind="lines",
                                 expected_answer=expected, check_state=False, difficulty="easy"))
        elif template == "mtime":
            old = fixture.files("logs/old/")
            days = sorted(int(e.path[-6:-4]) for e in old)
            day = rng.randint(days[0] + 1, days[-1]) if days[-1] > days[0] else days[0]  # the cut-off splits them
            cutoff = BASE_TIME - (32 - day) * 86400 + 12 * 3600  # 2023-12-DD 12:00: no file sits exactly on it
            expected = [e.path for e in old if e.mtime < cutoff]
            stamp = f"2023-12-{day:02d} 12:00"
            made.append(TaskSpec(FAMILY, template, f"Which files in `logs/old/` were last modified before "
                                 f"{stamp} UTC?", [shell(f"find logs/old -type f ! -newermt '{stamp}' | sort")],
                                 answer_kind="lines", expected_answer=expected, check_state=False,
                                 difficulty="medium"))
        else:
            expected = [e.path for e in fixture.files() if " " in e.path.rsplit("/", 1)[-1]]
            made.append(TaskSpec(FAMILY, template, "List every file in the workspace whose name contains a space.",
                                 [shell("find . -type f -name '* *' | sort")], answer_kind="lines",
                                 expected_answer=expected, check_state=False))
    return made
