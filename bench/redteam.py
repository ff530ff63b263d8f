"""Red-team figures: per env and family, attacks tried / episodes / wins, and the constant-answer table.

Plays every attack in `tests/redteam/attacks_*.py` (the same list `make test` samples) on every applicable
task with `--full`, or on the attack's fast sample by default, on each backend it names that runs here.
Prints one JSON object; `ok` is true when no attack won and no family's best constant solves more than half.

    python bench/redteam.py            # fast sample, a few minutes
    python bench/redteam.py --full     # every attack on every applicable task
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "redteam"))

from redteam_support import ENV_IDS, all_attacks, constant_answer_table, run  # noqa: E402

from agentgym.sandbox.backends import docker_problem  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="every applicable task, not the fast sample")
    parser.add_argument("--constants-per-family", type=int, default=40,
                        help="tasks per family for the constant-answer table (0: every task)")
    arguments = parser.parse_args()
    docker_missing = docker_problem()
    table: dict[str, dict[str, dict[str, Any]]] = {}
    skipped: list[str] = []
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
    for env_id in ENV_IDS:
        kwargs: dict[str, Any] = {}
        if env_id == "CLI-v0":
            if docker_missing:
                skipped.append(f"constants {env_id}: {docker_missing}")
                continue
            kwargs["backend"] = "docker"
        constants[env_id] = {family: {"tasks": row["tasks"], "best_constant": row["best_constant"],
                                      "best_share": round(row["best_share"], 3)}
                             for family, row in constant_answer_table(env_id, per_family=per_family,
                                                                      **kwargs).items()}
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
        },
        "attacks": attacks,
        "constants": constants,
        "skipped": skipped,
        "full": arguments.full,
        "ok": wins == 0 and worst <= 0.5,
    }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
