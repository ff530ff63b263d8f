"""`make bench`: run every `bench/*.py`, save each JSON result to `bench/results/NAME.json`, and write one
Markdown table (`bench/results/SUMMARY.md`) with every figure next to its target."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
TIMEOUT_S = 2700  # a guard against a hung bench; the longest, bench/learn.py, takes about 29 min on 2 cores


def flatten(figures: Any, prefix: str = "") -> list[tuple[str, Any, Any, Any]]:
    """(name, value, target, ok) rows from a bench's `figures` (nested dicts allowed)."""
    rows = []
    if isinstance(figures, dict) and "value" in figures:
        return [(prefix, figures.get("value"), figures.get("target", ""), figures.get("ok", ""))]
    if isinstance(figures, dict):
        for key, value in figures.items():
            rows.extend(flatten(value, f"{prefix}.{key}" if prefix else key))
    else:
        rows.append((prefix, figures, "", ""))
    return rows


def main() -> int:
    RESULTS.mkdir(exist_ok=True)
    selected = set(sys.argv[1:])
    lines = ["| bench | figure | value | target | ok |", "|---|---|---|---|---|"]
    failed = False
    for script in sorted(HERE.glob("*.py")):
        name = script.stem
        if name == "run_all" or name.startswith("_") or (selected and name not in selected):
            continue
        started = time.time()
        print(f"== {name}", flush=True)
        try:
            completed = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                                       timeout=TIMEOUT_S)
            output = completed.stdout.strip()
            result = json.loads(output[output.index("{"):]) if "{" in output else {}
            if completed.returncode != 0 or not result:
                result = {"error": (completed.stderr or output)[-2000:], "ok": False}
        except subprocess.TimeoutExpired:
            result = {"error": f"timed out after {TIMEOUT_S} s", "ok": False}
        except json.JSONDecodeError as error:
            result = {"error": f"output is not JSON: {error}", "ok": False}
        result.setdefault("seconds", round(time.time() - started, 1))
        (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=1))
        if "error" in result:
            lines.append(f"| {name} | error | {str(result['error']).splitlines()[-1][:80]} | | False |")
            failed = True
            continue
        for figure, value, target, ok in flatten(result.get("figures", result)):
            lines.append(f"| {name} | {figure} | {value} | {target} | {ok} |")
            failed |= ok is False
    summary = "\n".join(lines) + "\n"
    (RESULTS / "SUMMARY.md").write_text(summary)
    print(summary)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
