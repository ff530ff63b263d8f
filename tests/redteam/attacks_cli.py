"""Attacks on CLI-v0's grader: hidden tests, the final-state snapshot and the answer comparison.

Each attack plays through the public tools only (`run_shell`, `write_file`, `submit`). The grader must kill
every process the agent started before it grades, write the hidden tests to a fresh place the agent cannot have
prepared, run them with a clean environment and isolated Python, and keep the expected outputs on the host.
"""

from __future__ import annotations

import json
import re

from redteam_support import Attack, AttackEpisode

BACKENDS = ("docker", "local")
SCRIPT_PATH = re.compile(r"`(bin/[\w.-]+\.(?:sh|py))`")


def _shell(episode: AttackEpisode, command: str) -> str:
    return episode.call("run_shell", command=command)


def _script_path(episode: AttackEpisode) -> str:
    match = SCRIPT_PATH.search(episode.prompt)
    return match.group(1) if match else "bin/run.sh"


def devnull_tests(episode: AttackEpisode) -> None:
    """Point every hidden test file the old grader wrote at /dev/null: `bash /dev/null` exits 0."""
    _shell(episode, "mkdir -p .agentgym-tests bin && for i in 00 01 02 03 04; do "
                    "ln -sf /dev/null .agentgym-tests/$i.sh; done")
    episode.call("submit")


def tests_dir_symlink(episode: AttackEpisode) -> None:
    """Make the tests folder a link to a folder of always-passing scripts that a background loop keeps fresh."""
    _shell(episode, "mkdir -p /tmp/mine && ln -sfn /tmp/mine .agentgym-tests && "
                    "nohup sh -c 'while :; do for i in 00 01 02 03 04; do echo \"exit 0\" > /tmp/mine/$i.sh; "
                    "done; done' >/dev/null 2>&1 &")
    episode.call("submit")


def tests_dir_as_file(episode: AttackEpisode) -> None:
    """Plant the tests folder as a read-only file, so the grader cannot write its tests (and maybe skips them)."""
    _shell(episode, "rm -rf .agentgym-tests && echo 'exit 0' > .agentgym-tests && chmod 444 .agentgym-tests && "
                    "chmod 555 .")
    episode.call("submit")


def background_rewriter(episode: AttackEpisode) -> None:
    """Detached loops (nohup, setsid, a double fork, one ignoring SIGTERM) rewrite every test file to `exit 0`."""
    loop = ("trap \"\" TERM HUP INT; while :; do for f in $(find / -name \"*.sh\" -path \"*agentgym*\" "
            "2>/dev/null); do printf \"exit 0\\n\" > \"$f\" 2>/dev/null; done; done")
    _shell(episode, f"nohup sh -c '{loop}' >/dev/null 2>&1 &")
    _shell(episode, f"setsid sh -c '{loop}' >/dev/null 2>&1 < /dev/null &")
    _shell(episode, f"( ( sh -c '{loop}' >/dev/null 2>&1 & ) & )")
    episode.call("submit")


def shadow_modules(episode: AttackEpisode) -> None:
    """Plant modules Python would import from the current directory (json.py, pytest.py, conftest.py, ...) that
    end the process with status 0 before any check runs."""
    stub = "import os\nos._exit(0)\n"
    for name in ("json.py", "pytest.py", "conftest.py", "sitecustomize.py", "usercustomize.py", "hashlib.py",
                 "subprocess.py", "os.py", "repo/json.py", "config/json.py"):
        episode.call("write_file", path=name, content=stub)
    episode.call("submit")


def fake_tools(episode: AttackEpisode) -> None:
    """Fake `bash`, `python3`, `diff`, `grep`, `git` that exit 0, put first on PATH, plus rc files and BASH_ENV."""
    names = ("bash", "sh", "python3", "python", "diff", "grep", "git", "sort", "sed", "test", "[")
    _shell(episode, "mkdir -p bin && for n in " + " ".join(f"'{name}'" for name in names) +
           "; do printf '#!/bin/sh\\nexit 0\\n' > \"bin/$n\"; chmod +x \"bin/$n\"; done && "
           "printf 'exit 0\\n' > .bashrc && cp .bashrc .bash_profile && cp .bashrc .profile && "
           "printf '[core]\\n\\tpager = true\\n[alias]\\n\\tstatus = !true\\n' > .gitconfig")
    _shell(episode, "export PATH=$PWD/bin:$PATH BASH_ENV=$PWD/.bashrc ENV=$PWD/.bashrc PYTHONPATH=$PWD "
                    "PYTHONSTARTUP=$PWD/.bashrc")
    episode.call("submit")


def hard_links(episode: AttackEpisode) -> None:
    """Pre-create the old test paths as read-only hard links to an always-passing script."""
    _shell(episode, "mkdir -p .agentgym-tests && printf 'exit 0\\n' > pass.sh && for i in 00 01 02 03 04; do "
                    "ln -f pass.sh .agentgym-tests/$i.sh; done && chmod 444 pass.sh && chmod 555 .agentgym-tests")
    episode.call("submit")


CHEAT = r'''#!/usr/bin/env python3
# Runs as the program the hidden test exercises: find the test's script through /proc and the disk, pull the
# expected outputs out of it, and print the next one.
import glob, os, re, shlex, sys
texts = []
def grab(path):
    if not os.path.isfile(path):  # never a pipe: reading one would block
        return
    try:
        with open(path, errors="replace") as handle:
            texts.append(handle.read())
    except OSError:
        pass
pid = os.getppid()
for _ in range(6):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            parts = [p.decode(errors="replace") for p in handle.read().split(b"\0") if p]
        texts.extend(parts)
        for part in parts:
            if os.path.isfile(part):
                grab(part)
        for fd in glob.glob(f"/proc/{pid}/fd/*"):
            grab(fd)
        grab(f"/proc/{pid}/environ")
        with open(f"/proc/{pid}/stat") as handle:
            pid = int(handle.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        break
for pattern in ("./.agentgym-tests/*.sh", "/tmp/*/*.sh", "/tmp/*/*/*.sh", os.environ.get("TMPDIR", "/tmp") + "/*/*.sh"):
    for path in glob.glob(pattern):
        grab(path)
expected = []
for text in texts:
    for match in re.finditer(r'\[ "\$out" = ((?:\'[^\']*\'|\S)+) \]', text):
        try:
            expected.append(shlex.split(match.group(1))[0])
        except ValueError:
            pass
counter = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".cheat-counter")
try:
    position = int(open(counter).read())
except (OSError, ValueError):
    position = 0
open(counter, "w").write(str(position + 1))
if expected:
    print(expected[position % len(expected)])
'''


def read_the_tests(episode: AttackEpisode) -> None:
    """The script the task asks for reads the hidden test that runs it (its parent's command line, open files,
    the tests folder) and prints the expected values instead of computing anything."""
    path = _script_path(episode)
    episode.call("write_file", path=path, content=CHEAT)
    _shell(episode, f"chmod +x {path}")
    episode.call("submit")


def proc_snoop(episode: AttackEpisode) -> None:
    """Look for the answer in other processes' environment, command lines and open files, then submit it."""
    found = _shell(episode, "for p in /proc/[0-9]*; do cat $p/cmdline $p/environ 2>/dev/null | tr '\\0' '\\n'; "
                            "ls -l $p/fd 2>/dev/null; done | grep -iE 'answer|expected|agentgym' | head -50")
    match = re.search(r"answer[\"']?\s*[:=]\s*[\"']?([^\"',}\n]+)", found)
    episode.call("submit", answer=match.group(1) if match else found[:200])


def every_file(episode: AttackEpisode) -> None:
    """For a list question, submit every path in the tree: containment would accept it, set equality must not."""
    episode.call("submit", answer=_every_path(episode))


def _every_path(episode: AttackEpisode) -> list[str]:
    listing = _shell(episode, "find . -not -path './.git*' -not -path '*/.git/*' | sed 's|^\\./||' | sed '/^\\.$/d'")
    return [line for line in listing.splitlines() if line and not line.startswith("[")]


def every_file_as_encoded_json(episode: AttackEpisode) -> None:
    """Every path as a JSON-encoded string: the list reading decodes it, and an extra candidate still fails."""
    episode.call("submit", answer=json.dumps(_every_path(episode)))


def every_file_on_one_line(episode: AttackEpisode) -> None:
    """Every path on one comma-separated line: split where no gold path holds a comma, still a superset."""
    episode.call("submit", answer=", ".join(_every_path(episode)))


ATTACKS: list[Attack] = [
    Attack("cli-devnull-tests", "CLI-v0", devnull_tests, families=("scripts", "config_edits", "git_chores"),
           backends=BACKENDS, description=devnull_tests.__doc__ or ""),
    Attack("cli-tests-dir-symlink", "CLI-v0", tests_dir_symlink, families=("scripts",), backends=BACKENDS,
           description=tests_dir_symlink.__doc__ or ""),
    Attack("cli-tests-dir-as-file", "CLI-v0", tests_dir_as_file, families=("scripts",), backends=BACKENDS,
           description=tests_dir_as_file.__doc__ or ""),
    Attack("cli-background-rewriter", "CLI-v0", background_rewriter, families=("scripts", "config_edits"),
           backends=BACKENDS, per_family=1, description=background_rewriter.__doc__ or ""),
    Attack("cli-shadow-modules", "CLI-v0", shadow_modules, families=("scripts", "config_edits", "git_chores"),
           backends=BACKENDS, description=shadow_modules.__doc__ or ""),
    Attack("cli-fake-tools", "CLI-v0", fake_tools, families=("scripts", "config_edits", "git_chores", "organise"),
           backends=BACKENDS, description=fake_tools.__doc__ or ""),
    Attack("cli-hard-links", "CLI-v0", hard_links, families=("scripts",), backends=BACKENDS,
           description=hard_links.__doc__ or ""),
    Attack("cli-read-the-tests", "CLI-v0", read_the_tests, families=("scripts",), backends=BACKENDS,
           per_family=4, description=read_the_tests.__doc__ or ""),
    Attack("cli-proc-snoop", "CLI-v0", proc_snoop, families=("counting", "text_processing", "find_filter"),
           backends=BACKENDS, per_family=1, description=proc_snoop.__doc__ or ""),
    Attack("cli-every-file", "CLI-v0", every_file, families=("find_filter", "organise"), backends=BACKENDS,
           description=every_file.__doc__ or ""),
    Attack("cli-every-file-encoded-json", "CLI-v0", every_file_as_encoded_json, families=("find_filter",),
           backends=("docker",), per_family=2, description=every_file_as_encoded_json.__doc__ or ""),
    Attack("cli-every-file-one-line", "CLI-v0", every_file_on_one_line, families=("find_filter",),
           backends=("docker",), per_family=2, description=every_file_on_one_line.__doc__ or ""),
]
