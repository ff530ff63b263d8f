"""Clinical calculators: cases worked by hand, and cross-checks against the `medcalc-bench` package."""

from __future__ import annotations

import math
import random

import pytest
from agentgym_fhir import calculators as c
from agentgym_fhir.calculators import CalculatorError, calculate


# ----------------------------------------------------------------------------- worked by hand
def test_bmi_and_bsa_by_hand() -> None:
    # 70 / 1.75^2 = 22.857; sqrt(175 * 70 / 3600) = sqrt(3.4028) = 1.8447
    assert c.bmi(70, 175).value == 22.9
    assert c.bmi(70, 175).category == "normal"
    assert c.bsa(70, 175).value == 1.84


def test_egfr_ckd_epi_2021_by_hand() -> None:
    # Male, 50 y, Scr 1.0: 142 * (1/0.9)^-1.2 * 0.9938^50 = 142 * 0.88119 * 0.73282 = 91.70
    assert c.egfr_ckd_epi_2021(1.0, 50, "male").value == pytest.approx(91.7, abs=0.1)
    # Female, 60 y, Scr 0.6: 142 * (0.6/0.7)^-0.241 * 0.9938^60 * 1.012 = 142 * 1.03784 * 0.68853 * 1.012 = 102.7
    assert c.egfr_ckd_epi_2021(0.6, 60, "female").value == pytest.approx(102.7, abs=0.1)
    assert c.egfr_ckd_epi_2021(3.0, 70, "male").category == "G4"


def test_cockcroft_gault_by_hand() -> None:
    # (140 - 60) * 72 / (72 * 1.0) = 80; female x 0.85 = 68
    assert c.cockcroft_gault(60, 72, 1.0, "male").value == 80.0
    assert c.cockcroft_gault(60, 72, 1.0, "female").value == 68.0
    with pytest.raises(ValueError, match="height_cm"):
        c.cockcroft_gault(60, 72, 1.0, "male", weight_basis="adjusted")


def test_chemistry_by_hand() -> None:
    assert c.anion_gap(140, 104, 24).value == 12.0
    assert c.anion_gap(140, 104, 24).category == "high"
    assert c.corrected_calcium(8.0, 2.0).value == 9.6           # 8 + 0.8 * 2
    assert c.serum_osmolality(140, 90, 14).value == 290.0       # 280 + 5 + 5
    assert c.ldl_friedewald(200, 50, 150).value == 120.0
    with pytest.raises(ValueError, match="400"):
        c.ldl_friedewald(300, 40, 500)
    assert c.fib4(50, 40, 25, 200).value == 2.0                 # 50*40/(200*5)


def test_cardiac_by_hand() -> None:
    assert c.qtc(400, 60).value == 400.0                         # RR = 1 s
    assert c.qtc(360, 100).value == pytest.approx(464.8, abs=0.05)  # 360 / sqrt(0.6)
    assert c.qtc(360, 100, "fridericia").value == pytest.approx(426.8, abs=0.05)  # 360 / 0.8434
    assert c.mean_arterial_pressure(120, 80).value == 93.3
    assert c.cha2ds2_vasc(76, "female", hypertension=True, diabetes=True).value == 5
    assert c.cha2ds2_vasc(70, "male", stroke_tia_or_thromboembolism=True).value == 3
    assert c.has_bled(70, uncontrolled_hypertension=True, bleeding_predisposing_drugs=True).value == 3
    assert c.wells_pe(110, clinical_signs_of_dvt=True, hemoptysis=True).value == 5.5
    assert c.wells_pe(110, clinical_signs_of_dvt=True, hemoptysis=True).category == "PE likely"
    assert c.heart_score(66, 1, 1, 3, 2.0).value == 7            # 1 + 1 + 2 + 2 + 1


def test_acute_care_by_hand() -> None:
    assert c.curb_65(70, 25, 31, 88, 50, confusion=True).value == 5
    assert c.curb_65(40, 10, 16, 120, 80).value == 0
    assert c.qsofa(24, 95).value == 2
    assert c.qsofa(24, 95).category == "high risk"
    assert c.glasgow_coma_scale(4, 5, 6).value == 15
    assert c.glasgow_coma_scale(2, 2, 4).category == "severe"
    with pytest.raises(ValueError, match="eye"):
        c.glasgow_coma_scale(5, 5, 6)


def test_liver_by_hand() -> None:
    # ln terms: 0.957 ln 2 + 0.378 ln 3 + 1.12 ln 2 + 0.643 = 0.6633 + 0.4153 + 0.7763 + 0.643 = 2.4979 -> 2.5 -> 25
    # 25 + 1.32 * 7 - 0.033 * 25 * 7 = 25 + 9.24 - 5.775 = 28.465 -> 28
    assert c.meld_na(2.0, 3.0, 2.0, 130).value == 28
    assert c.meld_na(0.5, 0.5, 0.9, 140).value == 6              # every term at its floor: 0.643 -> 6
    assert c.meld_na(9, 30, 6, 120).value == 40                  # capped
    assert c.child_pugh(2.5, 3.0, 1.8, "slight", "none").value == 9   # 2 + 2 + 2 + 2 + 1
    assert c.child_pugh(2.5, 3.0, 1.8, "slight", "none").category == "B"


def test_calculate_validates_and_names_fields() -> None:
    assert calculate("bmi", {"weight_kg": 80, "height_cm": 180}).value == 24.7
    with pytest.raises(CalculatorError, match="height_cm"):
        calculate("bmi", {"weight_kg": 80})
    with pytest.raises(CalculatorError, match="available: bmi"):
        calculate("bmj", {})
    with pytest.raises(CalculatorError, match="sex must be"):
        calculate("egfr_ckd_epi_2021", {"creatinine_mg_dl": 1, "age_years": 40, "sex": "x"})
    assert len(c.CALCULATORS) >= 15
    assert "cockcroft_gault" in c.describe_calculators()


# ----------------------------------------------------------------------------- cross-checks with medcalc
medcalc = pytest.importorskip("medcalc", reason="the medcalc-bench package is not installed")
CASES = 40


def _sex(rng: random.Random) -> tuple[str, str]:
    return ("male", "Male") if rng.random() < 0.5 else ("female", "Female")


def test_body_size_matches_medcalc() -> None:
    from medcalc import bmi_calculator, bsa_calculator, ideal_body_weight

    rng = random.Random(1)
    for _ in range(CASES):
        weight, height = rng.uniform(40, 150), rng.uniform(145, 200)
        sex, medsex = _sex(rng)
        ref = bmi_calculator.bmi_calculator_explanation({"weight": (weight, "kg"), "height": (height, "cm")})
        assert c.bmi(weight, height).value == pytest.approx(ref["Answer"], abs=0.1)  # ours is to 0.1
        ref = bsa_calculator.bsa_calculator_explaination({"weight": (weight, "kg"), "height": (height, "cm")})
        assert c.bsa(weight, height).value == pytest.approx(ref["Answer"], abs=0.006)
        ref = ideal_body_weight.ibw_explanation({"height": (height, "cm"), "sex": medsex})
        assert c.ideal_body_weight(height, sex).value == pytest.approx(ref["Answer"], abs=0.06)


def test_kidney_matches_medcalc() -> None:
    from medcalc import ckd_epi_2021_creatinine, creatinine_clearance

    rng = random.Random(2)
    for _ in range(CASES):
        creatinine, age = rng.uniform(0.4, 6.0), rng.randint(18, 95)
        weight, height = rng.uniform(40, 150), rng.uniform(145, 200)
        sex, medsex = _sex(rng)
        ref = ckd_epi_2021_creatinine.ckd_epi_2021({"sex": medsex, "age": (age, "years"),
                                                    "creatinine": (creatinine, "mg/dL")})
        assert c.egfr_ckd_epi_2021(creatinine, age, sex).value == pytest.approx(ref, abs=0.06)
        ref = creatinine_clearance.generate_cockcroft_gault_explanation({
            "sex": medsex, "age": (age, "years"), "weight": (weight, "kg"), "height": (height, "cm"),
            "creatinine": (creatinine, "mg/dL")})
        ours = c.cockcroft_gault(age, weight, creatinine, sex, height, weight_basis="adjusted")
        # medcalc rounds BMI and the weights to 3 decimals on the way; allow for that
        assert ours.value == pytest.approx(ref["Answer"], rel=0.01, abs=0.1)


def test_chemistry_matches_medcalc() -> None:
    from medcalc import anion_gap, calcium_correction, ldl_calculated, sOsm

    rng = random.Random(3)
    for _ in range(CASES):
        sodium, chloride, bicarbonate = rng.randint(120, 155), rng.randint(90, 115), rng.randint(10, 32)
        ref = anion_gap.compute_anion_gap_explanation({"sodium": (sodium, "mmol/L"), "chloride": (chloride, "mmol/L"),
                                                       "bicarbonate": (bicarbonate, "mmol/L")})
        assert c.anion_gap(sodium, chloride, bicarbonate).value == pytest.approx(ref["Answer"])
        calcium, albumin = rng.uniform(6, 12), rng.uniform(1.5, 5.0)
        ref = calcium_correction.calculate_corrected_calcium_explanation({"albumin": (albumin, "g/dL"),
                                                                          "calcium": (calcium, "mg/dL")})
        assert c.corrected_calcium(calcium, albumin).value == pytest.approx(ref["Answer"], abs=0.006)
        glucose, bun = rng.uniform(60, 500), rng.uniform(5, 80)
        ref = sOsm.compute_serum_osmolality_explanation({"sodium": (sodium, "mmol/L"), "bun": (bun, "mg/dL"),
                                                         "glucose": (glucose, "mg/dL")})
        assert c.serum_osmolality(sodium, glucose, bun).value == pytest.approx(ref["Answer"], abs=0.06)
        total, hdl, triglycerides = rng.uniform(120, 300), rng.uniform(25, 90), rng.uniform(50, 390)
        ref = ldl_calculated.compute_ldl_explanation({"total_cholestrol": (total, "mg/dL"),
                                                      "hdl_cholestrol": (hdl, "mg/dL"),
                                                      "triglycerides": (triglycerides, "mg/dL")})
        assert c.ldl_friedewald(total, hdl, triglycerides).value == pytest.approx(ref["Answer"], abs=0.06)


def test_cardiac_matches_medcalc() -> None:
    from medcalc import (
        cha2ds2_vasc_score,
        mean_arterial_pressure,
        qt_calculator_bazett,
        qt_calculator_fredericia,
        wells_criteria_pe,
    )

    rng = random.Random(4)
    flip = lambda: rng.random() < 0.4
    for _ in range(CASES):
        qt, rate = rng.uniform(300, 500), rng.uniform(45, 150)
        ref = qt_calculator_bazett.bazett_calculator_explanation({"heart_rate": (rate, "beats per minute"),
                                                                 "qt_interval": (qt, "msec")})
        # medcalc rounds RR to 3 decimals before the square root: about 0.1% at most
        assert c.qtc(qt, rate).value == pytest.approx(ref["Answer"], rel=2e-3)
        ref = qt_calculator_fredericia.fredericia_calculator_explanation({"heart_rate": (rate, "beats per minute"),
                                                                         "qt_interval": (qt, "msec")})
        assert c.qtc(qt, rate, "fridericia").value == pytest.approx(ref["Answer"], rel=2e-3)
        systolic, diastolic = rng.randint(80, 200), rng.randint(40, 120)
        ref = mean_arterial_pressure.mean_arterial_pressure_explanation({"sys_bp": [systolic, "mm hg"],
                                                                         "dia_bp": [diastolic, "mm hg"]})
        assert c.mean_arterial_pressure(systolic, diastolic).value == pytest.approx(ref["Answer"], abs=0.06)
        age = rng.randint(30, 95)
        sex, medsex = _sex(rng)
        facts = {"chf": flip(), "hypertension": flip(), "stroke": flip(), "tia": flip(), "thromboembolism": flip(),
                 "vascular_disease": flip(), "diabetes": flip()}
        ref = cha2ds2_vasc_score.generate_cha2ds2_vasc_explanation({"age": (age, "years"), "sex": medsex, **facts})
        ours = c.cha2ds2_vasc(age, sex, facts["chf"], facts["hypertension"], facts["diabetes"],
                              facts["stroke"] or facts["tia"] or facts["thromboembolism"], facts["vascular_disease"])
        assert ours.value == ref["Answer"]
        pe = {"clinical_dvt": flip(), "pe_number_one": flip(), "heart_rate": (rate, "beats per minute"),
              "immobilization_for_3days": flip(), "surgery_in_past4weeks": flip(), "previous_pe": flip(),
              "previous_dvt": flip(), "hemoptysis": flip(), "malignancy_with_treatment": flip()}
        ref = wells_criteria_pe.calculate_pe_wells_explanation(dict(pe))
        ours = c.wells_pe(rate, pe["clinical_dvt"], pe["pe_number_one"],
                          pe["immobilization_for_3days"] or pe["surgery_in_past4weeks"],
                          pe["previous_pe"] or pe["previous_dvt"], pe["hemoptysis"], pe["malignancy_with_treatment"])
        assert ours.value == ref["Answer"]


def test_scores_match_medcalc() -> None:
    from medcalc import child_pugh_score, curb_65, glasgow_coma_score, has_bled_score, meldna

    rng = random.Random(5)
    flip = lambda: rng.random() < 0.4
    eyes = ["no eye opening", "eye opening to pain", "eye opening to verbal command", "eyes open spontaneously"]
    verbal = ["no verbal response", "incomprehensible sounds", "inappropriate words", "confused", "oriented"]
    motor = ["no motor response", "extension to pain", "flexion to pain", "withdrawal from pain", "localizes pain",
             "obeys commands"]
    for _ in range(CASES):
        age = rng.randint(20, 95)
        facts = {"hypertension": flip(), "liver_disease_has_bled": flip(), "renal_disease_has_bled": flip(),
                 "stroke": flip(), "prior_bleeding": flip(), "labile_inr": flip(),
                 "medications_for_bleeding": flip(), "alcoholic_drinks": rng.choice([0, 3, 8, 12])}
        ref = has_bled_score.compute_has_bled_score_explanation({"age": (age, "years"), **facts})
        ours = c.has_bled(age, facts["hypertension"], facts["renal_disease_has_bled"], facts["liver_disease_has_bled"],
                          facts["stroke"], facts["prior_bleeding"], facts["labile_inr"],
                          facts["medications_for_bleeding"], facts["alcoholic_drinks"] >= 8)
        assert ours.value == ref["Answer"]
        bun, rate, systolic, diastolic, confusion = (rng.uniform(5, 40), rng.randint(10, 40), rng.randint(70, 160),
                                                     rng.randint(40, 100), flip())
        ref = curb_65.curb_65_explanation({"age": (age, "years"), "bun": (bun, "mg/dL"),
                                           "respiratory_rate": (rate, "breaths per minute"),
                                           "sys_bp": (systolic, "mm hg"), "dia_bp": (diastolic, "mm hg"),
                                           "confusion": confusion})
        assert c.curb_65(age, bun, rate, systolic, diastolic, confusion).value == ref["Answer"]
        e, v, m = rng.randint(1, 4), rng.randint(1, 5), rng.randint(1, 6)
        ref = glasgow_coma_score.compute_glasgow_coma_score_explanation({
            "best_eye_response": eyes[e - 1], "best_verbal_response": verbal[v - 1], "best_motor_response": motor[m - 1]})
        assert c.glasgow_coma_scale(e, v, m).value == ref["Answer"]
        bilirubin, albumin, inr = rng.uniform(0.5, 6), rng.uniform(2.0, 4.5), rng.uniform(0.9, 3.5)
        ascites = rng.choice(["none", "slight", "moderate"])
        encephalopathy = rng.choice(["none", "grade 1-2", "grade 3-4"])
        ref = child_pugh_score.compute_child_pugh_score_explanation({
            "bilirubin": (bilirubin, "mg/dL"), "albumin": (albumin, "g/dL"), "inr": inr,
            "ascites": {"none": "Absent", "slight": "Slight", "moderate": "Moderate"}[ascites],
            "encephalopathy": {"none": "No Encephalopathy", "grade 1-2": "Grade 1-2",
                               "grade 3-4": "Grade 3-4"}[encephalopathy]})
        assert c.child_pugh(bilirubin, albumin, inr, ascites, encephalopathy).value == ref["Answer"]
        creatinine = rng.uniform(0.5, 5)
        # medcalc's second MELD-Na term multiplies by the unscaled MELD(i); at Na >= 137 that term is zero and
        # both implementations must agree exactly
        ref = meldna.compute_meldna_explanation({"creatinine": (creatinine, "mg/dL"), "bilirubin": (bilirubin, "mg/dL"),
                                                 "inr": inr, "sodium": (138.0, "mmol/L"), "dialysis_twice": False})
        assert c.meld_na(creatinine, bilirubin, inr, 138).value == ref["Answer"]


def test_fib4_matches_medcalc() -> None:
    from medcalc import fibrosis_4

    rng = random.Random(6)
    for _ in range(CASES):
        age, ast, alt, platelets = rng.randint(20, 90), rng.uniform(10, 200), rng.uniform(10, 200), rng.uniform(50, 450)
        ref = fibrosis_4.compute_fib4_explanation({"age": (age, "years"), "ast": (ast, "U/L"), "alt": (alt, "U/L"),
                                                   "platelet_count": (platelets * 1000, "µL")})
        assert c.fib4(age, ast, alt, platelets).value == pytest.approx(ref["Answer"], abs=0.006)
        assert math.isfinite(ref["Answer"])
