"""A small service tree for the `service_config` family (`service/`): programs, configuration, secrets and a
public folder, all with modes that break the policy the task states.

What makes the policy work real varies per workspace: which files are scripts (a `#!` first line, whatever the
name: some `.sh` files are sourced libraries without one, some scripts have no extension), hidden files, folders
inside `service/public`, and symbolic links, one of which points at a file outside `service/`.
"""

from __future__ import annotations

import random

# (path below service/, is a script)
BIN = (("bin/start.sh", True), ("bin/stop.sh", True), ("bin/healthcheck", True), ("bin/rotate-logs", True),
       ("bin/env.sh", False), ("bin/common.sh", False), ("bin/README", False))
CONF = ("conf/server.conf", "conf/workers.ini", "conf/.env", "conf/local.d/override.conf", "conf/local.d/.pinned",
        "conf/limits.conf")
SECRETS = (("secrets/tls.key", False), ("secrets/api.token", False), ("secrets/renew.sh", True))
PUBLIC = (("public/index.html", False), ("public/style.css", False), ("public/assets/logo.svg", False),
          ("public/cgi/status.sh", True), ("public/cgi/lib.sh", False), ("public/.well-known/security.txt", False))
FILE_MODES = (0o644, 0o666, 0o600, 0o755, 0o664, 0o604)
DIR_MODES = (0o755, 0o777, 0o700, 0o775)


def build_service(rng: random.Random) -> tuple[list[tuple[str, str, bytes, int, str]], dict[str, object]]:
    """(path, kind, bytes, mode, link target) of every entry of `service/`, and its facts (the entries)."""
    entries: list[tuple[str, str, bytes, int, str]] = []
    chosen = [*rng.sample(BIN, rng.randint(4, 6)), *[(path, False) for path in rng.sample(CONF, rng.randint(3, 5))],
              *rng.sample(SECRETS, rng.randint(2, 3)), *rng.sample(PUBLIC, rng.randint(4, 6))]
    for required in (("bin/healthcheck", True), ("bin/env.sh", False), ("conf/.env", False),
                     ("public/assets/logo.svg", False), ("secrets/tls.key", False)):
        if required not in chosen:
            chosen.append(required)  # each refutes one shortcut: see tasks/service_config.py
    for path, script in chosen:
        if script:
            body = f"#!/bin/sh\n# {path}\nexec true\n"
        elif path.endswith(".sh"):
            body = f"# sourced by the scripts, not run: {path}\nSERVICE_HOME=/srv/service\n"
        else:
            body = f"{path}: {rng.getrandbits(48):012x}\n"
        entries.append((f"service/{path}", "file", body.encode(), rng.choice(FILE_MODES), ""))
    folders = sorted({"service"} | {"service/" + "/".join(path.split("/")[:depth]) for path, _ in chosen
                                    for depth in range(1, path.count("/") + 1)})
    for folder in folders:
        entries.append((folder, "dir", b"", rng.choice(DIR_MODES), ""))
    entries.append(("service/conf/app.ini", "symlink", b"", 0o777, "../../config/app.ini"))
    if rng.random() < 0.5:
        entries.append(("service/public/logs", "symlink", b"", 0o777, "../logs"))
    return entries, {"service_entries": [(path, kind, mode) for path, kind, _, mode, _ in entries]}
