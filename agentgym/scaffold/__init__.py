"""`agentgym new NAME`: write a plugin distribution in the standard domain shape.

The template (`template/`, files ending in `.tmpl`) is a small working domain: records built from a seed, two
read tools, two task families with train and test splits, a verifier that reads answers through
`agentgym.answers`, the env, a light registration, its tests and its red-team tests. Installed editable, the env
is listed, passes `agentgym check`, and the project's own suites (red team, training smoke test, serving) find it
through the registry. `docs/new-env.md` walks from here to a real domain.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from pathlib import Path

TEMPLATE = Path(__file__).parent / "template"
_NAME = re.compile(r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*")


@dataclass(frozen=True)
class Names:
    """Every name the template uses, derived from the one the user gives."""

    name: str        # "ticket_desk": the entry point's and the task ids' name
    dist: str        # "agentgym-ticket-desk": the distribution
    package: str     # "agentgym_ticket_desk": the import package
    class_name: str  # "TicketDesk"
    env_id: str      # "TicketDesk-v0"
    title: str       # "Ticket desk"

    @classmethod
    def of(cls, raw: str) -> Names:
        """The names for `raw`, or ValueError saying what a valid name looks like."""
        name = raw.strip().lower()
        if not _NAME.fullmatch(name):
            raise ValueError(f"{raw!r} is not a valid env name: use lower-case letters, digits and single '-' or "
                             "'_' between words, starting with a letter (e.g. pharmacy, ticket-desk)")
        words = re.split(r"[-_]", name)
        snake = "_".join(words)
        if keyword.iskeyword(snake):
            raise ValueError(f"{raw!r} is a Python keyword; choose another name")
        class_name = "".join(word.capitalize() for word in words)
        return cls(name=snake, dist=f"agentgym-{'-'.join(words)}", package=f"agentgym_{snake}",
                   class_name=class_name, env_id=f"{class_name}-v0", title=" ".join(words).capitalize())


def render(names: Names, target: Path) -> list[Path]:
    """Write the template for `names` into `target` (which must not exist or be empty); the paths written."""
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise FileExistsError(f"{target} already exists and is not empty; choose another --dir or remove it")
    values = {"{{" + key + "}}": value for key, value in vars(names).items()}
    written = []
    for source in sorted(TEMPLATE.rglob("*.tmpl")):
        relative = source.relative_to(TEMPLATE).with_suffix("")  # drop ".tmpl"
        destination = target / Path(*[names.package if part == "PACKAGE" else part for part in relative.parts])
        text = source.read_text(encoding="utf-8")
        for placeholder, value in values.items():
            text = text.replace(placeholder, value)
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_text(text, encoding="utf-8")
        written.append(destination)
    return written
