"""ClinicalQA-v0 as a user meets it: the oracle solves every task, every legal answer form scores (an option's
letter, its full text, a part of its text no other option holds), an answer that names several options (or
none) does not, option order is seeded and balanced, splits share no fact."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import gymnasium as gym
import pytest
from agentgym_clinical.tasks import FAMILIES, default_tasks, generate
from agentgym_clinical.tools import rank_passages
from agentgym_clinical.verify import read_choice

import agentgym  # noqa: F401  (registers ClinicalQA-v0)
from agentgym import Task, TaskSet
from agentgym.agents import make_agent
from agentgym.rollout import run_episode


@pytest.fixture(scope="module")
def env() -> Any:
    made = gym.make("ClinicalQA-v0")
    yield made
    made.close()


def _shown_options(prompt: str) -> dict[str, str]:
    block = prompt.split("Options:\n", 1)[1].split("\n\n", 1)[0]
    return dict(re.match(r"([A-Z])\. (.*)", line).groups() for line in block.splitlines())  # type: ignore[union-attr]


def _submit(env: Any, task_id: str, answer: Any, seed: int = 0) -> tuple[float, dict[str, Any]]:
    env.reset(seed=seed, options={"task_id": task_id})
    _, reward, terminated, _, info = env.step({"name": "submit", "arguments": {"answer": answer}})
    assert terminated
    return reward, info


def test_registered_with_its_generator_and_tools(env: Any) -> None:
    from agentgym.registry import env_record

    record = env_record("ClinicalQA-v0")
    assert record.distribution == "agentgym-clinical" and record.generator == "agentgym_clinical.tasks:generate"
    _, info = env.reset(seed=0)
    names = [schema["function"]["name"] for schema in info["tools"]]
    assert names == ["search_knowledge", "calculate", "lookup_code", "submit"]
    assert set(env.unwrapped.task_set.families()) == set(FAMILIES)


def test_oracle_solves_every_generated_task(env: Any) -> None:
    oracle = make_agent("oracle")
    rewards = {}
    for task in env.unwrapped.task_set:
        result = run_episode(env, oracle, task_id=task.id, seed=7)
        rewards[task.id] = result.reward
    assert len(rewards) == len(default_tasks(0)) > 1000
    assert all(reward == 1.0 for reward in rewards.values()), [k for k, v in rewards.items() if v != 1.0][:5]


def test_every_legal_form_of_the_right_answer_scores(env: Any) -> None:
    task_id = "clinical-drug_class-metformin"
    prompt, _ = env.reset(seed=3, options={"task_id": task_id})
    letter = next(key for key, text in _shown_options(prompt).items() if text == "biguanide")
    for answer in (letter, letter.lower(), f"({letter})", f"{letter})", f"Answer: {letter}", f"**{letter}**",
                   f"The answer is {letter}.", "biguanide", "  BIGUANIDE. ", "Ｂｉｇｕａｎｉｄｅ",
                   f"{letter}. biguanide", "Metformin is a biguanide.", "bigu\u200banide"):
        reward, info = _submit(env, task_id, answer, seed=3)
        assert reward == 1.0, answer
        assert info["reward_breakdown"]["answer"] == 1.0


def test_answers_naming_several_options_or_none_score_zero(env: Any) -> None:
    task_id = "clinical-drug_class-metformin"
    prompt, _ = env.reset(seed=3, options={"task_id": task_id})
    shown = _shown_options(prompt)
    right = next(key for key, text in shown.items() if text == "biguanide")
    wrong = next(key for key in shown if key != right)
    for answer in ("A B C D", "ABCD", "A, B, C, D", f"{right} or {wrong}", " / ".join(shown.values()),
                   f"{wrong}. biguanide", prompt, "", "none", "E", "Z", "biguan", "\u0412"):
        reward, _ = _submit(env, task_id, answer, seed=3)
        assert reward == 0.0, answer


def test_a_wrong_tool_argument_is_an_observation_not_a_crash(env: Any) -> None:
    env.reset(seed=0, options={"task_id": "clinical-drug_class-metformin"})
    observation, reward, terminated, _, _ = env.step({"name": "submit", "arguments": {"answer": ["A", "B"]}})
    assert not terminated and reward == 0.0 and "argument 'answer'" in observation
    observation, *_ = env.step("no tool call here at all")
    assert "submit" in observation


def test_read_choice_prefers_the_longer_option_and_refuses_duplicates() -> None:
    options = ["beta blocker", "beta blocker with alpha blockade", "statin"]
    assert read_choice("It is a beta blocker with alpha blockade.", options) == 1
    assert read_choice("beta blocker", options) == 0
    assert read_choice("beta blocker or statin", options) is None
    assert read_choice("yes", ["yes", "no", "maybe"]) == 0
    assert read_choice("Yes, it does.", ["yes", "no", "maybe"]) == 0
    assert read_choice("yes or no", ["yes", "no", "maybe"]) is None
    assert read_choice(True, ["yes", "no"]) is None and read_choice(None, ["yes", "no"]) is None


def test_echoing_a_question_that_names_an_option_chooses_nothing() -> None:
    question = "How severe is the injury?"
    options = ["mild", "moderate", "severe"]
    assert read_choice(question, options, question) is None
    assert read_choice("It is severe.", options, question) is None  # a sentence cannot pick what the question names
    assert read_choice("severe", options, question) == 2 and read_choice("C", options, question) == 2
    assert read_choice("It is moderate.", options, question) == 1


def test_option_order_is_seeded_and_every_letter_is_gold_equally_often(env: Any) -> None:
    task_id = "clinical-lab_range-2823-3-2.1"
    first, _ = env.reset(seed=11, options={"task_id": task_id})
    again, _ = env.reset(seed=11, options={"task_id": task_id})
    assert first == again
    seen = {tuple(_shown_options(env.reset(seed=seed, options={"task_id": task_id})[0]).values())
            for seed in range(30)}
    assert len(seen) > 1
    # Across one family at one seed the gold's letter cycles, so a fixed letter is right for a share of 1/k.
    tasks = [task for task in env.unwrapped.task_set if task.family == "drug_class"]
    positions = Counter()
    for task in tasks:
        prompt, _ = env.reset(seed=5, options={"task_id": task.id})
        positions[next(k for k, v in _shown_options(prompt).items() if v == task.answer)] += 1
    assert max(positions.values()) - min(positions.values()) <= 1, positions


def test_unshuffled_env_keeps_the_stored_order() -> None:
    plain = gym.make("ClinicalQA-v0", shuffle=False)
    try:
        task = plain.unwrapped.task_set.get("clinical-drug_class-metformin")
        prompt, _ = plain.reset(seed=9, options={"task_id": task.id})
        assert list(_shown_options(prompt).values()) == task.metadata["options"]
    finally:
        plain.close()


def test_train_and_test_share_no_fact_and_generation_is_deterministic() -> None:
    tasks = generate(0)
    assert [task.model_dump() for task in tasks] == [task.model_dump() for task in generate(0)]
    facts: dict[str, set[str]] = {"train": set(), "test": set()}
    for task in tasks:
        facts[task.split].add(task.metadata["fact"])
    assert facts["train"] and facts["test"] and not facts["train"] & facts["test"]
    assert {task.metadata["fact"] for task in generate(1) if task.split == "test"} & facts["train"] == set()


def test_task_ids_show_nothing_the_prompt_does_not() -> None:
    # info["task_id"] is public: an id made from the gold ("-I10", "-low", "-child_pugh-A") would give it away.
    for task in default_tasks(0):
        question = task.metadata["question"].lower().replace("-", " ")
        hidden = [part for part in task.id.lower().removeprefix(f"clinical-{task.family}-").split("-")
                  if part.replace("_", " ") not in question]
        assert all(len(part) == 12 for part in hidden), (task.id, hidden)  # at most the question's digest


def test_no_question_shares_a_word_with_its_gold_option_alone() -> None:
    # A word of the question found in the gold option but not in every other option ("digoxin" in "digoxin
    # toxicity") lets a policy answer by string matching.
    def words(text: str) -> set[str]:
        return {word for word in re.findall(r"[a-z0-9]+", text.lower()) if len(word) > 2}

    for task in default_tasks(0):
        if task.verifier.name != "clinical_choice":
            continue  # a free-number question has no options to match words against
        question = words(task.metadata["question"])
        others = [words(option) for option in task.metadata["options"] if option != task.answer]
        cue = (question & words(task.answer)) - set.intersection(*others)
        assert not cue, (task.id, cue)


def test_kb_task_searches_only_the_questions_own_passages() -> None:
    task = Task(id="ctx-1", domain="clinical", family="pubmedqa", split="test",
                prompt="Does drug X lower mortality?", answer="no",
                solution=[{"name": "submit", "arguments": {"answer": "no"}}],
                verifier={"name": "clinical_choice"},
                metadata={"question": "Does drug X lower mortality?", "options": ["yes", "no", "maybe"],
                          "contexts": ["Mortality did not differ between the groups.",
                                       "Patients were enrolled in three hospitals."]})
    env = gym.make("ClinicalQA-v0", tasks=TaskSet([task]), kb="task")
    try:
        prompt, _ = env.reset(seed=0)
        assert "Mortality did not differ" not in prompt and "2 context passages" in prompt
        observation, *_ = env.step({"name": "search_knowledge", "arguments": {"query": "mortality groups"}})
        assert observation.startswith("[1] passage 1 of 2\nMortality did not differ")
        assert "three hospitals" not in observation
        _, reward, *_ = env.step({"name": "submit", "arguments": {"answer": "No."}})
        assert reward == 1.0
    finally:
        env.close()
    shown = gym.make("ClinicalQA-v0", tasks=TaskSet([task]), kb=None)
    try:
        assert "Mortality did not differ" in shown.reset(seed=0)[0]
    finally:
        shown.close()
    assert rank_passages("unrelated words", ("alpha", "beta"), 5) == []


def test_bad_kb_path_and_non_clinical_tasks_are_clear_errors(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match="no such knowledge base folder"):
        gym.make("ClinicalQA-v0", kb=str(tmp_path / "missing"))
    foreign = Task(id="z", domain="zoo", family="count", prompt="How many?", answer=7)
    with pytest.raises(ValueError, match="not a ClinicalQA-v0 task"):
        gym.make("ClinicalQA-v0", tasks=[foreign])


# --- the answer contract: an option by its letter, its full text or a part only it holds --------------------

def _episode_where(env: Any, family_part: str, gold: str, shown: dict[str, str]) -> tuple[str, int]:
    """A task id of `family_part` with gold option `gold`, and a seed whose episode shows the options as in
    `shown` (letter -> text; other letters may hold anything)."""
    for task in env.unwrapped.task_set:
        if family_part not in task.id or task.answer != gold:
            continue
        for seed in range(200):
            prompt, _ = env.reset(seed=seed, options={"task_id": task.id})
            options = _shown_options(prompt)
            if all(options.get(letter) == text for letter, text in shown.items()):
                return task.id, seed
    raise AssertionError(f"no episode of {family_part} with gold {gold!r} shows {shown}")


def _reward(env: Any, task_id: str, seed: int, answer: Any) -> float:
    return _submit(env, task_id, answer, seed)[0]


def test_child_pugh_class_b_by_letter_text_or_distinctive_part(env: Any) -> None:
    # The case: the correct "Child-Pugh class B" shown as option A, class A shown as option B.
    task_id, seed = _episode_where(env, "child_pugh", "Child-Pugh class B",
                                   {"A": "Child-Pugh class B", "B": "Child-Pugh class A"})
    for answer in ["A", "(a)", "Answer: A", "Child-Pugh class B", "child-pugh CLASS b", "Class B", "Child-Pugh B",
                   "class b.", "A. Child-Pugh class B", "**Class B**", "The patient is Child-Pugh class B."]:
        assert _reward(env, task_id, seed, answer) == 1.0, answer
    for hedge in ["Class A or B", "Child-Pugh class A or B", "A or B", "Child-Pugh", "class", "A, B", "Class A/B",
                  "B. Child-Pugh class B", "A. Class A", "Class B or C"]:
        assert _reward(env, task_id, seed, hedge) == 0.0, hedge
    # A list is not one option: the schema asks for a string, and the call is refused without ending the episode.
    env.reset(seed=seed, options={"task_id": task_id})
    observation, reward, terminated, _, _ = env.step({"name": "submit", "arguments": {"answer": ["A"]}})
    assert reward == 0.0 and not terminated and "answer" in observation
    # A wrong option, by its letter or by its part, is wrong.
    assert _reward(env, task_id, seed, "B") == 0.0
    assert _reward(env, task_id, seed, "Class A") == 0.0


def test_risk_and_range_options_by_their_distinctive_word(env: Any) -> None:
    task_id, seed = _episode_where(env, "heart_score", "low risk", {})
    assert _reward(env, task_id, seed, "low") == 1.0
    assert _reward(env, task_id, seed, "Low-risk") == 1.0
    assert _reward(env, task_id, seed, "risk") == 0.0           # every option holds it
    assert _reward(env, task_id, seed, "low or moderate") == 0.0
    assert _reward(env, task_id, seed, "high") == 0.0
    lab_id, lab_seed = _episode_where(env, "lab_range", "below the usual range", {})
    assert _reward(env, lab_id, lab_seed, "Below") == 1.0
    assert _reward(env, lab_id, lab_seed, "the usual range") == 0.0  # shared by every option


def test_the_prompt_and_the_submit_schema_state_the_contract(env: Any) -> None:
    prompt, info = env.reset(seed=0, options={"task_id": "clinical-drug_class-metformin"})
    assert "its letter" in prompt and "full text" in prompt and "only that option holds" in prompt
    assert "more than one option" in prompt
    submit = next(schema for schema in info["tools"] if schema["function"]["name"] == "submit")
    assert submit["function"]["parameters"]["properties"]["answer"]["type"] == "string"


def test_task_passage_search_fits_the_output_limit_by_whole_passages() -> None:
    passages = [f"Trial arm {number} reported mortality of {number} percent among {100 + number} patients treated "
                "with drug X over two years of follow-up." for number in range(1, 13)]
    task = Task(id="ctx-2", domain="clinical", family="pubmedqa", split="test",
                prompt="Does drug X lower mortality?", answer="no",
                solution=[{"name": "submit", "arguments": {"answer": "no"}}],
                verifier={"name": "clinical_choice"},
                metadata={"question": "Does drug X lower mortality?", "options": ["yes", "no", "maybe"],
                          "contexts": passages})
    env = gym.make("ClinicalQA-v0", tasks=TaskSet([task]), kb="task", output_limit=600)
    try:
        env.reset(seed=0)
        observation, *_ = env.step({"name": "search_knowledge", "arguments": {"query": "mortality", "k": 12}})
        assert len(observation) <= 600 and "[truncated" not in observation
        *blocks, note = observation.split("\n\n")
        assert all(block.split("\n", 1)[1] in passages for block in blocks)  # whole passages only
        assert note.startswith(f"Note: {12 - len(blocks)} more matching passages were left out")
        assert f"offset={len(blocks)}" in note
        rest, *_ = env.step({"name": "search_knowledge",
                             "arguments": {"query": "mortality", "k": 2, "offset": len(blocks)}})
        assert rest.startswith(f"[{len(blocks) + 1}] passage ")
    finally:
        env.close()
