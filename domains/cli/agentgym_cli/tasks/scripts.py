"""Script writing: the agent writes a small program; hidden tests run it on inputs it has never seen."""

from __future__ import annotations

import json
import random
import shlex
from collections import Counter

from agentgym_cli.data.fixtures import LEVELS, Fixture
from agentgym_cli.tasks.base import TaskSpec, shell, write

FAMILY = "scripts"


def _show(command: str) -> str:
    """A test line that prints the output of `command` (trailing newlines aside) after a marker line; the
    command must exit 0. The expected outputs are the test's `stdout`, compared on the host: the agent's script,
    which the test runs, could read the test itself, so the test never holds them."""
    return (f"echo '--- {command}'\nout=$({command}) || {{ echo 'exit status '$?; exit 1; }}\n"
            "printf '%s\\n' \"$out\"\n")


def _shown(command: str, expected: str) -> str:
    """What `_show(command)` prints when the command outputs `expected`."""
    return f"--- {command}\n{expected}\n"


def specs(fixture: Fixture, rng: random.Random) -> list[TaskSpec]:
    """Two script-writing tasks on `fixture`, each checked by hidden tests."""
    made: list[TaskSpec] = []
    for template in rng.sample(["column_sum", "count_level", "extension_count", "json_field"], 2):
        name = rng.choice({"column_sum": ["colsum", "sum_column", "column_total"],
                           "count_level": ["count_level", "levelcount", "loglevel"],
                           "extension_count": ["ext_count", "count_ext", "extstats"],
                           "json_field": ["json_field", "pluck", "field_of"]}[template])
        if template == "column_sum":
            path = f"bin/{name}.sh"
            rows = [[rng.randint(-50, 500) for _ in range(3)] for _ in range(rng.randint(3, 8))]
            column = rng.randint(1, 3)
            csv = "a,b,c\\n" + "".join(",".join(map(str, row)) + "\\n" for row in rows)
            checks = [(f"./{path} \"$AGENTGYM_SCRATCH/t.csv\" {column}", str(sum(row[column - 1] for row in rows))),
                      (f"./{path} data/sales.csv 5", str(sum(int(line.split(",")[4]) for line in
                                                             fixture.text("data/sales.csv").splitlines()[1:])))]
            script = (f"[ -x {path} ] || {{ echo 'not executable'; exit 1; }}\n"
                      f"printf '{csv}' > \"$AGENTGYM_SCRATCH/t.csv\"\n" + "".join(_show(c) for c, _ in checks))
            made.append(TaskSpec(FAMILY, template, f"Write an executable bash script `{path}`: `{path} FILE N` must "
                                 "print the sum of the N-th column (1-based) of the comma-separated FILE, skipping "
                                 "its header line, as a plain integer.",
                                 [write(path, "#!/bin/bash\nawk -F, -v c=\"$2\" 'NR > 1 {s += $c} END "
                                              "{print s + 0}' \"$1\"\n"), shell(f"chmod +x {path}")],
                                 ignore=["bin/*"], tests=[{"name": f"{path} sums columns", "script": script,
                                                           "stdout": "".join(_shown(*check) for check in checks)}]))
        elif template == "count_level":
            path = f"bin/{name}.sh"
            counts = Counter(line.split()[1] for line in fixture.text("logs/app.log").splitlines())
            lines = [f"2024-01-0{i % 9 + 1}T00:00:00Z {rng.choice(LEVELS)} db: message {i}" for i in range(20)]
            mine = Counter(line.split()[1] for line in lines)
            checks = [(f"./{path} {level} logs/app.log", str(counts.get(level, 0))) for level in sorted(set(LEVELS))]
            checks += [(f"./{path} {level} \"$AGENTGYM_SCRATCH/t.log\"", str(mine.get(level, 0)))
                       for level in sorted(set(LEVELS))]
            script = (f"[ -x {path} ] || {{ echo 'not executable'; exit 1; }}\n"
                      f"printf '%s\\n' {' '.join(shlex.quote(line) for line in lines)} > \"$AGENTGYM_SCRATCH/t.log\"\n"
                      + "".join(_show(c) for c, _ in checks))
            made.append(TaskSpec(FAMILY, template, f"Write an executable bash script `{path}`: `{path} LEVEL FILE` "
                                 "must print how many lines of FILE have the log level LEVEL. FILE uses the format "
                                 "of `logs/app.log` (TIMESTAMP LEVEL COMPONENT: MESSAGE). Print 0 when there are "
                                 "none.",
                                 [write(path, "#!/bin/bash\nawk -v l=\"$1\" '$2 == l {n++} END {print n + 0}' "
                                              "\"$2\"\n"), shell(f"chmod +x {path}")],
                                 ignore=["bin/*"], tests=[{"name": f"{path} counts levels", "script": script,
                                                           "stdout": "".join(_shown(*check) for check in checks)}]))
        elif template == "extension_count":
            path = f"bin/{name}.sh"
            files = [f"d{rng.randint(1, 3)}/f{i}.{rng.choice(['txt', 'csv', 'md', 'py'])}" for i in range(12)]
            # The cases the prompt names: a hidden file, a double suffix (both count), a name ending in a dot.
            files += [f"d{rng.randint(1, 3)}/.env", f"d{rng.randint(1, 3)}/backup.tar.gz"]
            counts = Counter(item.rsplit(".", 1)[1] for item in files)
            expected = "\n".join(f"{ext} {counts[ext]}" for ext in sorted(counts))
            script = (f"[ -x {path} ] || {{ echo 'not executable'; exit 1; }}\n"
                      "mkdir -p \"$AGENTGYM_SCRATCH/tree\" && cd \"$AGENTGYM_SCRATCH/tree\" && mkdir -p d1 d2 d3 && "
                      f"touch {' '.join(files)} noext trailing. && cd \"$WORKSPACE\"\n"
                      + _show(f"./{path} \"$AGENTGYM_SCRATCH/tree\""))
            shown = _shown(f"./{path} \"$AGENTGYM_SCRATCH/tree\"", expected)
            made.append(TaskSpec(FAMILY, template, f"Write an executable bash script `{path}`: `{path} DIR` must "
                                 "print, for each file extension found among the regular files under DIR "
                                 "(recursively), a line `EXTENSION COUNT`, sorted by extension in byte order. A "
                                 "file's extension is the part of its name after the last dot, without the dot "
                                 "(`py` for `a.py`, `gz` for `a.tar.gz`, `env` for `.env`), so a line reads `py 3`; "
                                 "a name without a dot, or ending in a dot, has no extension and is not counted.",
                                 [write(path, "#!/bin/bash\nfind \"$1\" -type f -name '*.*' ! -name '*.' | "
                                              "sed 's/.*\\.//' | LC_ALL=C sort | uniq -c | awk '{print $2, $1}'\n"),
                                  shell(f"chmod +x {path}")],
                                 ignore=["bin/*"], tests=[{"name": f"{path} counts extensions", "script": script,
                                                           "stdout": shown}],
                                 difficulty="medium"))
        else:
            path = f"bin/{name}.py"
            records = [{"id": i, "name": rng.choice(["ada", "bob", "cy"]) + str(i)} for i in range(5)]
            users = json.loads(fixture.text("data/users.json"))
            script = (f"[ -x {path} ] || {{ echo 'not executable'; exit 1; }}\n"
                      f"printf '%s' {shlex.quote(json.dumps(records))} > \"$AGENTGYM_SCRATCH/t.json\"\n")
            checks = [(f"./{path} \"$AGENTGYM_SCRATCH/t.json\" name", "\n".join(str(r["name"]) for r in records)),
                      (f"./{path} data/users.json email", "\n".join(u["email"] for u in users))]
            script += "".join(_show(c) for c, _ in checks)
            made.append(TaskSpec(FAMILY, template, f"Write an executable Python 3 script `{path}`: `{path} FILE "
                                 "FIELD` must read FILE, a JSON array of objects, and print the value of FIELD of "
                                 "each object, one per line, in order.",
                                 [write(path, "#!/usr/bin/env python3\nimport json\nimport sys\n\nfor item in "
                                              "json.load(open(sys.argv[1])):\n    print(item[sys.argv[2]])\n"),
                                  shell(f"chmod +x {path}")],
                                 ignore=["bin/*"], tests=[{"name": f"{path} prints fields", "script": script,
                                                           "stdout": "".join(_shown(*check) for check in checks)}]))
    return made
