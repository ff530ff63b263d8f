"""Readers of the medical QA benchmarks people report on, into ClinicalQA-v0 tasks.

- MedQA-style JSON Lines (MedQA, and the many benchmarks published in its shape, e.g. AfriMedQA): `question`,
  `options` (an object keyed by letter, or a list), `answer_idx` (the gold letter) and optionally `answer`
  (the gold text, checked against the letter).
- PubMedQA's `ori_pqal.json`: an object keyed by PubMed id, each with `QUESTION`, `CONTEXTS` and
  `final_decision` (yes / no / maybe); with the official `test_ground_truth.json`, its ids form the test split.
- MedMCQA's JSON lines: `question`, `opa`..`opd`, `cop` (the correct option: 1-4 in the published files, 0-3
  in some copies; see `cop_base`).

Every reader takes the whole file: a record it cannot use is left out with the reason, never an exception that
stops the import. It keeps the benchmark's split where the files give one, and computes the constant baselines the benchmark has (`constant_baseline`), so they are reported
rather than hidden. Each task's solution submits the gold option's text, which the oracle replays.

Questions that name an option. Real exam questions do ("previously treated with paroxetine", an option of a
later question), and the verifier already stops the echo attack: a sentence cannot choose an option the
question names, only its letter or exact text can. What is left out is what gives the answer away:
- a question that names the correct option alone, when in that file the option a question names is the
  answer far more often than chance (so "choose what the question mentions" is a shortcut a policy could learn);
  in MedQA's test split it is not (4 of 21 questions that name one option name the answer, about chance);
- an option that the prompt's fixed instruction names, when it is the answer (echoing the instruction would
  choose it).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym import Task

from ..tasks.common import INSTRUCTION, choice_task
from ..verify import LETTERS, named_options, option_key, read_choice

YES_NO_MAYBE = ("yes", "no", "maybe")
_PLACEHOLDERS = frozenset({"n/a", "n.a", "na"})
# A file's "choose the option the question names" shortcut is a leak when its success over the questions that name
# exactly one option is this unlikely under chance (one-sided binomial tail).
NAMED_SHORTCUT_ALPHA = 0.01


@dataclass
class ImportReport:
    """What an import kept, what it left out (with the reason for each), and notes on how it was read."""

    tasks: list[Task] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)  # (record id, reason)
    notes: list[str] = field(default_factory=list)
    # (task, gold position, options the question names) of each kept task whose question names one
    named_in_question: list[tuple[Task, int, frozenset[int]]] = field(default_factory=list)

    def fail(self, record: str, reason: str) -> None:
        """Leave a record out, saying why: the reason's kind is its text up to the first colon."""
        self.failures.append((record, reason))

    def summary(self) -> dict[str, Any]:
        """Counts per split, the left-out count by kind of reason, and the constant baseline."""
        reasons = Counter(reason.split(":")[0] for _, reason in self.failures)
        return {"imported": len(self.tasks), "splits": dict(Counter(task.split for task in self.tasks)),
                "left_out": len(self.failures), "left_out_by_reason": dict(reasons),
                "constant_baseline": constant_baseline(self.tasks), "notes": list(self.notes)}


def constant_baseline(tasks: Sequence[Task]) -> dict[str, Any]:
    """What a constant policy scores: the most common gold text and its share, the chance of a fixed letter
    once options are shuffled (mean 1/options), and the best fixed letter in the benchmark's own order."""
    if not tasks:
        return {}
    answers = Counter(option_key(task.answer) for task in tasks)
    text, count = answers.most_common(1)[0]
    letters = Counter(task.metadata.get("original_letter", "") for task in tasks if task.metadata.get("original_letter"))
    baseline: dict[str, Any] = {
        "most_common_answer": text, "most_common_share": round(count / len(tasks), 4),
        "shuffled_letter_chance": round(sum(1 / len(task.metadata["options"]) for task in tasks) / len(tasks), 4),
    }
    if letters:
        letter, letter_count = letters.most_common(1)[0]
        baseline["best_letter_in_original_order"] = letter
        baseline["best_letter_share"] = round(letter_count / len(tasks), 4)
    return baseline


def split_from_name(path: Path) -> str | None:
    """"train", "dev" or "test" when the file's name says so (train.jsonl, dev.json, US_test.jsonl...)."""
    stem = path.stem.lower()
    for word, split in (("train", "train"), ("dev", "dev"), ("valid", "dev"), ("test", "test")):
        if word in stem:
            return split
    return None


def _json_lines(path: Path, report: ImportReport, prefix: str) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError:
                report.fail(f"{prefix}:{number}", "not UTF-8")
                continue
            if not line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                report.fail(f"{prefix}:{number}", f"invalid JSON: {error.msg}")
                continue
            if not isinstance(record, dict):
                report.fail(f"{prefix}:{number}", "not a JSON object")
                continue
            yield number, record


def _problem_with_options(options: Sequence[str]) -> str | None:
    if len(options) < 2:
        return "fewer than two options"
    keys = [option_key(option) for option in options]
    if any(not key for key in keys):
        return "an empty option"
    if len(set(keys)) != len(keys):
        return "two options read the same (case and spacing aside), so an answer could not tell them apart"
    if any(len(key) == 1 and key.isalpha() for key in keys):
        return "an option's text is a single letter, which reads as a letter answer"
    return None


def _make(report: ImportReport, seen: set[str], *, task_id: str, family: str, split: str, question: Any,
          options: Sequence[str], gold: str, contexts: Sequence[str] = (), metadata: dict[str, Any]) -> None:
    if not isinstance(question, str) or not question.strip():
        report.fail(task_id, "missing question")
        return
    problem = _problem_with_options(options)
    if problem:
        report.fail(task_id, problem)
        return
    if task_id in seen:
        report.fail(task_id, "duplicate id: an earlier record has the same id")
        return
    keys = [option_key(option) for option in options]
    gold_index = keys.index(option_key(gold))
    if read_choice(INSTRUCTION, options, question) == gold_index:
        report.fail(task_id, f"the prompt's instruction names the correct option: {gold[:60]!r} (an answer echoing "
                             "the instruction would choose it)")
        return
    try:
        task = choice_task(task_id=task_id, family=family, split=split, question=question.strip(), options=list(options),
                           answer=gold, contexts=contexts, metadata={"benchmark": family, **metadata},
                           question_may_name_options=True)
    except ValueError as error:  # a record the task shape refuses is left out, never the end of the import
        report.fail(task_id, f"not a valid task: {str(error).removeprefix(task_id + ': ')}")
        return
    seen.add(task_id)
    report.tasks.append(task)
    named = frozenset(named_options(option_key(question), keys))
    if named:
        report.named_in_question.append((task, gold_index, named))


def _binomial_tail(successes: int, trials: int, chance: float) -> float:
    """P(X >= successes) for X ~ Binomial(trials, chance)."""
    return sum(math.comb(trials, k) * chance**k * (1 - chance) ** (trials - k) for k in range(successes, trials + 1))


def screen_named_answers(report: ImportReport) -> None:
    """Leave out the questions that name the correct option alone when, in this file, that is a shortcut: the option
    a question names is the answer more often than chance could explain (`NAMED_SHORTCUT_ALPHA`). Otherwise they
    stay, with a note saying how often the shortcut would have been right."""
    single = [(task, gold, named) for task, gold, named in report.named_in_question if len(named) == 1]
    if not single:
        return
    wins = [task for task, gold, named in single if named == {gold}]
    chance = sum(1 / len(task.metadata["options"]) for task, _, _ in single) / len(single)
    tail = _binomial_tail(len(wins), len(single), chance)
    shortcut = (f"choosing the option the question names is right for {len(wins)} of the {len(single)} questions "
                f"that name exactly one option (chance {chance:.0%})")
    if wins and tail < NAMED_SHORTCUT_ALPHA:
        dropped = {task.id for task in wins}
        report.tasks = [task for task in report.tasks if task.id not in dropped]
        for task in wins:
            report.fail(task.id, f"the question names the correct option alone: {task.answer[:60]!r}, and in this "
                                 f"file {shortcut}, a shortcut a policy could learn")
    elif wins:
        report.notes.append(f"kept the {len(wins)} questions that name the correct option alone: "
                            f"{shortcut}, so naming gives nothing away")


def _option_texts(raw: Any) -> tuple[list[str], list[str]] | None:
    """(letters, texts) of a MedQA `options` value: {"A": text, ...}, [text, ...] or [{"key", "value"}, ...]."""
    if isinstance(raw, dict):
        pairs = sorted((str(key).strip().upper(), value) for key, value in raw.items())
    elif isinstance(raw, list) and all(isinstance(item, dict) and "key" in item and "value" in item for item in raw):
        pairs = [(str(item["key"]).strip().upper(), item["value"]) for item in raw]
    elif isinstance(raw, list):
        pairs = list(zip(LETTERS, raw, strict=False))
    else:
        return None
    # Files converted to five options pad shorter questions with "N/A": a placeholder, not an option.
    pairs = [(letter, value) for letter, value in pairs
             if value is not None and str(value).strip() and option_key(value) not in _PLACEHOLDERS]
    if not all(isinstance(value, (str, int, float)) for _, value in pairs):
        return None
    return [letter for letter, _ in pairs], [str(value).strip() for _, value in pairs]


def read_medqa(path: Path, *, name: str = "medqa", split: str | None = None) -> ImportReport:
    """MedQA-style JSON Lines (see the module docstring). `split` overrides the split the file name gives."""
    report = ImportReport()
    chosen_split = split or split_from_name(path)
    if chosen_split is None:
        chosen_split = "test"
        report.notes.append(f"the file name {path.name!r} names no split; every task is split 'test' (use --split)")
    seen: set[str] = set()
    for number, record in _json_lines(path, report, f"{name}:{path.name}"):
        identifier = record.get("realidx") or record.get("id") or record.get("qid") or f"{number:05d}"
        task_id = f"{name}-{str(identifier)[:64]}"
        parsed = _option_texts(record.get("options"))
        if parsed is None:
            report.fail(task_id, "options is not an object of letter: text (or a list of texts)")
            continue
        letters, texts = parsed
        gold_letter = str(record.get("answer_idx", "")).strip().upper()
        gold_text = record.get("answer")
        if gold_letter in letters:
            gold = texts[letters.index(gold_letter)]
            if isinstance(gold_text, str) and gold_text.strip() and option_key(gold_text) != option_key(gold):
                report.fail(task_id, f"answer text disagrees with answer_idx {gold_letter}: "
                                     f"{gold_text[:60]!r} vs {gold[:60]!r}")
                continue
        elif isinstance(gold_text, str) and [option_key(t) for t in texts].count(option_key(gold_text)) == 1:
            gold = texts[[option_key(t) for t in texts].index(option_key(gold_text))]
            gold_letter = letters[texts.index(gold)]
        else:
            report.fail(task_id, f"no gold: answer_idx {gold_letter or '(missing)'} is not one of the "
                                 f"options {', '.join(letters)}")
            continue
        metadata = {"original_letter": gold_letter, "source_file": path.name}
        if isinstance(record.get("meta_info"), str):
            metadata["meta_info"] = record["meta_info"]
        _make(report, seen, task_id=task_id, family=name, split=str(record.get("split") or chosen_split),
              question=record.get("question"), options=texts, gold=gold, metadata=metadata)
    screen_named_answers(report)
    return report


def _load_object(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not a JSON file ({error})") from None
    if not isinstance(data, dict):
        raise ValueError(  # noqa: TRY004 (a wrong file is a value problem: the command shows the message)
            f"{path}: expected a JSON object keyed by PubMed id, got a {type(data).__name__}")
    return data


def read_pubmedqa(path: Path, *, test_split: Path | None = None, name: str = "pubmedqa") -> ImportReport:
    """PubMedQA's ori_pqal.json; with `test_split` (test_ground_truth.json) its ids are "test", the rest
    "train" (PubMedQA's cross-validation part); without it every item is split "unsplit"."""
    report = ImportReport()
    data = _load_object(path)
    official: dict[str, Any] = {}
    if test_split is not None:
        official = _load_object(test_split)
        missing = sorted(set(official) - set(data))
        if missing:
            report.notes.append(f"{len(missing)} test-split ids are not in {path.name} (e.g. {missing[0]})")
    else:
        report.notes.append("no test-split file: every item is split 'unsplit' (give test_ground_truth.json with "
                            "--test-split to keep PubMedQA's official 500-item test split)")
    seen: set[str] = set()
    for pmid, record in data.items():
        task_id = f"{name}-{pmid}"
        if not isinstance(record, dict):
            report.fail(task_id, "not a JSON object")
            continue
        decision = str(record.get("final_decision") or "").strip().lower()
        if decision not in YES_NO_MAYBE:
            report.fail(task_id, f"final_decision is {record.get('final_decision')!r}, not yes/no/maybe "
                                 "(unlabelled or artificial PubMedQA files have none)")
            continue
        if pmid in official and str(official[pmid]).strip().lower() != decision:
            report.fail(task_id, f"the test-split file says {official[pmid]!r}, final_decision says "
                                 f"{decision!r}")
            continue
        contexts = record.get("CONTEXTS") or []
        if not isinstance(contexts, list) or not all(isinstance(text, str) for text in contexts):
            report.fail(task_id, "CONTEXTS is not a list of passages")
            continue
        split = ("test" if pmid in official else "train") if test_split is not None else "unsplit"
        _make(report, seen, task_id=task_id, family=name, split=split, question=record.get("QUESTION"),
              options=list(YES_NO_MAYBE), gold=decision, contexts=contexts,
              metadata={"pmid": str(pmid), "year": record.get("YEAR")})
    screen_named_answers(report)
    return report


def _medmcqa_cop_base(records: Iterable[dict[str, Any]]) -> int | None:
    values = {record.get("cop") for record in records if isinstance(record.get("cop"), int)}
    if 0 in values:
        return 0
    if 4 in values:
        return 1
    return None


def read_medmcqa(path: Path, *, cop_base: int | None = None, name: str = "medmcqa",
                 split: str | None = None) -> ImportReport:
    """MedMCQA JSON lines. `cop_base`: 1 when `cop` counts options from 1 (the published files), 0 when from 0
    (some copies); None reads it from the file (a 0 means 0-based, a 4 means 1-based, else 1)."""
    report = ImportReport()
    records = list(_json_lines(path, report, f"{name}:{path.name}"))
    base = cop_base if cop_base is not None else _medmcqa_cop_base(record for _, record in records)
    if base is None:
        base = 1
        report.notes.append("cop values alone do not say whether they count from 0 or 1; read as 1-4 as in the "
                            "published files (use --cop-base 0 otherwise)")
    chosen_split = split or split_from_name(path) or "test"
    seen: set[str] = set()
    for number, record in records:
        task_id = f"{name}-{str(record.get('id') or f'{number:05d}')[:64]}"
        texts = [str(record.get(key) or "").strip() for key in ("opa", "opb", "opc", "opd")]
        cop = record.get("cop")
        if not isinstance(cop, int) or isinstance(cop, bool) or not 0 <= cop - base < len(texts):
            report.fail(task_id, f"no answer: cop is {cop!r} (MedMCQA's test answers are not public)")
            continue
        metadata = {"original_letter": LETTERS[cop - base], "source_file": path.name,
                    "subject": record.get("subject_name"), "choice_type": record.get("choice_type")}
        _make(report, seen, task_id=task_id, family=name, split=chosen_split, question=record.get("question"),
              options=texts, gold=texts[cop - base], metadata=metadata)
    screen_named_answers(report)
    return report
