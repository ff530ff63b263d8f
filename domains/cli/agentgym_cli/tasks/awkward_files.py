"""Awkward files (`incoming/`, see data/inbox.py): names with newlines or a leading `-`, times on the cut-off, ties.

Each task's traps are measured: the answer (or the set of files moved) a shortcut gives is computed and kept as a
trap when it differs from the gold: counting `find` output lines (a name with a newline counts twice), comparing
times strictly (files exactly on the cut-off), skipping hidden files, only the top level, dropping names that
start with `-` (a command takes them for options), stripping names, or taking the first of tied files.
"""

from __future__ import annotations

import datetime
import random
from typing import Any

from agentgym_cli.data.fixtures import Entry, Fixture
from agentgym_cli.tasks.base import TaskSpec, shell

FAMILY = "awkward_files"


def _stamp(epoch: int) -> str:
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _python(code: str) -> dict[str, Any]:
    return shell("python3 - <<'AGENTGYM_GOLD'\nimport os\n" + code + "AGENTGYM_GOLD")


def _name(entry: Entry) -> str:
    return entry.path.rsplit("/", 1)[-1]


def _hidden(entry: Entry) -> bool:
    return any(part.startswith(".") for part in entry.path.split("/")[1:])


def _count_since(fixture: Fixture, cutoff: int) -> TaskSpec:
    files = fixture.files("incoming/")
    gold = sum(1 for e in files if e.mtime >= cutoff)
    shortcuts = {
        "counts find's output lines (a name with a newline counts twice)":
            sum(1 + _name(e).count("\n") for e in files if e.mtime >= cutoff),
        "compares times strictly (files on the cut-off)": sum(1 for e in files if e.mtime > cutoff),
        "skips hidden files": sum(1 for e in files if e.mtime >= cutoff and not _hidden(e)),
        "only the top level": sum(1 for e in files if e.mtime >= cutoff and e.path.count("/") == 1),
    }
    stamp = _stamp(cutoff)
    return TaskSpec(FAMILY, "count_since", f"How many regular files under `incoming/` (recursively, hidden ones "
                    f"included) were last modified at or after {stamp} UTC? A file modified at exactly that "
                    "second counts.",
                    [_python(f"print(sum(1 for d, _, names in os.walk('incoming') for n in names if "
                             f"os.path.isfile(os.path.join(d, n)) and not os.path.islink(os.path.join(d, n)) and "
                             f"os.lstat(os.path.join(d, n)).st_mtime >= {cutoff}))\n")],
                    answer_kind="number", expected_answer=gold, check_state=False,
                    traps=[name for name, value in shortcuts.items() if value != gold], inputs=len(files))


def _suffix_bytes(fixture: Fixture, rng: random.Random) -> TaskSpec:
    files = fixture.files("incoming/")
    suffix = rng.choice((".log", ".txt"))
    sizes = sorted({len(e.data) for e in files})
    limit = rng.choice(sizes[: max(1, len(sizes) // 2)])

    def total(chosen: list[Entry]) -> int:
        return sum(len(e.data) for e in chosen if _name(e).endswith(suffix) and len(e.data) > limit)

    gold = total(files)
    shortcuts = {
        "skips hidden files": total([e for e in files if not _hidden(e)]),
        "only the top level": total([e for e in files if e.path.count("/") == 1]),
        "drops names starting with '-' (taken for options)": total([e for e in files
                                                                    if not _name(e).startswith("-")]),
        "strips spaces from names": sum(len(e.data) for e in files if _name(e).strip().endswith(suffix)
                                        and len(e.data) > limit),
        "counts sizes of at least the limit": sum(len(e.data) for e in files if _name(e).endswith(suffix)
                                                  and len(e.data) >= limit),
    }
    return TaskSpec(FAMILY, "suffix_bytes", f"What is the total size in bytes of the regular files under `incoming/` "
                    f"(recursively, hidden ones included) whose names end in `{suffix}` (exactly: case matters) and "
                    f"that are larger than {limit} bytes?",
                    [_python(f"print(sum(os.lstat(p).st_size for d, _, names in os.walk('incoming') for n in names "
                             f"for p in [os.path.join(d, n)] if n.endswith({suffix!r}) and os.path.isfile(p) and "
                             f"not os.path.islink(p) and os.lstat(p).st_size > {limit}))\n")],
                    answer_kind="number", expected_answer=gold, check_state=False,
                    traps=[name for name, value in shortcuts.items() if value != gold], inputs=len(files))


def _archive_before(fixture: Fixture, cutoff: int) -> TaskSpec | None:
    top = [e for e in fixture.files("incoming/") if e.path.count("/") == 1]
    gold = {e.path for e in top if e.mtime < cutoff}
    if not gold:
        return None  # nothing to move: doing nothing would be right
    shortcuts = {
        "moves files on the cut-off too": {e.path for e in top if e.mtime <= cutoff},
        "skips hidden files": {e.path for e in top if e.mtime < cutoff and not _hidden(e)},
        "drops names starting with '-' (taken for options)": {e.path for e in top if e.mtime < cutoff
                                                              and not _name(e).startswith("-")},
        "drops names with a newline (read line by line)": {e.path for e in top if e.mtime < cutoff
                                                           and "\n" not in _name(e)},
    }
    stamp = _stamp(cutoff)
    return TaskSpec(FAMILY, "archive_before", f"Move every regular file that sits directly in `incoming/` (hidden ones "
                    f"included, not those in its subfolders) and was last modified before {stamp} UTC into a new "
                    "folder `incoming/archive/`, keeping each file's name. Files modified at exactly that second, or "
                    "later, stay where they are; nothing else changes.",
                    [_python("os.makedirs('incoming/archive')\nfor n in sorted(os.listdir('incoming')):\n"
                             "    p = os.path.join('incoming', n)\n"
                             f"    if os.path.isfile(p) and not os.path.islink(p) and os.lstat(p).st_mtime < {cutoff}:\n"
                             "        os.rename(p, os.path.join('incoming/archive', n))\n")],
                    traps=[name for name, value in shortcuts.items() if value != gold], inputs=len(top))


def _largest(fixture: Fixture) -> TaskSpec:
    reports = fixture.files("incoming/reports/")
    top = max(len(e.data) for e in reports)
    gold = [e.path for e in reports if len(e.data) == top]
    traps = ["takes one of the tied files"] if len(gold) > 1 else []
    return TaskSpec(FAMILY, "largest", "Which regular file in `incoming/reports/` is the largest (in bytes)? If several "
                    "share the largest size, list all of them.",
                    [_python("sizes = {os.path.join('incoming/reports', n): os.lstat(os.path.join('incoming/reports', n))"
                             ".st_size for n in os.listdir('incoming/reports')}\n"
                             "print('\\n'.join(sorted(p for p, s in sizes.items() if s == max(sizes.values()))))\n")],
                    answer_kind="lines", expected_answer=gold, check_state=False, traps=traps, inputs=len(reports))


def specs(fixture: Fixture, rng: random.Random) -> list[TaskSpec]:
    """Five awkward-file tasks on `fixture`'s inbox (two byte totals, with other suffixes or limits)."""
    cutoff = int(fixture.facts["inbox_cutoff"])  # type: ignore[call-overload]
    totals = [_suffix_bytes(fixture, rng), _suffix_bytes(fixture, rng)]
    if totals[0].prompt == totals[1].prompt:
        totals.pop()
    for index, spec in enumerate(totals):
        spec.template += f"-{index}"
    made = [_count_since(fixture, cutoff), *totals, _archive_before(fixture, cutoff), _largest(fixture)]
    return [spec for spec in made if spec is not None]
