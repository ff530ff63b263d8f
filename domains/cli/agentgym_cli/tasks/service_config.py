"""Permission configuration of a service tree (`service/`, see data/service.py) by a stated policy.

The policy's modes vary per workspace; the tree always holds what tells a careful job from a quick one. Each
shortcut's final modes are computed and kept as a trap when they differ from the policy's: deciding scripts by
the `.sh` extension, following symbolic links (a `chmod` on a link changes its target, here a file outside
`service/`), giving only `service/public` itself the public modes, treating secrets like other files, and
skipping hidden entries. Graded on the final modes of every entry (`check_modes`).
"""

from __future__ import annotations

import random

from agentgym_cli.data.fixtures import Fixture
from agentgym_cli.tasks.base import TaskSpec, shell

FAMILY = "service_config"

GOLD = r'''
import os
def mode_for(path, is_dir):
    public = path == "service/public" or path.startswith("service/public/")
    if is_dir:
        return 0o755 if public else DIR
    if path.startswith("service/secrets/"):
        return SECRET
    with open(path, "rb") as handle:
        script = handle.read(2) == b"#!"
    if public:
        return 0o755 if script else 0o644
    return SCRIPT if script else DATA
for folder, folders, files in os.walk("service"):
    for name in folders + files:
        path = os.path.join(folder, name)
        if not os.path.islink(path):
            os.chmod(path, mode_for(path, os.path.isdir(path)))
os.chmod("service", DIR)
'''


def _policy_modes(entries: list[tuple[str, str, int]], data: dict[str, bytes], policy: dict[str, int], *,
                  by_extension: bool = False, public_top_only: bool = False, secrets_special: bool = True,
                  hidden: bool = True) -> dict[str, int]:
    """The mode of every file and folder of `service/` after applying the policy (or a shortcut of it)."""
    modes: dict[str, int] = {}
    for path, kind, mode in entries:
        if kind == "symlink":
            continue
        name_hidden = any(part.startswith(".") for part in path.split("/"))
        if not hidden and name_hidden:
            modes[path] = mode
            continue
        public = path == "service/public" or (path.startswith("service/public/") and
                                              (not public_top_only or path.count("/") == 2))
        if kind == "dir":
            modes[path] = 0o755 if public else policy["dir"]
        elif secrets_special and path.startswith("service/secrets/"):
            modes[path] = policy["secret"]
        else:
            script = path.endswith(".sh") if by_extension else data[path][:2] == b"#!"
            modes[path] = (0o755 if script else 0o644) if public else (policy["script"] if script else policy["data"])
    return modes


def specs(fixture: Fixture, rng: random.Random) -> list[TaskSpec]:
    """The service permission policy task on `fixture`."""
    entries = [(path, kind, mode) for path, kind, mode in fixture.facts["service_entries"]]  # type: ignore[attr-defined]
    data = {entry.path: entry.data for entry in fixture.files("service/")}
    policy = {"dir": rng.choice((0o750, 0o700, 0o770)), "script": rng.choice((0o750, 0o700, 0o770)),
              "data": rng.choice((0o640, 0o600, 0o660)), "secret": rng.choice((0o600, 0o400))}
    gold = _policy_modes(entries, data, policy)
    shortcuts = {
        "decides scripts by the .sh extension": _policy_modes(entries, data, policy, by_extension=True),
        "gives only service/public itself the public modes": _policy_modes(entries, data, policy,
                                                                             public_top_only=True),
        "treats secrets like other files": _policy_modes(entries, data, policy, secrets_special=False),
        "skips hidden entries": _policy_modes(entries, data, policy, hidden=False),
    }
    traps = [name for name, modes in shortcuts.items() if modes != gold]
    traps.append("follows symbolic links (chmod on a link changes its target outside service/)")
    code = GOLD
    for key, value in (("DIR", policy["dir"]), ("SECRET", policy["secret"]), ("SCRIPT", policy["script"]),
                       ("DATA", policy["data"])):
        code = code.replace(key, oct(value))
    prompt = (
        "Apply this permission policy to the folder `service/` and everything in it, hidden entries included:\n"
        f"- folders: {policy['dir']:o}, except `service/public` and every folder inside it: 755;\n"
        "- scripts, that is regular files whose first two bytes are `#!` (whatever their name): "
        f"{policy['script']:o}, or 755 inside `service/public`;\n"
        f"- every file in `service/secrets/`: {policy['secret']:o}, script or not;\n"
        f"- every other regular file: {policy['data']:o}, or 644 inside `service/public`;\n"
        "- symbolic links: leave each link, and what it points to, unchanged.\n"
        "Nothing outside `service/` may change.")
    return [TaskSpec(FAMILY, "policy", prompt, [shell("python3 - <<'AGENTGYM_GOLD'" + code + "AGENTGYM_GOLD")],
                     check_modes=True, traps=traps, inputs=len(entries))]
