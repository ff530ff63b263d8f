"""Debugging: make a buggy module meet its documented contract; hidden tests call it on edge cases.

The workspace's `tools/` holds one or two modules of `data/programs.py`, each with bugs planted (which ones, and
the contract's parameters, vary per workspace) and a visible test that shows one failing case. The hidden test
calls the function on every case of its program and prints one line per case; the expected lines stay on the
host (the agent's module runs inside the test, so the test never holds them). Each planted bug alone changes
some hidden line: that is checked here, and the bugs are the task's traps.
"""

from __future__ import annotations

import random

from agentgym_cli.data.fixtures import Fixture
from agentgym_cli.data.programs import PROGRAMS, harness, outcomes
from agentgym_cli.tasks.base import TaskSpec, write

FAMILY = "debugging"


def _contract(source: str) -> str:
    """The function's docstring, as one paragraph for the prompt."""
    body = source.split('    """', 1)[1].split('"""', 1)[0]
    return " ".join(body.split())


def specs(fixture: Fixture, rng: random.Random) -> list[TaskSpec]:
    """One debugging task per planted module of `fixture`."""
    made = []
    for planted in list(fixture.facts.get("programs", [])):  # type: ignore[call-overload]
        program = PROGRAMS[planted["kind"]]
        params, stem = planted["params"], planted["stem"]
        cases = program.cases(params)
        reference = program.source(params, frozenset())
        expected = "\n".join(outcomes(reference, program.function, cases))
        path = f"tools/{stem}.py"
        script = (f"cat > \"$AGENTGYM_SCRATCH/check.py\" <<'AGENTGYM_EOF'\n{harness(path, program.function, cases)}"
                  f"AGENTGYM_EOF\npython3 -I \"$AGENTGYM_SCRATCH/check.py\"\n")
        prompt = (f"The module `{path}` defines `{program.function}`. Its contract, from its docstring: "
                  f"\"{_contract(reference)}\" The function has bugs: `python3 tools/test_{stem}.py` shows a "
                  "failing case, and there are others it does not show. Fix the module so that "
                  f"`{program.function}` meets this contract on every input. Hidden tests call it on many other "
                  "inputs, edge cases included, and compare its results (where it returns tuples, lists are "
                  "accepted too). Keep the function's name and signature, and keep the module importable without "
                  "printing anything.")
        made.append(TaskSpec(FAMILY, f"fix_{planted['kind']}", prompt, [write(path, reference)], check_state=False,
                             tests=[{"name": f"{path} meets its contract", "script": script,
                                     "stdout": expected + "\n"}],
                             traps=list(planted["bugs"]), inputs=len(cases)))
    return made
