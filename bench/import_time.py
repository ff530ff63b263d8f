"""What `import agentgym` costs, against `import gymnasium` in the same run: fresh interpreters, interleaved
rounds, the median of the per-round ratios. `import agentgym` registers every installed plugin's envs, so this
is what a training script pays before its first `gym.make`. Prints one JSON object.

    python bench/import_time.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

from _timing import figure

# One fresh interpreter per sample; only the import itself is timed, not the interpreter's start.
PROBE = "import time; start = time.perf_counter(); import {module}; print(time.perf_counter() - start)"


def import_seconds(module: str) -> float:
    output = subprocess.run([sys.executable, "-c", PROBE.format(module=module)], capture_output=True, text=True,
                            check=True).stdout
    return float(output.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    rounds = parser.parse_args().rounds
    import_seconds("agentgym")  # warm the file cache and the plugins' bytecode
    ratios, ours, theirs = [], [], []
    for _ in range(rounds):
        reference = import_seconds("gymnasium")
        measured = import_seconds("agentgym")
        theirs.append(reference)
        ours.append(measured)
        ratios.append(measured / reference)
    ratio = statistics.median(ratios)
    registered = subprocess.run([sys.executable, "-c", "import agentgym; print(len(agentgym.registered()))"],
                                capture_output=True, text=True, check=True).stdout.strip()
    print(json.dumps({
        "bench": "import_time", "rounds": rounds,
        "figures": {"import_agentgym_vs_gymnasium": figure(ratio, "<= 1.5x", ratio <= 1.5, digits=2)},
        "reference": {"import_agentgym_median_ms": round(statistics.median(ours) * 1000, 1),
                      "import_gymnasium_median_ms": round(statistics.median(theirs) * 1000, 1),
                      "envs_registered": int(registered)},
        "ok": ratio <= 1.5,
    }, indent=1))


if __name__ == "__main__":
    main()
