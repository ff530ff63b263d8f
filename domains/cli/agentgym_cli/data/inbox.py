"""An `incoming/` of awkwardly named files for the `awkward_files` family.

Names hold newlines, tabs, leading dashes, glob characters, quotes, backslashes, leading or trailing spaces and
non-ASCII letters; some files are hidden; a folder is named like a file (`old.log/`). Modification times sit
around a cut-off that varies per workspace, and at least two files sit exactly on it; sizes repeat, so "the
largest" can be a tie. Shortcuts that read `find` output line by line, compare times strictly, skip hidden files
or pass names starting with `-` to a command unprotected give other answers.
"""

from __future__ import annotations

import random

NAMES = ("notes.txt", "-rf.log", "--help.txt", "- draft.log", "line\nbreak.log", "two\nlines\n.txt", "*.log",
         "[backup].log", "it's.txt", 'say "hi".log', " leading.txt", "trailing.log ", "tab\there.txt",
         "ünïcode.log", ".hidden.log", ".profile.txt", "plain-1.log", "plain-2.log", "report final.txt",
         "a b c.log", "$HOME.txt", "back\\slash.log", "-n.txt", "-.log", "ends-with-dot.log.", "UPPER.LOG")
REPORTS = ("Q1 summary.txt", "Q2 summary.txt", "budget.csv", "forecast v2.csv", "minutes.md", "team notes.md",
           "audit.txt", "roadmap.md", "plan B.txt")
DAY = 86400


def build_inbox(rng: random.Random, base_time: int) -> tuple[list[tuple[str, bytes, int]], dict[str, object]]:
    """(path, bytes, mtime) of every file of the inbox, and its facts: the cut-off (epoch seconds)."""
    cutoff = base_time - rng.randint(5, 25) * DAY + rng.randint(0, 23) * 3600
    files: list[tuple[str, bytes, int]] = []
    sizes = [rng.randint(10, 3000) for _ in range(6)]  # few sizes: some files share one

    def body(size: int) -> bytes:
        return (f"{rng.getrandbits(32):08x} " * (size // 9 + 1)).encode()[:size]

    names = rng.sample(NAMES, rng.randint(16, 22))
    for required in ("line\nbreak.log", "-rf.log", ".hidden.log"):
        if required not in names:
            names.append(required)
    exact = set(rng.sample(names, 2))  # exactly on the cut-off
    for name in names:
        if name in exact:
            mtime = cutoff
        elif "\n" in name:
            mtime = cutoff + rng.randint(1, 72) * 3600  # after: a line-by-line count over-counts it
        else:
            mtime = cutoff + rng.choice((-1, 1)) * rng.randint(1, 96) * 3600 + rng.choice((0, 0, 1, -1))
        files.append((f"incoming/{name}", body(rng.choice(sizes)), mtime))
    for folder in ("incoming/old.log", "incoming/.cache", "incoming/nested/deeper"):
        for index in range(rng.randint(1, 3)):
            name = rng.choice(("part", "copy", "x")) + f"-{index}" + rng.choice((".log", ".txt", ".log"))
            files.append((f"{folder}/{name}", body(rng.choice(sizes)), cutoff + rng.randint(-72, 72) * 3600))
    report_sizes = [rng.randint(100, 5000) for _ in range(4)]
    if rng.random() < 0.6:
        report_sizes.append(max(report_sizes))  # a tie for the largest
    for name in rng.sample(REPORTS, rng.randint(4, 8)):
        files.append((f"incoming/reports/{name}", body(rng.choice(report_sizes)), cutoff - rng.randint(1, 9) * DAY))
    return files, {"inbox_cutoff": cutoff}
