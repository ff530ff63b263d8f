"""A git repository with a long history for the `git_history` family (`history/`).

`calc.py` holds a few small functions and `check.py` asserts what they must do. Over 25 to 45 commits by several
authors, the functions and notes change; at one commit a function breaks, and in some workspaces it is fixed
again later (so HEAD passes), or an earlier commit broke the module for a single commit (so the history is not
monotonic and a binary search can land elsewhere). Which commits these are, the authors and the messages vary per
workspace. The repository is written with `git fast-import` at fixed dates, so its commit ids are stable.
"""

from __future__ import annotations

import os
import random
import subprocess
import tempfile
from pathlib import Path

FUNCTIONS = {
    "clamp": ("def clamp(x, lo, hi):\n    return max(lo, min(hi, x))\n",
              "def clamp(x, lo, hi):\n    return max(lo, min(hi, x)) if x < hi else lo\n",
              "assert clamp(5, 0, 3) == 3 and clamp(-1, 0, 3) == 0 and clamp(2, 0, 3) == 2\n"),
    "mean": ("def mean(values):\n    return sum(values) / len(values)\n",
             "def mean(values):\n    return sum(values) // len(values)\n",
             "assert mean([1, 2]) == 1.5 and mean([4]) == 4\n"),
    "percent": ("def percent(part, whole):\n    return round(100 * part / whole, 1)\n",
                "def percent(part, whole):\n    return round(100 * part / whole)\n",
                "assert percent(1, 3) == 33.3 and percent(1, 2) == 50.0\n"),
    "slug": ("def slug(text):\n    return \"-\".join(text.lower().split())\n",
             "def slug(text):\n    return \"-\".join(text.split()).lower()[:12]\n",
             ("assert slug(\"Hello  World\") == \"hello-world\" and slug(\"A Much Longer Title\") == "
              "\"a-much-longer-title\"\n")),
    "span": ("def span(values):\n    return max(values) - min(values)\n",
             "def span(values):\n    return values[-1] - values[0]\n",
             "assert span([3, 9, 1]) == 8 and span([5]) == 0\n"),
}
SUBJECTS = ("Tidy {name}", "Document {name}", "Refactor {name}", "Speed up {name}", "Clarify {name}",
            "Simplify {name}", "Rename locals in {name}", "Add note on {name}")


def drop_git_extras(git_dir: Path) -> None:
    """Remove what git writes but a fixture never needs (sample hooks, logs, the description, the last commit
    message): noise in a workspace, and bytes that differ between git versions."""
    for extra in ("hooks", "logs", "description", "COMMIT_EDITMSG"):
        target = git_dir / extra
        if target.is_dir():
            for child in sorted(target.rglob("*"), reverse=True):
                child.unlink() if not child.is_dir() else child.rmdir()
            target.rmdir()
        elif target.exists():
            target.unlink()


def _calc(state: dict[str, bool], notes: list[str], syntax_error: bool) -> str:
    parts = ['"""Small helpers."""\n']
    for name, (good, bad, _) in FUNCTIONS.items():
        parts.append("\n\n" + (good if state[name] else bad))
    parts.extend(f"# {note}\n" for note in notes)
    if syntax_error:
        parts.append("\ndef broken(:\n    pass\n")
    return "".join(parts)


def _check() -> str:
    lines = "".join("    " + test for _, _, test in FUNCTIONS.values())
    return ("\"\"\"Run: python3 check.py   (exit status 0 when every helper behaves, else 1)\"\"\"\nimport sys\n\n"
            "try:\n    from calc import clamp, mean, percent, slug, span\n" + lines +
            "except Exception as error:\n    print('FAIL', type(error).__name__, error)\n    sys.exit(1)\n"
            "print('PASS')\n")


def build_history(rng: random.Random, authors: list[str], base_time: int) -> tuple[dict[str, bytes], dict[str, object]]:
    """The files of `history/` (working tree and `.git`), and its facts: commit ids oldest first, whether each
    passes `check.py`, and the index of the oldest failing commit."""
    count = rng.randint(25, 45)
    broken_at = rng.randint(count // 3, count - 3)
    fixed_at = broken_at + rng.randint(3, 8) if rng.random() < 0.5 else None
    transient = rng.randint(3, broken_at - 2) if rng.random() < 0.6 and broken_at > 5 else None
    victim = rng.choice(sorted(FUNCTIONS))
    state = {name: True for name in FUNCTIONS}
    notes: list[str] = []
    commits: list[tuple[str, str, dict[str, str], bool]] = []  # author, subject, files, passes
    for index in range(count):
        name = rng.choice(sorted(FUNCTIONS))
        subject = rng.choice(SUBJECTS).format(name=name)
        syntax_error = index == transient
        if index == broken_at:
            state[victim] = False
            subject = rng.choice(SUBJECTS).format(name=victim)
        elif fixed_at is not None and index == fixed_at:
            state[victim] = True
            subject = f"Restore {victim}"
        notes.append(f"{name}: {rng.choice(('checked', 'reviewed', 'see docs', 'keep simple', 'edge cases'))}"
                     f" ({index})")
        files = {"calc.py": _calc(state, notes, syntax_error), "check.py": _check(),
                 "README.md": f"# helpers\n\n{count} small helpers for reports.\n"}
        passes = all(state.values()) and not syntax_error
        commits.append((rng.choice(authors), subject if index else "Add helpers and their check", files, passes))
    stream = []
    when = base_time - 120 * 86400
    for index, (author, subject, files, _) in enumerate(commits):
        email = author.split()[0].lower() + "@example.org"
        when += 3600 * rng.randint(2, 30)
        stream.append(f"commit refs/heads/main\nmark :{index + 1}\n"
                      f"author {author} <{email}> {when} +0000\ncommitter {author} <{email}> {when} +0000\n")
        message = subject.encode()
        stream.append(f"data {len(message)}\n{subject}\n")
        if index:
            stream.append(f"from :{index}\n")
        for path, text in files.items():
            data = text.encode()
            stream.append(f"M 100644 inline {path}\ndata {len(data)}\n{text}\n")
    out: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory(prefix="agentgym-cli-history-") as temporary:
        root = Path(temporary) / "history"
        root.mkdir()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": temporary, "LC_ALL": "C",
               "GIT_CONFIG_NOSYSTEM": "1", "TZ": "UTC"}

        def git(*args: str, stdin: str | None = None) -> str:
            return subprocess.run(["git", *args], cwd=root, env=env, input=stdin, capture_output=True, text=True,
                                  check=True).stdout

        git("init", "-q", "-b", "main")
        git("fast-import", "--quiet", stdin="".join(stream))
        git("read-tree", "HEAD")  # an index without stat data: the same bytes on every machine
        ids = git("rev-list", "--reverse", "main").split()
        drop_git_extras(root / ".git")
        for path, text in commits[-1][2].items():
            out[f"history/{path}"] = text.encode()
        for item in sorted((root / ".git").rglob("*")):
            if item.is_file():
                out["history/" + item.relative_to(root).as_posix()] = item.read_bytes()
    passes = [commit[3] for commit in commits]
    facts = {"history_ids": ids, "history_passes": passes, "history_first_failing": passes.index(False)}
    return out, facts
