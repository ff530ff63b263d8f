"""Small Python modules with planted bugs, for the `debugging` family.

Each `Program` writes its module's source for a set of parameters (which vary the contract, such as the units a
parser knows or whether adjacent intervals merge) and a set of bugs (each a small, realistic slip that shows only
on some inputs). The docstring states the whole contract; `cases` are the hidden inputs, edge cases included.
`outcomes` runs a source in-process on the cases the way the hidden test does, so a generator computes the
expected output and checks that every planted bug, alone, changes it.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Program:
    """A module with a documented function, its parameters, its possible bugs and its hidden cases."""

    kind: str
    stems: tuple[str, ...]
    function: str
    bugs: tuple[str, ...]
    params: Callable[[random.Random], dict[str, Any]]
    source: Callable[[dict[str, Any], frozenset[str]], str]
    cases: Callable[[dict[str, Any]], list[list[Any]]]


def outcomes(source: str, function: str, cases: list[list[Any]]) -> list[str]:
    """What the hidden test prints for each case: the JSON of the result, `ValueError`, or `error NAME`."""
    namespace: dict[str, Any] = {"__name__": "target"}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(source, "<program>", "exec"), namespace)  # noqa: S102  (our own generated source)
    lines = []
    for args in cases:
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                result = namespace[function](*json.loads(json.dumps(args)))
            lines.append(json.dumps(result))
        except ValueError:
            lines.append("ValueError")
        except Exception as error:  # noqa: BLE001  (a planted bug may raise anything; the test prints its name)
            lines.append("error " + type(error).__name__)
    return lines


def harness(path: str, function: str, cases: list[list[Any]]) -> str:
    """The hidden test's Python program: load the module at `path` without touching sys.path, call the
    function on each case, print one line per case (as `outcomes`)."""
    return f'''import contextlib, importlib.util, io, json, sys
spec = importlib.util.spec_from_file_location("target", {path!r})
module = importlib.util.module_from_spec(spec)
try:
    with contextlib.redirect_stdout(io.StringIO()):
        spec.loader.exec_module(module)
except Exception as error:
    print("the module does not load:", type(error).__name__)
    sys.exit(1)
lines = []
for args in json.loads({json.dumps(json.dumps(cases))}):
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            result = getattr(module, {function!r})(*args)
        lines.append(json.dumps(result))
    except ValueError:
        lines.append("ValueError")
    except Exception as error:
        lines.append("error " + type(error).__name__)
print("\\n".join(lines))
'''


def visible_test(stem: str, function: str, cases: list[list[Any]], expected: list[str]) -> str:
    """The test file the workspace shows: a few cases with their expected results."""
    return f'''"""Run: python3 tools/test_{stem}.py   (a few cases only; hidden tests check many more)"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from {stem} import {function}  # noqa: E402

CASES = {json.dumps([[args, want] for args, want in zip(cases, expected)])}
failed = 0
for args, want in CASES:
    try:
        got = json.dumps({function}(*args))
    except ValueError:
        got = "ValueError"
    status = "ok" if got == want else "FAIL"
    failed += status == "FAIL"
    print(status, "{function}(" + ", ".join(json.dumps(arg) for arg in args) + ")", "->", got,
          "" if status == "ok" else "(expected " + want + ")")
sys.exit(1 if failed else 0)
'''


def plant(rng: random.Random, kind: str) -> dict[str, Any]:
    """Choose a program's file name, parameters and three bugs, each of which alone changes a hidden result and
    one of which the visible test shows; returns what the fixture writes and the generator reads."""
    program = PROGRAMS[kind]
    params = program.params(rng)
    cases = program.cases(params)
    right = outcomes(program.source(params, frozenset()), program.function, cases)
    visible_bugs = [bug for bug in program.bugs
                    if outcomes(program.source(params, frozenset({bug})), program.function, cases) != right]
    bugs = sorted(rng.sample(visible_bugs, min(3, len(visible_bugs))))
    wrong = outcomes(program.source(params, frozenset(bugs)), program.function, cases)
    failing = [index for index, (a, b) in enumerate(zip(right, wrong)) if a != b]
    passing = [index for index, (a, b) in enumerate(zip(right, wrong)) if a == b]
    if not failing:
        raise ValueError(f"{kind}: the planted bugs {bugs} change no hidden result")
    shown = sorted([rng.choice(failing), *rng.sample(passing, min(2, len(passing)))])
    return {"kind": kind, "stem": rng.choice(program.stems), "params": params, "bugs": bugs, "shown": shown}


def files_of(planted: dict[str, Any]) -> dict[str, str]:
    """The module (with its bugs) and its visible test, by path."""
    program = PROGRAMS[planted["kind"]]
    params, stem = planted["params"], planted["stem"]
    cases = program.cases(params)
    right = outcomes(program.source(params, frozenset()), program.function, cases)
    shown = planted["shown"]
    return {f"tools/{stem}.py": program.source(params, frozenset(planted["bugs"])),
            f"tools/test_{stem}.py": visible_test(stem, program.function, [cases[i] for i in shown],
                                                  [right[i] for i in shown])}


# ------------------------------------------------------------------------------------------------ durations
_SECONDS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}


def _duration_params(rng: random.Random) -> dict[str, Any]:
    return {"units": rng.choice(("wdhms", "dhms", "hms"))}


def _duration_source(params: dict[str, Any], bugs: frozenset[str]) -> str:
    units = params["units"]
    table = ", ".join(f'"{unit}": {_SECONDS[unit]}' for unit in units)
    listed = ", ".join(f"`{unit}` ({_SECONDS[unit]} s)" for unit in units)
    part = r"(\d)([A-Za-z])" if "one digit" in bugs else r"(\d+)([A-Za-z])"
    part += "" if "no spaces between parts" in bugs else r"\s*"
    unit = "match.group(2)" if "case-sensitive units" in bugs else "match.group(2).lower()"
    empty = "" if "empty text accepted" in bugs else '    if not text:\n        raise ValueError("empty duration")\n'
    order = "" if "repeated units accepted" in bugs else (
        "        if index <= last:\n            raise ValueError(\"each unit at most once, larger units first\")\n")
    return f'''"""Parse durations such as "1h 30m"."""

import re

UNITS = {{{table}}}
PART = re.compile(r"{part}")


def parse_duration(text):
    """Return the number of seconds in a duration such as "1h 30m" or "2h5s".

    A duration is one or more parts, each a whole number (digits only) immediately followed by a unit: {listed}.
    Units are case-insensitive; each unit appears at most once, larger units before smaller ones. Spaces may
    separate the parts and surround the whole text. Raise ValueError for anything else: an empty text, a number
    without a unit, an unknown unit, a unit repeated or out of order, or any other character.
    """
    text = text.strip()
{empty}    total, last, position = 0, -1, 0
    order = list(UNITS)
    for match in PART.finditer(text):
        if match.start() != position:
            raise ValueError(f"unexpected text at position {{position}}")
        unit = {unit}
        if unit not in UNITS:
            raise ValueError(f"unknown unit {{unit!r}}")
        index = order.index(unit)
{order}        last = index
        total += int(match.group(1)) * UNITS[unit]
        position = match.end()
    if position != len(text):
        raise ValueError(f"unexpected text at position {{position}}")
    return total
'''


def _duration_cases(params: dict[str, Any]) -> list[list[Any]]:
    texts = ["1h 30m", "2h5s", "90s", "1H30M", "  45m ", "30m1h", "1h1h", "", "   ", "10", "5x", "1h 30", "1 h",
             "0s", "120m", "3h 2m 1s", "h", "1.5h", "2d4h", "1w", "-5s", "12h 0m 59S"]
    return [[text] for text in texts]


# ------------------------------------------------------------------------------------------------ intervals
def _interval_params(rng: random.Random) -> dict[str, Any]:
    return {"gap": rng.choice((0, 1))}


def _interval_source(params: dict[str, Any], bugs: frozenset[str]) -> str:
    gap = params["gap"]
    rule = ("Intervals that overlap or touch (one ends where the next starts, such as (1, 3) and (3, 5)) merge; "
            "(1, 3) and (4, 5) stay apart." if gap == 0 else
            "Intervals that overlap, touch or are adjacent integers merge: (1, 3) and (3, 5) become (1, 5), and so "
            "do (1, 3) and (4, 5); (1, 3) and (5, 6) stay apart.")
    items = "intervals" if "input order assumed sorted" in bugs else "sorted(intervals)"
    compare = "<" if "touching intervals kept apart" in bugs else "<="
    end = "end" if "nested interval shrinks the union" in bugs else "max(result[-1][1], end)"
    check = "" if "reversed pair accepted" in bugs else (
        '        if start > end:\n            raise ValueError(f"start after end: {(start, end)}")\n')
    return f'''"""Merge integer intervals."""


def merge_intervals(intervals):
    """Return the union of closed integer intervals as a list of disjoint (start, end) tuples sorted by start.

    `intervals` is a list of (start, end) pairs of integers, in any order, each with start <= end; an empty list
    gives []. {rule} Raise ValueError if a pair has start > end.
    """
    result = []
    for start, end in {items}:
{check}        if result and start {compare} result[-1][1] + {gap}:
            result[-1] = (result[-1][0], {end})
        else:
            result.append((start, end))
    return result
'''


def _interval_cases(params: dict[str, Any]) -> list[list[Any]]:
    pairs = [[], [[1, 3]], [[5, 6], [1, 2]], [[1, 10], [2, 3]], [[1, 3], [3, 5]], [[1, 3], [4, 5]],
             [[4, 5], [1, 3], [2, 4]], [[3, 1]], [[1, 2], [5, 4]], [[1, 1], [1, 1]], [[-5, -1], [-1, 2]],
             [[0, 0], [2, 2]], [[10, 20], [1, 2], [5, 12], [21, 22]], [[1, 5], [2, 3], [4, 4]], [[7, 9], [1, 6]]]
    return [[pair] for pair in pairs]


# ------------------------------------------------------------------------------------------------ versions
def _version_params(rng: random.Random) -> dict[str, Any]:
    return {"fold": rng.choice((False, True))}


def _version_source(params: dict[str, Any], bugs: frozenset[str]) -> str:
    labels = ("two labels compare as text ignoring case (\"1.0-RC1\" equals \"1.0-rc1\"; \"1.0-alpha\" < "
              "\"1.0-Beta\")" if params["fold"] else
              "two labels compare as text, character by character in byte order (\"1.0-Beta\" < \"1.0-alpha\" "
              "< \"1.0-beta\")")
    numbers = 'match.group(1).split(".")' if "numbers compared as text" in bugs else \
        '[int(part) for part in match.group(1).split(".")]'
    zero = '"0"' if "numbers compared as text" in bugs else "0"
    pad = "" if "missing numbers not padded" in bugs else (
        "    width = max(len(left), len(right))\n"
        f"    left, right = left + [{zero}] * (width - len(left)), right + [{zero}] * (width - len(right))\n")
    strip = "text" if "surrounding spaces rejected" in bugs else "text.strip()"
    fold = ".lower()" if params["fold"] else ""
    label_rule = ("    return 0\n" if "labels ignored" in bugs else
                  "    if left_label == right_label:\n        return 0\n"
                  "    if left_label is None:\n        return 1\n    if right_label is None:\n        return -1\n"
                  "    return -1 if left_label < right_label else 1\n")
    return f'''"""Compare version strings."""

import re

VERSION = re.compile(r"(\\d+(?:\\.\\d+)*)(?:-([0-9A-Za-z]+))?")


def _parse(text):
    match = VERSION.fullmatch({strip})
    if match is None:
        raise ValueError(f"not a version: {{text!r}}")
    label = match.group(2)
    return {numbers}, (label{fold} if label is not None else None)


def compare_versions(a, b):
    """Return -1 if version `a` is lower than `b`, 0 if they are equal, 1 if it is higher.

    A version is one or more non-negative integers separated by dots ("1", "2.10.3"), optionally followed by a
    pre-release label: a hyphen and letters or digits ("1.0-rc1"); spaces around it are ignored. Numbers compare
    numerically, left to right ("1.10" > "1.9"); a missing number counts as 0 ("1.0" equals "1.0.0"). A version
    with a label is lower than the same version without one ("1.0-rc1" < "1.0"); {labels}. Raise ValueError for
    anything else ("", "1..2", "1.x", "v1").
    """
    (left, left_label), (right, right_label) = _parse(a), _parse(b)
{pad}    if left != right:
        return -1 if left < right else 1
{label_rule}'''


def _version_cases(params: dict[str, Any]) -> list[list[Any]]:
    pairs = [["1.0", "1.0"], ["1.10", "1.9"], ["1.9", "1.10"], ["1.0", "1.0.0"], ["2", "1.99.99"],
             ["1.0-rc1", "1.0"], ["1.0", "1.0-rc1"], ["1.0-alpha", "1.0-beta"], ["1.0-Beta", "1.0-alpha"],
             ["1.0-RC1", "1.0-rc1"], [" 1.2 ", "1.2"], ["", "1"], ["1..2", "1"], ["1.x", "1"], ["v1", "1"],
             ["1.0.0.1", "1"], ["0.0", "0"], ["3.2-rc1", "3.1"], ["10.0", "9.9"], ["1.2.3-rc2", "1.2.3-rc10"]]
    return pairs


# ------------------------------------------------------------------------------------------------ sizes
def _size_params(rng: random.Random) -> dict[str, Any]:
    return {"base": rng.choice((1024, 1000))}


def _size_source(params: dict[str, Any], bugs: frozenset[str]) -> str:
    base = params["base"]
    units = ["B", "KiB", "MiB", "GiB", "TiB"] if base == 1024 else ["B", "kB", "MB", "GB", "TB"]
    listed = ", ".join(units)
    kept = units[:-1] if "largest unit missing" in bugs else units
    below = "<=" if "base itself written in bytes" in bugs else "<"
    negative = "" if "negative size accepted" in bugs else (
        '    if n < 0:\n        raise ValueError("a size cannot be negative")\n')
    rollover = "" if "rounding never moves to the next unit" in bugs else (
        f"    if float(text) >= {base} and index < len(UNITS) - 1:\n"
        f"        value, index = value / {base}, index + 1\n        text = f\"{{value:.1f}}\"\n")
    return f'''"""Human-readable file sizes."""

UNITS = {kept!r}


def human_size(n):
    """Return the size of `n` bytes (an int) as text for people, in units of {base}: {listed}.

    Sizes below {base} bytes are written as the whole number and " B" ("0 B", "{base - 1} B"). Larger sizes are
    divided by {base} as often as needed to get a value below {base} (at most down to {units[-1]}) and written
    with one decimal and the unit, rounded as Python's f"{{value:.1f}}" rounds: "1.5 {units[1]}". If that rounding
    gives {base}.0, the next unit is used instead ("1.0 {units[2]}", not "{base}.0 {units[1]}"), except at
    {units[-1]}, the largest. Raise ValueError for a negative size.
    """
{negative}    if n {below} {base}:
        return f"{{n}} B"
    value, index = float(n), 0
    while value >= {base} and index < len(UNITS) - 1:
        value, index = value / {base}, index + 1
    text = f"{{value:.1f}}"
{rollover}    return f"{{text}} {{UNITS[index]}}"
'''


def _size_cases(params: dict[str, Any]) -> list[list[Any]]:
    base = params["base"]
    values = [0, 1, base - 1, base, base + base // 2, base * base - 1, base * base, base ** 3 * 5 // 2,
              base ** 4 * 3, base ** 5 * 2, base ** 4 - 1, -1, 10 ** 7, 123456789, base * 1000 - 1]
    return [[value] for value in values]


PROGRAMS = {
    "durations": Program("durations", ("durations", "timeparse", "duration_util"), "parse_duration",
                         ("one digit", "no spaces between parts", "case-sensitive units", "empty text accepted",
                          "repeated units accepted"), _duration_params, _duration_source, _duration_cases),
    "intervals": Program("intervals", ("intervals", "ranges", "spans"), "merge_intervals",
                         ("input order assumed sorted", "touching intervals kept apart",
                          "nested interval shrinks the union", "reversed pair accepted"),
                         _interval_params, _interval_source, _interval_cases),
    "versions": Program("versions", ("versions", "semver_lite", "vercmp"), "compare_versions",
                        ("numbers compared as text", "missing numbers not padded", "surrounding spaces rejected",
                         "labels ignored"), _version_params, _version_source, _version_cases),
    "sizes": Program("sizes", ("sizes", "humanize", "bytesize"), "human_size",
                     ("largest unit missing", "base itself written in bytes", "negative size accepted",
                      "rounding never moves to the next unit"), _size_params, _size_source, _size_cases),
}
