"""File organisation: move, rename, deduplicate, archive and sort files into folders."""

from __future__ import annotations

import hashlib
import random

from agentgym_cli.data.fixtures import Fixture
from agentgym_cli.tasks.base import TaskSpec, shell

FAMILY = "organise"


def specs(fixture: Fixture, rng: random.Random) -> list[TaskSpec]:
    """Three file-organisation tasks on `fixture`."""
    made: list[TaskSpec] = []
    for template in rng.sample(["images", "spaces", "dedupe", "archive", "by_extension"], 3):
        if template == "images":
            made.append(TaskSpec(FAMILY, template, "Move every `.jpg` and `.png` file that sits directly in "
                                 "`downloads/` (not in its subfolders) into a new folder `downloads/images/`, keeping "
                                 "their names.",
                                 [shell("mkdir -p downloads/images && find downloads -maxdepth 1 -type f \\( -name "
                                        "'*.jpg' -o -name '*.png' \\) -exec mv {} downloads/images/ \\;")]))
        elif template == "spaces":
            made.append(TaskSpec(FAMILY, template, "In `downloads/` (top level only), rename every file whose name "
                                 "contains spaces so that each space becomes an underscore.",
                                 [shell("(cd downloads && for f in *' '*; do if [ -f \"$f\" ]; then "
                                        "mv -- \"$f\" \"${f// /_}\"; fi; done)")]))
        elif template == "dedupe":
            made.append(TaskSpec(FAMILY, template, "`downloads/` (recursively, hidden files included) contains files "
                                 "with identical content. For each group of identical files keep only the one whose "
                                 "path sorts first (byte order, e.g. `downloads/a b.jpg` before `downloads/ab.jpg`) "
                                 "and delete the others.",
                                 [shell("find downloads -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | "
                                        "awk 'seen[$1]++ { sub(/^[0-9a-f]+  /, \"\"); print }' | "
                                        "while IFS= read -r f; do rm -- \"$f\"; done")], difficulty="medium"))
        elif template == "archive":
            members = fixture.files("logs/old/")
            checks = "".join(
                f"h=$( (tar -xzOf logs/old.tar.gz '{e.path}' 2>/dev/null || tar -xzOf logs/old.tar.gz './{e.path}') "
                f"| sha256sum | cut -c1-64); [ \"$h\" = {hashlib.sha256(e.data).hexdigest()} ] || "
                f"{{ echo 'wrong or missing {e.path}'; exit 1; }}\n" for e in members)
            made.append(TaskSpec(FAMILY, template, "Pack the folder `logs/old` into a gzip-compressed tar archive "
                                 "`logs/old.tar.gz` (member paths starting with `logs/old/`), then delete the folder "
                                 "`logs/old`.", [shell("tar -czf logs/old.tar.gz logs/old && rm -r logs/old")],
                                 ignore=["logs/old.tar.gz"],
                                 tests=[{"name": "the archive holds every old log", "script": checks}]))
        else:
            made.append(TaskSpec(FAMILY, template, "Sort the files that sit directly in `downloads/` into subfolders "
                                 "of `downloads/` named after their extension in lower case (for example "
                                 "`downloads/pdf/report.pdf`). Hidden files and files without an extension stay "
                                 "where they are.",
                                 [shell("(cd downloads && for f in *.*; do if [ -f \"$f\" ]; then e=\"${f##*.}\"; "
                                        "e=\"${e,,}\"; mkdir -p \"$e\" && mv -- \"$f\" \"$e/\"; fi; done)")]))
    return made
