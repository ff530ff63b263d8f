"""Fixes of the ClinicalQA-v0 playtest's findings (/work/playtest/ClinicalQA-v0.md), each at its cause in the
shared answer library: the equivalent spellings score 1, the hedges and near-misses score 0."""

from __future__ import annotations

import pytest
from agentgym_clinical.verify import read_choice

CHILD_PUGH = ["Child-Pugh class A", "Child-Pugh class B", "Child-Pugh class C"]
RISKS = ["cardiac glycoside toxicity", "hyperkalemia", "bleeding", "myopathy", "serotonin syndrome"]


@pytest.mark.parametrize("raw", ["hyperkalaemia", "Hyperkalaemia.", "risk of hyperkalaemia", "HYPERKALAEMIA"])
def test_british_spellings_name_the_american_option(raw: str) -> None:
    # Playtest #4: "hyperkalaemia" scored 0 for the option "hyperkalemia" (and the knowledge base itself writes
    # "hyponatraemia"). -aemia/-emia, haem-/hem-, oedema/edema, oesophag-/esophag-, diarrhoea/diarrhea are one word.
    assert read_choice(raw, RISKS) == 1


def test_spelling_folds_hold_for_other_medical_words() -> None:
    assert read_choice("haemorrhage", ["hemorrhage", "oedema"]) == 0
    assert read_choice("edema", ["haemorrhage", "oedema"]) == 1
    assert read_choice("diarrhoea", ["constipation", "diarrhea"]) == 1
    assert read_choice("oesophageal varices", ["esophageal varices", "gastric ulcer"]) == 0
    assert read_choice("paediatric dose", ["pediatric dose", "adult dose"]) == 0


@pytest.mark.parametrize("raw", ["hyperkalaemia or bleeding", "hyperkalaemia, myopathy", "haemorrhage"])
def test_spelling_folds_do_not_open_hedges_or_other_words(raw: str) -> None:
    assert read_choice(raw, RISKS) is None


@pytest.mark.parametrize("raw", ["class A", "Class A", "Child-Pugh A", "A (class A)", "child-pugh class a"])
def test_the_letter_a_that_tells_an_option_apart_is_not_an_article(raw: str) -> None:
    # Playtest #8: "class A" scored 0 (its "A" was read as the article) while "class B" scored 1.
    assert read_choice(raw, CHILD_PUGH) == 0


@pytest.mark.parametrize("raw", ["class A or B", "class A/B", "Class A, class B", "class A B", "a"])
def test_a_letter_word_still_refuses_hedges(raw: str) -> None:
    chosen = read_choice(raw, CHILD_PUGH)
    assert chosen is None or (raw == "a" and chosen == 0)  # "a" alone is the letter A, as before


@pytest.mark.parametrize(("raw", "gold"), [
    ("Child-Pugh B (7 points)", 1), ("Child-Pugh B (score 7)", 1), ("class B (score 7)", 1),
    ("Class B, score 7", 1), ("7 points, class B", 1), ("A (6 points)", 0), ("Child-Pugh class B (7 points)", 1),
])
def test_a_short_form_with_its_working_after_it_still_names_the_option(raw: str, gold: int) -> None:
    # Playtest #2: "Child-Pugh B" scored 1 but "Child-Pugh B (7 points)" scored 0, while the full text with the
    # same words scored 1. Working that names no option is set aside.
    assert read_choice(raw, CHILD_PUGH) == gold


@pytest.mark.parametrize("raw", [
    "class B (or A)", "class B (not A)", "Child-Pugh B (A?)", "class B, class C", "Class B, score 7, or C",
    "B (C)", "7 points",
])
def test_working_that_names_another_option_keeps_the_answer_a_hedge(raw: str) -> None:
    assert read_choice(raw, CHILD_PUGH) is None


def test_a_bracketed_letter_is_never_set_aside_as_working() -> None:
    assert read_choice("hyperkalemia (B)", RISKS) == 1  # its own letter agrees
    assert read_choice("class B (C)", CHILD_PUGH) is None


CLASSES = ["fluoroquinolone antibiotic", "ACE inhibitor", "loop diuretic", "glucocorticoid"]


@pytest.mark.parametrize(("raw", "gold"), [
    ("Fluoroquinolones", 0), ("fluoroquinolone antibiotics", 0), ("It is a fluoroquinolone antibiotic.", 0),
    ("ACE inhibitors", 1), ("loop diuretics", 2), ("Glucocorticoids", 3),
])
def test_plurals_name_the_singular_option(raw: str, gold: int) -> None:
    # Playtest #24: "Fluoroquinolones" scored 0 for "fluoroquinolone antibiotic" while the singular scored 1.
    assert read_choice(raw, CLASSES) == gold


@pytest.mark.parametrize("raw", ["fluoroquinolones or ACE inhibitors", "diuretics", "inhibitors, diuretics"])
def test_plurals_do_not_open_hedges(raw: str) -> None:
    assert read_choice(raw, CLASSES + ["thiazide diuretic"]) is None


def test_qtc_is_the_qt_option_and_short_words_keep_their_s() -> None:
    # Playtest #35: "QTc prolongation" scored 0 for the option "QT prolongation".
    risks = ["QT prolongation", "bleeding", "hyperkalemia"]
    assert read_choice("QTc prolongation", risks) == 0 and read_choice("qtc prolongation", risks) == 0
    assert read_choice("yes", ["yes", "no", "maybe"]) == 0 and read_choice("Child-Pugh class B", CHILD_PUGH) == 1
    assert read_choice("ascites", ["ascites", "encephalopathy"]) == 0


@pytest.mark.parametrize(("raw", "gold"), [
    ("the fluoroquinolone", 0), ("a fluoroquinolone", 0), ("the fluoroquinolones", 0), ("an ACE inhibitor", 1),
    ("The loop diuretic.", 2),
])
def test_an_article_before_a_distinctive_part_is_filler(raw: str, gold: int) -> None:
    # Playtest recheck of #24: "a fluoroquinolone", "the fluoroquinolones" scored 0 while "fluoroquinolone" scored 1.
    assert read_choice(raw, CLASSES) == gold


def test_an_article_never_joins_two_options_or_hides_a_letter_option() -> None:
    assert read_choice("a fluoroquinolone or an ACE inhibitor", CLASSES) is None
    assert read_choice("the class A", CHILD_PUGH) == 0 and read_choice("a class B", CHILD_PUGH) is None


def test_a_fragment_of_a_code_names_no_option() -> None:
    # Playtest #3/#5: "718" scored 1 for "718-7" while "M81" scored 0 for "M81.0"; the red team's shared-part
    # attack won with a first digit ("3" for "33914-3"). A code is named whole, never by a fragment.
    loinc = ["33914-3", "2160-0", "2345-7", "718-7"]
    for fragment in ("3", "718", "7", "33914", "2160"):
        assert read_choice(fragment, loinc) is None, fragment
    assert read_choice("718-7", loinc) == 3 and read_choice("LOINC 718-7 (Hemoglobin)", loinc) == 3
    assert read_choice("d", loinc) == 3 and read_choice("D. 718-7", loinc) == 3
    assert read_choice("5", ["5 mg", "10 mg"]) == 0  # a number standing alone in an option is still its part


def test_a_code_named_beside_the_stems_of_other_codes_is_a_hedge() -> None:
    # The red team's own-words attack: "G40/E78/N40/I10" named I10 in full and the others by their stems.
    icd = ["G40.909", "E78.5", "N40.0", "I10"]
    assert read_choice("G40/E78/N40/I10", icd) is None and read_choice("I10 or E78", icd) is None
    assert read_choice("I10", icd) == 3 and read_choice("I10 (essential hypertension)", icd) == 3
    assert read_choice("ICD-10-CM I10", icd) == 3


def test_british_drug_names_name_the_us_option() -> None:
    # Playtest #66: "noradrenaline" is norepinephrine.
    classes = ["norepinephrine-dopamine reuptake inhibitor", "selective serotonin reuptake inhibitor (SSRI)"]
    assert read_choice("noradrenaline-dopamine reuptake inhibitor", classes) == 0
    assert read_choice("paracetamol", ["acetaminophen", "ibuprofen"]) == 0
    assert read_choice("adrenaline", ["epinephrine", "atropine"]) == 0


def test_every_code_a_code_lookup_question_offers_is_one_lookup_code_finds() -> None:
    # Playtest #63-#65: lookup_code did not know three golds (2857-1 PSA, 33914-3 eGFR, 1989-3 vitamin D).
    from agentgym_clinical.tasks import code_lookup
    from agentgym_fhir import codes

    tasks = code_lookup.generate(0)
    assert len(tasks) >= 60
    for task in tasks:
        system = task.metadata["system"].lower().replace("-", "")
        for option in task.metadata["options"]:
            assert codes.lookup(system, option).code, (task.id, option)


def test_a_leading_letter_must_agree_with_the_text_after_it() -> None:
    # Playtest #74: "D (bleeding)" and "Answer: C (bleeding)" scored 1 when bleeding was option A.
    risks = ["bleeding", "cardiac glycoside toxicity", "myopathy", "QT prolongation", "hyperkalemia"]
    for raw in ("D (bleeding)", "Answer: C (bleeding)", "answer D, bleeding", "d: bleeding"):
        assert read_choice(raw, risks) is None, raw
    for raw in ("A (bleeding)", "Answer: A (bleeding)", "answer A, bleeding", "A bleeding risk", "bleeding"):
        assert read_choice(raw, risks) == 0, raw


def test_anti_with_a_hyphen_is_one_word() -> None:
    # Playtest #73: "anti-seizure medicine" scored 0 for "antiseizure medicine".
    assert read_choice("anti-seizure medicine", ["antiseizure medicine", "beta blocker"]) == 0
    assert read_choice("Anti-seizure", ["antiseizure medicine", "beta blocker"]) == 0
