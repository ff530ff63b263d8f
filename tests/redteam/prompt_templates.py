"""Prompt templates and the constant answers a policy could guess for each (the no-constant rule, per template).

A family's tasks can hide a question whose answer never changes: if every workspace had six folders, "How many
folders are there below `project/`?" would be answered by "6" without looking. Counting constant wins per family
dilutes such a question among the family's others, so the rule is checked per *prompt template*: the tasks of a
family whose prompts are equal once the values a generator fills in are taken out.

`template_key(prompt)` takes the values out, in this order, each replaced by a placeholder:

1. a multiple-choice list after "Options:" (up to a blank line or the instructions) -> `<options>`;
2. text in backticks, double quotes or single quotes (an apostrophe inside a word is kept) -> `<q>`;
3. dates and times (2024-01-31, 2024-01-31T12:00:00Z, 12:00, 31/Jan/2024) -> `<date>`;
4. paths and file names (a token with a `/`, or a name with an extension such as `users.json`) -> `<path>`;
5. every token that holds a digit (numbers, ids, codes such as `E78.5`, IP addresses, versions) -> `<n>`;
6. proper names: a capitalised word that does not start a sentence (`Madrid`, `Ada Lovelace`) -> `<name>`;
7. the family's boilerplate: a sentence found in at least half of the family's prompts (the answer instructions)
   is set aside; the rest are the prompt's core words;
8. a core word found in fewer than `RARE_SHARE` of the family's prompts is a value (`<w>`; a run of values
   is one);
9. prompts whose core words match to `SIMILAR` or more (difflib's ratio, against the first prompt of a group) are
   one template: what differs between them (a drug, a finding, a column name) is a value. The key shows the
   words all of them share, and the boilerplate.

Steps 1 to 6 read one prompt; steps 7 to 9 read the family's prompts (`template_groups`), over every split, so
a template has the same key in train and test.

For each template, on each split, the *guesses* are: the most common gold answer of the tasks judged (the literal
rule) and of the template's train tasks (what a policy trained on the family has seen); for list answers also
the items found in at least half of those golds, and the most frequent items as many as a typical gold holds;
a one-cell table also as its value, and as a constant query for SQL's `submit(sql)`; option letters A-C for a
multiple-choice prompt; and `FIXED_CONSTANTS` ("none", "yes", "no", 0, "", []). A template with fewer than
`MIN_TASKS` tasks in the split is judged on both splits, one with fewer in all is reported as "too few".
`bench/redteam.py` prints the table and `tests/redteam/test_no_constant_wins.py` asserts that no guess wins more
than half of a template's judged tasks, on train and on test, for every env the registry knows.
"""

from __future__ import annotations

import difflib
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

RARE_SHARE = 0.1  # a core word in fewer of the family's prompts than this is a value
SIMILAR = 0.7  # core words matching this much make two prompts one template
BOILERPLATE_SHARE = 0.5  # a sentence in this share of a family's prompts is instructions, not question
# A template with fewer tasks in a split is judged on both splits together (`judged_groups`): among a handful of
# tasks a fair template's answer repeats by chance (a guess right 35% of the time wins 3 of 5 tasks one time in
# four), so a share above one half there says nothing. With 8 tasks that happens under 5% of the time.
MIN_TASKS = 8

_OPTIONS = re.compile(r"(Options:)\s.*?(?=\n\s*\n|\s{2,}Answer with|\Z)", re.DOTALL)
_QUOTED = re.compile(r"`[^`]*`|\"[^\"]*\"|(?<![\w'])'[^'\n]*'(?!\w)")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?Z?)?\b|\b\d{1,2}:\d{2}(?::\d{2})?\b"
                   r"|\b\d{1,2}/[A-Z][a-z]{2}/\d{4}\b")
_PATH = re.compile(r"(?<![\w<])(?:[\w.~-]*/[\w./~-]*|[\w-]+\.(?:[a-z]{1,5}))(?![\w>])")
_DIGITS = re.compile(r"(?<![<\w])[^\s<>]*\d[^\s<>]*")
_CAPITALISED = re.compile(r"(?<![.?!:\n>]\s)(?<!^)(?<=\s)[A-Z][\w'-]*")
_WORD = re.compile(r"(?<![<\w])[A-Za-z][\w'-]*(?![\w>])")


def _shape(prompt: str) -> str:
    """Steps 1 to 6 of the module docstring."""
    text = _OPTIONS.sub(r"\1 <options>", prompt)
    text = _QUOTED.sub("<q>", text)
    text = _DATE.sub("<date>", text)
    text = _PATH.sub("<path>", text)
    text = _DIGITS.sub("<n>", text)
    text = _CAPITALISED.sub("<name>", text)
    return text


def template_key(prompt: str) -> str:
    """The prompt with its values replaced by placeholders (steps 1 to 6 of the module docstring)."""
    text = re.sub(r"(?:<name>\s*)+<name>", "<name>", _shape(prompt))
    return re.sub(r"\s+", " ", text).strip()


def _sentences(shaped: str) -> list[str]:
    return [part.strip() for part in re.split(r"(?<=[.?!])\s+|\n+", shaped) if part.strip()]


def _words(text: str) -> list[str]:
    return re.findall(r"<\w+>|[\w'-]+", text.lower())


def template_groups(tasks: Iterable[Any]) -> dict[str, list[Any]]:
    """Tasks grouped by template, keyed "FAMILY: SHARED WORDS | BOILERPLATE" (steps 1 to 9)."""
    by_family: dict[str, list[Any]] = {}
    for task in sorted(tasks, key=lambda task: task.id):
        by_family.setdefault(task.family, []).append(task)
    groups: dict[str, list[Any]] = {}
    for family, members in sorted(by_family.items()):
        shaped = {task.id: template_key(task.prompt) for task in members}
        counts: Counter[str] = Counter()
        for text in shaped.values():
            counts.update(set(_sentences(text)))
        boilerplate = {sentence for sentence, count in counts.items() if count >= BOILERPLATE_SHARE * len(members)}
        cores = {task_id: _words(" ".join(sentence for sentence in _sentences(text) if sentence not in boilerplate))
                 for task_id, text in shaped.items()}
        seen: Counter[str] = Counter()
        for words in cores.values():
            seen.update(set(words))
        rare = {word for word, count in seen.items() if count < RARE_SHARE * len(members)}
        clusters: list[tuple[tuple[str, ...], list[str], list[str], list[Any]]] = []  # (plate, first, shared, tasks)
        for task in members:
            sentences = _sentences(shaped[task.id])
            plate = tuple(sentence for sentence in sentences if sentence in boilerplate)
            core: list[str] = []
            for word in cores[task.id]:
                word = "<w>" if word in rare else word
                if not (core and word == core[-1] and word.startswith("<")):
                    core.append(word)
            best, best_ratio = None, SIMILAR
            for cluster in clusters:
                if cluster[0] != plate:
                    continue
                matcher = difflib.SequenceMatcher(None, cluster[1], core, autojunk=False)
                if matcher.real_quick_ratio() >= best_ratio and matcher.quick_ratio() >= best_ratio:
                    ratio = matcher.ratio()
                    if ratio >= best_ratio:
                        best, best_ratio = cluster, ratio
            if best is None:
                clusters.append((plate, core, list(core), [task]))
                continue
            matcher = difflib.SequenceMatcher(None, best[2], core, autojunk=False)
            best[2][:] = [word for block in matcher.get_matching_blocks() for word in best[2][block.a:block.a + block.size]]
            best[3].append(task)
        for plate, _, shared, found in clusters:
            key = f"{family}: {' '.join(shared)}" + (f" | {' '.join(plate)}" if plate else "")
            while key in groups:
                key += "'"
            groups[key] = found
    return groups


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def natural_guesses(golds: Sequence[Any]) -> list[Any]:
    """What a policy that learned a template's answers could answer without looking: the most common gold, and
    for list answers the items found in at least half of the golds and the k most frequent items (k: the
    median gold's length). Each guess once, most common gold first."""
    if not golds:
        return []
    counts = Counter(_canonical(gold) for gold in golds)
    guesses = [json.loads(max(counts, key=lambda key: (counts[key], key)))]
    lists = [gold for gold in golds if isinstance(gold, list)]
    if lists:
        items: Counter[str] = Counter()
        for gold in lists:
            items.update({_canonical(item) for item in gold})
        ranked = sorted(items, key=lambda key: (-items[key], key))
        common = [json.loads(key) for key in ranked if items[key] * 2 >= len(lists)]
        typical = sorted(len(gold) for gold in lists)[len(lists) // 2]
        top = [json.loads(key) for key in ranked[:typical]]
        for guess in (common, top):
            if guess and _canonical(guess) not in {_canonical(known) for known in guesses}:
                guesses.append(guess)
    return guesses


# ------------------------------------------------------------------------------------- playing the guesses
FIXED_CONSTANTS: tuple[Any, ...] = ("none", "yes", "no", 0, "", [])
FIXED_QUERIES: tuple[str, ...] = ("SELECT NULL", "SELECT 0", "SELECT 1 WHERE 1 = 0", "SELECT ''")
_LETTERS = re.compile(r"Options:\s*A\.\s")


def env_ids() -> list[str]:
    """Every env an installed distribution registers (built-in domains and plugins), sorted. Envs that other test
    modules register directly (`agentgym.register` outside an entry point) are toys of those tests, not
    environments to train on, and are left out."""
    from agentgym.registry import installed

    return [record.id for record in installed()]


def _sql_literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def rows_query(rows: Any, limit: int = 60) -> str | None:
    """A query that returns `rows` (a list of rows, each a list of scalars) as constants, or None when the gold
    is not such a table or is too long."""
    if not isinstance(rows, list) or not rows or len(rows) > limit:
        return None
    if not all(isinstance(row, list) and row and all(not isinstance(v, (list, dict)) for v in row) for row in rows):
        return None
    return " UNION ALL ".join("SELECT " + ", ".join(_sql_literal(v) for v in row) for row in rows)


def _submit_tools(info: dict[str, Any], prompt: str) -> list[tuple[str, str]]:
    """(tool, its first argument) for each submit-like tool; only those the prompt names, when it names any."""
    found = []
    for schema in info.get("tools", []):
        function = schema.get("function", schema)
        name = function.get("name", "")
        if name.startswith("submit"):
            parameters = function.get("parameters", {})
            names = parameters.get("required", []) or list(parameters.get("properties", {}))
            found.append((name, names[0] if names else ""))
    named = [tool for tool in found if f"{tool[0]}(" in prompt]
    return named or found


def candidates(guesses: Sequence[Any], prompt: str, argument: str) -> list[Any]:
    """The constants to try for one task: for a tool taking SQL, fixed queries and the guesses (see
    `natural_guesses`) as constant queries; otherwise the guesses (a 1x1 table also as its one value), option
    letters for a multiple-choice prompt, and `FIXED_CONSTANTS`."""
    if argument == "sql":
        queries = [rows_query(guess) for guess in guesses]
        return list(dict.fromkeys([*(q for q in queries if q), *FIXED_QUERIES]))
    extra: list[Any] = []
    for guess in guesses:
        if isinstance(guess, list) and len(guess) == 1 and isinstance(guess[0], list) and len(guess[0]) == 1:
            extra.append(guess[0][0])
    if _LETTERS.search(prompt):
        extra += ["A", "B", "C"]
    seen: dict[str, Any] = {}
    for value in (*guesses, *extra, *FIXED_CONSTANTS):
        seen.setdefault(_canonical(value), value)
    return list(seen.values())


def judged_groups(tasks: Sequence[Any], split: str | None) -> dict[str, tuple[list[Any], list[Any], str]]:
    """Per template: (its train golds, the tasks judged, what was judged).

    The judged tasks are the template's tasks of `split` (all splits when None); a template with fewer than
    `MIN_TASKS` there is judged on all its tasks ("pooled"), and one with fewer than `MIN_TASKS` in all is
    "too few" (no answer is common or rare among two tasks: reported, not judged). The guesses come from the
    judged tasks' golds (their most common gold: the literal rule) and from the template's train golds (what a
    policy trained on the family has seen)."""
    out: dict[str, tuple[list[Any], list[Any], str]] = {}
    for key, members in template_groups(tasks).items():
        judged = [task for task in members if split is None or task.split == split]
        what = split or "all"
        if len(judged) < MIN_TASKS:
            judged, what = members, "pooled" if len(members) >= MIN_TASKS else "too few"
        out[key] = ([task.answer for task in members if task.split == "train"], judged, what)
    return out


def constant_template_table(env_id: str, *, split: str | None = None, per_template: int | None = None,
                            seed: int = 0, answers_only: bool = False,
                            **make_kwargs: Any) -> dict[str, dict[str, Any]]:
    """Per prompt template of `env_id`: tasks judged, the best constant guess and the share it wins.

    The guesses are those of `judged_groups`: the judged tasks' own most common gold and common items, and the
    template's train golds'.

    Every guess is played through the public API: `env.reset(options={"task_id": ...})`, then one submit step
    at the first turn; a win is a terminated episode with reward > 0 or an answer score of 1 (the real verifier,
    as in training). A template whose golds are all None (tasks graded on state, not on an answer) is played
    with the bare submit, the do-nothing answer. `per_template` samples that many judged tasks per template.

    `answers_only` (for CLI-v0, whose episodes start a sandbox each: seconds apiece on a loaded machine) skips
    the templates graded on state and scores each guess with the task's registered verifier directly
    (`agentgym.rewards.verify(task, guess, None)`): a CLI answer task has no state or test check, so its
    verifier reads the answer alone, exactly as in an episode. The slow suite plays every guess through `step`.
    """
    import random

    import gymnasium as gym

    import agentgym  # noqa: F401  (registers every env)
    from agentgym.rewards import verify

    env = gym.make(env_id, **make_kwargs)
    try:
        tasks = list(env.unwrapped.task_set)
        rng = random.Random(seed)
        table: dict[str, dict[str, Any]] = {}
        for key, (train, judged, what) in sorted(judged_groups(tasks, split).items()):
            golds = [task.answer for task in judged]
            guesses = [*natural_guesses(golds), *natural_guesses(train)]
            if per_template is not None and len(judged) > per_template:
                judged = rng.sample(sorted(judged, key=lambda task: task.id), per_template)
            wins: Counter[str] = Counter()
            if answers_only:
                judged = [task for task in judged if task.answer is not None]
                if not judged:
                    continue
                for task in judged:
                    for value in candidates(guesses, task.prompt, "answer"):
                        label = f"submit({json.dumps(value, default=str)[:80]})"
                        wins[label] += int(verify(task, value, None).value >= 1.0)
                best = max(wins, key=lambda label: (wins[label], label))
                table[key] = {"family": key.split(":", 1)[0], "tasks": len(judged), "judged": what,
                              "best_constant": best, "best_share": wins[best] / len(judged)}
                continue
            for task in judged:
                prompt, info = env.reset(seed=0, options={"task_id": task.id})
                tried: list[tuple[str, dict[str, Any]]] = []
                for tool, argument in _submit_tools(info, str(prompt)):
                    if task.answer is None and all(gold is None for gold in golds) or not argument:
                        tried.append((f"{tool}()", {}))
                        continue
                    for value in candidates(guesses, str(prompt), argument):
                        tried.append((f"{tool}({json.dumps(value, default=str)[:80]})", {argument: value}))
                for position, (label, arguments) in enumerate(tried):
                    if position:
                        env.reset(seed=0, options={"task_id": task.id})
                    _, reward, terminated, _, step_info = env.step({"name": label.split("(")[0],
                                                                    "arguments": arguments})
                    answer = float((step_info.get("reward_breakdown") or {}).get("answer", 0.0))
                    wins[label] += int(bool(terminated) and (float(reward) > 0 or answer >= 1.0))
            best = max(wins, key=lambda label: (wins[label], label)) if wins else ""
            table[key] = {"family": key.split(":", 1)[0], "tasks": len(judged), "judged": what,
                          "best_constant": best, "best_share": wins.get(best, 0) / len(judged) if judged else 0.0}
        return table
    finally:
        env.close()
