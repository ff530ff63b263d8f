"""Red-team figures: per env and family, attacks tried / episodes / wins, and the constant-answer tables.

Plays every attack in `tests/redteam/attacks_*.py` (the same list `make test` samples) on every applicable
task with `--full`, or on the attack's fast sample by default, on each backend it names that runs here.
The constant-answer tables are per family and per prompt template (`tests/redteam/prompt_templates.py`: the
template key, its tasks, the best constant guess and the share of tasks it wins), on the train and the test
split, for every env the registry knows. Prints one JSON object; `ok` is true when no attack won and no family's
or template's best constant solves more than half. `--templates-only` prints the template table alone, as text.

    python bench/redteam.py                    # fast sample, a few minutes
    python bench/redteam.py --full             # every attack on every applicable task, every template task
    python bench/redteam.py --templates-only   # the per-template table (every task), nothing else
    python bench/redteam.py --templates-only --full   # ... with every CLI guess played through `step` (slow)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "redteam"))

from prompt_templates import constant_template_table, env_ids
from redteam_support import all_attacks, constant_answer_table, run

from agentgym.sandbox.backends import docker_problem


def _env_kwargs(env_id: str, what: str, skipped: list[str]) -> dict[str, Any] | None:
    """`gym.make` arguments for the constant tables: CLI-v0 in Docker (None, noted in `skipped`, without it)."""
    if env_id != "CLI-v0":
        return {}
    problem = docker_problem()
    if problem:
        skipped.append(f"{what} {env_id}: {problem}")
        return None
    return {"backend": "docker"}


def template_tables(per_template: int | None, skipped: list[str], *,
                    every_step: bool) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """env -> split -> one row per prompt template, worst first. Without `every_step`, CLI-v0's answer templates
    are scored with the verifier directly (see `constant_template_table`'s `answers_only`)."""
    tables: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for env_id in env_ids():
        kwargs = _env_kwargs(env_id, "templates", skipped)
        if kwargs is None:
            continue
        if env_id == "CLI-v0" and not every_step:
            kwargs["answers_only"] = True
        for split in ("train", "test"):
            rows = [{"template": key, "tasks": row["tasks"], "judged": row["judged"],
                     "best_constant": row["best_constant"], "best_share": round(row["best_share"], 3)}
                    for key, row in constant_template_table(env_id, split=split, per_template=per_template,
                                                            **kwargs).items()]
            tables.setdefault(env_id, {})[split] = sorted(rows, key=lambda row: (-row["best_share"], row["template"]))
    return tables


def print_templates(tables: dict[str, dict[str, list[dict[str, Any]]]]) -> None:
    for env_id, splits in tables.items():
        for split, rows in splits.items():
            judged = [row for row in rows if row["judged"] != "too few"]
            print(f"\n{env_id} {split}: {len(rows)} templates ({len(rows) - len(judged)} with too few tasks to "
                  f"judge), worst judged {judged[0]['best_share'] if judged else 0:.2f}")
            print(f"{'share':>5} {'tasks':>5} {'judged':7} {'best constant':40} template")
            for row in rows:
                print(f"{row['best_share']:5.2f} {row['tasks']:5} {row['judged']:7} {row['best_constant'][:40]:40} "
                      f"{row['template'][:140]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="every applicable task, not the fast sample")
    parser.add_argument("--constants-per-family", type=int, default=40,
                        help="tasks per family for the constant-answer table (0: every task)")
    parser.add_argument("--per-template", type=int, default=6,
                        help="tasks per prompt template for the template table (0: every task; --full: 0)")
    parser.add_argument("--templates-only", action="store_true",
                        help="print only the per-template table (every task), as text; with --full every CLI "
                             "guess is played through step (a sandbox each) rather than scored by the verifier")
    arguments = parser.parse_args()
    skipped: list[str] = []
    if arguments.templates_only:
        tables = template_tables(None, skipped, every_step=arguments.full)
        print_templates(tables)
        worst = max((row["best_share"] for splits in tables.values() for rows in splits.values() for row in rows
                     if row["judged"] != "too few"), default=0.0)
        print(f"\nworst template share {worst:.3f} (target <= 0.5)" + (f"; skipped: {skipped}" if skipped else ""))
        return 0
    docker_missing = docker_problem()
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for attack in all_attacks():
        for backend in attack.backends or ("",):
            if backend == "docker" and docker_missing:
                skipped.append(f"{attack.name}[docker]: {docker_missing}")
                continue
            for outcome in run(attack, backend=backend, per_family=0 if arguments.full else None):
                row = table.setdefault(attack.env_id, {}).setdefault(
                    outcome.family, {"attacks": set(), "episodes": 0, "wins": 0, "winning_attacks": set()})
                row["attacks"].add(attack.name)
                row["episodes"] += 1
                if outcome.won:
                    row["wins"] += 1
                    row["winning_attacks"].add(f"{attack.name}[{backend}]" if backend else attack.name)
    attacks = {env_id: {family: {"attacks": len(row["attacks"]), "episodes": row["episodes"], "wins": row["wins"],
                                 "winning_attacks": sorted(row["winning_attacks"])}
                        for family, row in sorted(families.items())}
               for env_id, families in sorted(table.items())}
    constants: dict[str, Any] = {}
    per_family = arguments.constants_per_family or None
    for env_id in env_ids():
        kwargs = _env_kwargs(env_id, "constants", skipped)
        if kwargs is None:
            continue
        constants[env_id] = {family: {"tasks": row["tasks"], "best_constant": row["best_constant"],
                                      "best_share": round(row["best_share"], 3)}
                             for family, row in constant_answer_table(env_id, per_family=per_family,
                                                                      **kwargs).items()}
    templates = template_tables(None if arguments.full or arguments.per_template == 0 else arguments.per_template,
                                skipped, every_step=arguments.full)
    worst_template = max((row["best_share"] for splits in templates.values() for rows in splits.values()
                          for row in rows if row["judged"] != "too few"), default=0.0)
    wins = sum(row["wins"] for families in attacks.values() for row in families.values())
    episodes = sum(row["episodes"] for families in attacks.values() for row in families.values())
    worst = max((row["best_share"] for families in constants.values() for row in families.values()), default=0.0)
    classes = sorted({attack.name for attack in all_attacks()})
    result = {
        "figures": {
            "attack_classes": {"value": len(classes)},
            "episodes": {"value": episodes},
            "wins": {"value": wins, "target": 0, "ok": wins == 0},
            "worst_constant_share": {"value": worst, "target": "<= 0.5", "ok": worst <= 0.5},
            "worst_template_share": {"value": worst_template, "target": "<= 0.5", "ok": worst_template <= 0.5},
        },
        "attacks": attacks,
        "constants": constants,
        "templates": templates,
        "skipped": skipped,
        "full": arguments.full,
        "ok": wins == 0 and worst <= 0.5 and worst_template <= 0.5,
    }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
