"""`agentgym tasks import medqa|pubmedqa|medmcqa`: the benchmark's split is kept, what cannot be imported is
reported with the reason, the constant baseline is printed, and the oracle scores 1.0 on everything imported.

The shared samples (AfriMedQA in MedQA's shape, PubMedQA's ori_pqal.json) are used where present; the
failure cases run on small files written here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from agentgym_clinical.data.benchmarks import read_medmcqa, read_medqa, read_pubmedqa
from click.testing import CliRunner

import agentgym  # noqa: F401
from agentgym import load_tasks
from agentgym.agents import make_agent
from agentgym.cli import main
from agentgym.rollout import run_episode

SAMPLES = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "samples"
MEDQA_SAMPLE = SAMPLES / "medqa_sample.jsonl"
PUBMEDQA_SAMPLE = SAMPLES / "pubmedqa_sample.json"


def _oracle_rewards(task_file: Path, **make_kwargs: Any) -> list[float]:
    env = gym.make("ClinicalQA-v0", tasks=str(task_file), **make_kwargs)
    try:
        oracle = make_agent("oracle")
        return [run_episode(env, oracle, task_id=task.id, seed=3).reward for task in env.unwrapped.task_set]
    finally:
        env.close()


def _write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join((json.dumps(r) if not isinstance(r, str) else r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.mark.skipif(not MEDQA_SAMPLE.exists(), reason="the MedQA-shaped sample is not beside the clone")
def test_medqa_sample_imports_and_the_oracle_solves_it(tmp_path: Path) -> None:
    out = tmp_path / "afrimedqa.jsonl"
    result = CliRunner().invoke(main, ["tasks", "import", "medqa", str(MEDQA_SAMPLE), "--out", str(out),
                                       "--name", "afrimedqa", "--split", "train"])
    assert result.exit_code == 0, result.output
    assert "wrote 20 afrimedqa tasks" in result.output and "constant baseline:" in result.output
    tasks = load_tasks(out)
    assert {task.split for task in tasks} == {"train"} and {task.family for task in tasks} == {"afrimedqa"}
    padded = next(task for task in tasks if task.metadata["options"][:2] == ["True", "False"])
    assert len(padded.metadata["options"]) == 2  # the "N/A" padding is not an option
    assert _oracle_rewards(out) == [1.0] * 20


@pytest.mark.skipif(not PUBMEDQA_SAMPLE.exists(), reason="the PubMedQA sample is not beside the clone")
def test_pubmedqa_sample_keeps_the_official_split_and_reports_the_yes_prior(tmp_path: Path) -> None:
    data = json.loads(PUBMEDQA_SAMPLE.read_text())
    test_ids = sorted(data)[:5]
    truth = tmp_path / "test_ground_truth.json"
    truth.write_text(json.dumps({pmid: data[pmid]["final_decision"] for pmid in test_ids}))
    out = tmp_path / "pqa.jsonl"
    result = CliRunner().invoke(main, ["tasks", "import", "pubmedqa", str(PUBMEDQA_SAMPLE), "--test-split",
                                       str(truth), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "'yes' is the answer of 50.0% of tasks" in result.output
    tasks = load_tasks(out)
    assert sorted(task.id for task in tasks if task.split == "test") == [f"pubmedqa-{pmid}" for pmid in test_ids]
    assert all(task.metadata["contexts"] and task.metadata["options"] == ["yes", "no", "maybe"] for task in tasks)
    assert _oracle_rewards(out, kb="task") == [1.0] * 20
    assert _oracle_rewards(out) == [1.0] * 20


def test_medqa_failures_are_reported_with_reasons(tmp_path: Path) -> None:
    source = _write_jsonl(tmp_path / "dev.jsonl", [
        {"question": "Which vitamin deficiency causes scurvy?", "options": {"A": "Vitamin C", "B": "Vitamin D"},
         "answer_idx": "A", "answer": "Vitamin C"},
        {"question": "Q without gold", "options": {"A": "x1", "B": "x2"}, "answer_idx": "F"},
        {"question": "Q with clashing gold", "options": {"A": "x1", "B": "x2"}, "answer_idx": "A", "answer": "x2"},
        {"question": "Q with twin options", "options": {"A": "Same", "B": "same "}, "answer_idx": "A"},
        {"question": "", "options": {"A": "x1", "B": "x2"}, "answer_idx": "A"},
        {"question": "Q with bad options", "options": "A or B", "answer_idx": "A"},
        "{not json",
        [1, 2],
    ])
    report = read_medqa(source)
    assert [task.split for task in report.tasks] == ["dev"] and report.tasks[0].answer == "Vitamin C"
    reasons = [reason for _, reason in report.failures]
    assert len(reasons) == 7
    for expected in ("no gold", "disagrees with answer_idx", "two options read the same", "missing question",
                     "options is not an object", "invalid JSON", "not a JSON object"):
        assert any(expected in reason for reason in reasons), (expected, reasons)


def test_medmcqa_reads_one_based_cop_and_leaves_out_unanswered_rows(tmp_path: Path) -> None:
    rows = [{"id": f"q{n}", "question": f"Question {n}?", "opa": f"a{n}", "opb": f"b{n}", "opc": f"c{n}",
             "opd": f"d{n}", "cop": cop, "subject_name": "Medicine"} for n, cop in enumerate([1, 4, 2, 3])]
    rows.append({"id": "q-test", "question": "Hidden?", "opa": "a", "opb": "b", "opc": "c", "opd": "d", "cop": -1})
    source = _write_jsonl(tmp_path / "train.json", rows)
    report = read_medmcqa(source)
    assert [task.answer for task in report.tasks] == ["a0", "d1", "b2", "c3"]
    assert {task.split for task in report.tasks} == {"train"}
    assert report.failures == [("medmcqa-q-test", "no answer: cop is -1 (MedMCQA's test answers are not public)")]
    zero_based = read_medmcqa(_write_jsonl(tmp_path / "hf.json", [{**rows[0], "cop": 0}, {**rows[1], "cop": 3}]))
    assert [task.answer for task in zero_based.tasks] == ["a0", "d1"]
    out = tmp_path / "medmcqa.jsonl"
    result = CliRunner().invoke(main, ["tasks", "import", "medmcqa", str(source), "--out", str(out)])
    assert result.exit_code == 0 and "left out 1 of 5 records" in result.stderr, result.output
    assert _oracle_rewards(out) == [1.0] * 4


def test_pubmedqa_without_labels_and_a_wrong_file_are_clear(tmp_path: Path) -> None:
    source = tmp_path / "ori_pqau.json"
    source.write_text(json.dumps({"1": {"QUESTION": "Q?", "CONTEXTS": ["c"]}}))
    report = read_pubmedqa(source)
    assert not report.tasks and "final_decision is None" in report.failures[0][1]
    result = CliRunner().invoke(main, ["tasks", "import", "pubmedqa", str(source), "--out", str(tmp_path / "o.jsonl")])
    assert result.exit_code != 0 and "no pubmedqa task could be imported" in result.output
    listing = tmp_path / "list.json"
    listing.write_text("[1, 2]")
    result = CliRunner().invoke(main, ["tasks", "import", "pubmedqa", str(listing), "--out", str(tmp_path / "o.jsonl")])
    assert result.exit_code != 0 and "expected a JSON object keyed by PubMed id" in result.output


def _vignette(number: int, mention: str = "") -> str:
    """A MedQA-like question; `mention` puts an option's text in the history, as real vignettes do."""
    history = f" She has a history of {mention.lower()}." if mention else ""
    return (f"A {30 + number}-year-old woman presents with fatigue for {number + 2} weeks.{history} "
            "Which of the following is the most appropriate next step?")


def _medqa_record(number: int, gold: str, distractors: list[str], mention: str = "") -> dict[str, Any]:
    options = dict(zip("ABCD", [gold, *distractors], strict=True))
    return {"question": _vignette(number, mention), "options": options, "answer_idx": "A", "answer": gold,
            "realidx": str(number)}


def _named_option_file(path: Path, *, gold_named: int, distractor_named: int, plain: int) -> Path:
    """Questions shaped like MedQA's real ones: some name a distractor ('Travel to Africa', a drug taken before),
    some name the correct option alone ('previously medicated with paroxetine'), the rest name none."""
    records, number = [], 0
    for _ in range(gold_named):
        number += 1
        records.append(_medqa_record(number, f"Paroxetine {number}", [f"Drug x{number}", f"Drug y{number}",
                                                                        f"Drug z{number}"], f"Paroxetine {number}"))
    for _ in range(distractor_named):
        number += 1
        records.append(_medqa_record(number, f"Radiation {number}", [f"Travel to Africa {number}",
                                                                     f"Smoking {number}", f"Obesity {number}"],
                                     f"Travel to Africa {number}"))
    for _ in range(plain):
        number += 1
        records.append(_medqa_record(number, f"Biopsy {number}", [f"Pap smear {number}", f"CT scan {number}",
                                                                  f"Reassurance {number}"]))
    return _write_jsonl(path, records)


def test_medqa_questions_that_name_an_option_are_imported_and_echo_still_scores_0(tmp_path: Path) -> None:
    # MedQA's test split: 18 questions name a distractor and 4 name the answer alone, among 1,273; here the same
    # mix, in which "choose the option the question names" is right no more often than chance.
    source = _named_option_file(tmp_path / "US_test.jsonl", gold_named=4, distractor_named=18, plain=18)
    out = tmp_path / "medqa.jsonl"
    result = CliRunner().invoke(main, ["tasks", "import", "medqa", str(source), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "wrote 40 medqa tasks" in result.stdout and "right for 4 of the 22 questions" in result.stdout
    assert not result.stderr  # nothing left out
    assert json.loads((tmp_path / "medqa.import.json").read_text())["left_out"] == 0
    assert _oracle_rewards(out) == [1.0] * 40
    # The verifier still refuses the echo: a sentence holding the option the question names chooses nothing.
    env = gym.make("ClinicalQA-v0", tasks=str(out))
    try:
        for task_id, echo in (("medqa-1", "Paroxetine 1"), ("medqa-5", "Travel to Africa 5")):
            env.reset(seed=0, options={"task_id": task_id})
            question = env.unwrapped.task.metadata["question"]
            _, reward, *_ = env.step({"name": "submit", "arguments": {"answer": f"{question} It is {echo}."}})
            assert reward == 0.0, (task_id, echo)
    finally:
        env.close()


def test_medqa_file_whose_questions_name_their_answer_leaves_those_out(tmp_path: Path) -> None:
    # A file where the option a question names is the answer far more often than chance: a learnable shortcut.
    source = _named_option_file(tmp_path / "test.jsonl", gold_named=8, distractor_named=1, plain=5)
    report = read_medqa(source)
    assert len(report.tasks) == 6 and {task.answer.split()[0] for task in report.tasks} == {"Radiation", "Biopsy"}
    assert len(report.failures) == 8
    assert all(reason.startswith("the question names the correct option alone") for _, reason in report.failures)
    assert "right for 8 of the 9 questions" in report.failures[0][1]


def test_an_option_the_prompt_instruction_names_is_left_out_only_when_it_is_the_answer(tmp_path: Path) -> None:
    source = _write_jsonl(tmp_path / "test.jsonl", [
        {"question": "How many doses are needed after a complete series?", "options": {"A": "0", "B": "1 dose",
                                                                                        "C": "2 doses"},
         "answer_idx": "A", "realidx": "zero-gold"},
        {"question": "How many doses are needed for a full series?", "options": {"A": "0", "B": "1 dose",
                                                                                   "C": "2 doses"},
         "answer_idx": "C", "realidx": "zero-distractor"},
    ])
    report = read_medqa(source)
    assert [task.id for task in report.tasks] == ["medqa-zero-distractor"]
    assert report.failures[0][0] == "medqa-zero-gold" and "instruction names the correct option" in report.failures[0][1]


def test_an_import_takes_the_whole_file_and_reports_every_kind_on_stderr_and_in_the_sidecar(tmp_path: Path) -> None:
    good = [_medqa_record(number, f"Biopsy {number}", [f"Pap smear {number}", f"CT {number}", f"MRI {number}"])
            for number in range(30)]
    bad: list[Any] = [{"question": "Figure?", "options": {"A": "A", "B": "B", "C": "C"}, "answer_idx": "B"}] * 3
    bad += ["{broken", {"question": "No gold?", "options": {"A": "x1", "B": "x2"}, "answer_idx": "Q"}]
    source = _write_jsonl(tmp_path / "test.jsonl", [*good[:10], *bad, *good[10:]])
    out = tmp_path / "t.jsonl"
    result = CliRunner().invoke(main, ["tasks", "import", "medqa", str(source), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "wrote 30 medqa tasks" in result.stdout and "left out" not in result.stdout
    assert "left out 5 of 35 records" in result.stderr
    assert "3 x an option's text is a single letter" in result.stderr and "1 x invalid JSON" in result.stderr
    sidecar = json.loads((tmp_path / "t.import.json").read_text())
    assert sidecar["imported"] == 30 and sidecar["left_out"] == 5 and len(sidecar["left_out_records"]) == 5
    assert sidecar["left_out_by_reason"]["an option's text is a single letter, which reads as a letter answer"] == 3
