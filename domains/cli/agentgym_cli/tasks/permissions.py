"""Permission fixes and questions: executable scripts, private keys, world-writable files."""

from __future__ import annotations

import random

from agentgym_cli.data.fixtures import Fixture
from agentgym_cli.tasks.base import TaskSpec, shell

FAMILY = "permissions"


def specs(fixture: Fixture, rng: random.Random) -> list[TaskSpec]:
    """Three permission tasks on `fixture`."""
    made: list[TaskSpec] = []
    for template in rng.sample(["scripts", "secrets", "config", "world_writable"], 3):
        if template == "scripts":
            mode, letters = rng.choice([("755", "rwxr-xr-x"), ("750", "rwxr-x---"), ("700", "rwx------"),
                                        ("775", "rwxrwxr-x"), ("711", "rwx--x--x")])
            made.append(TaskSpec(FAMILY, template, "Make every `.sh` file in `project/scripts/` executable: set its "
                                 f"mode to {mode} ({letters}).", [shell(f"chmod {mode} project/scripts/*.sh")],
                                 check_modes=True, difficulty="easy"))
        elif template == "secrets":
            made.append(TaskSpec(FAMILY, template, "`secrets/` holds credentials. Make the folder accessible to its "
                                 "owner only (mode 700) and every file in it readable and writable by its owner only "
                                 "(mode 600).", [shell("chmod 600 secrets/* && chmod 700 secrets")], check_modes=True))
        elif template == "config":
            made.append(TaskSpec(FAMILY, template, "No file under `config/` (hidden ones included) may be writable by "
                                 "its group or by others. Remove those write permissions and change no other "
                                 "permission bit.", [shell("find config -type f -exec chmod go-w {} +")],
                                 check_modes=True))
        else:
            expected = sorted(e.path for e in fixture.entries
                              if e.kind == "file" and e.mode & 0o002 and "/.git/" not in e.path)
            made.append(TaskSpec(FAMILY, template, "Which files in the workspace are writable by others (world-"
                                 "writable)? Leave out git's internal `.git` folders.",
                                 [shell("find . -name .git -prune -o -type f -perm -o+w -print | sort")],
                                 answer_kind="lines", expected_answer=expected, check_state=False))
    return made
