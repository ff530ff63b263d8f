"""Clinical calculators: typed functions that turn facts from a record into a score or a derived value.

Each calculator is a plain function with typed, documented arguments and returns a `Calculation` (value,
unit, the formula with the numbers filled in). `CALCULATORS` maps the name an agent uses to the function;
`calculate(name, inputs)` validates the inputs (the error names the field and lists what is accepted) and
runs it. Task families compute their answers with these same functions, so a tool result and a gold answer
can never drift apart.

Formulas follow the published definitions (Mosteller BSA, CKD-EPI 2021 race-free creatinine equation,
Cockcroft-Gault, Bazett and Fridericia QTc, OPTN MELD-Na 2016, and the usual point scores). They are tested
on cases worked by hand and cross-checked against the `medcalc-bench` package.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Sex = Literal["male", "female"]


@dataclass(frozen=True)
class Calculation:
    """A calculator's result.

    Attributes:
        value: The number (a score is an integer, a measure a float rounded to 2 decimals).
        unit: UCUM-style unit of the value ("" for a unitless score; "{score}" is not used).
        explanation: The formula with the inputs filled in, so an agent can check the arithmetic.
        category: A named band of the value where the calculator defines one (e.g. Child-Pugh class "B").
    """

    value: float
    unit: str
    explanation: str
    category: str = ""
    details: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = {"value": self.value, "unit": self.unit, "explanation": self.explanation}
        if self.category:
            result["category"] = self.category
        if self.details:
            result["details"] = self.details
        return result


def _sex(value: str) -> Sex:
    text = str(value).strip().lower()
    if text in ("male", "m", "man"):
        return "male"
    if text in ("female", "f", "woman"):
        return "female"
    raise ValueError(f"sex must be 'male' or 'female', got {value!r}")


def _r(value: float, digits: int = 2) -> float:
    return round(value + 0.0, digits)


def _positive(name: str, value: float) -> float:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


# ------------------------------------------------------------------------------------- body size
def bmi(weight_kg: float, height_cm: float) -> Calculation:
    """Body mass index: weight (kg) divided by height (m) squared, in kg/m2.

    Args:
        weight_kg: Body weight in kilograms.
        height_cm: Body height in centimeters.
    """
    weight, height = _positive("weight_kg", weight_kg), _positive("height_cm", height_cm) / 100
    value = weight / height**2
    band = ("underweight" if value < 18.5 else "normal" if value < 25 else "overweight" if value < 30
            else "obese")
    return Calculation(_r(value, 1), "kg/m2", f"{weight:g} kg / ({height:g} m)^2 = {value:.2f} kg/m2", band)


def bsa(weight_kg: float, height_cm: float) -> Calculation:
    """Body surface area by the Mosteller formula, sqrt(height_cm * weight_kg / 3600), in m2.

    Args:
        weight_kg: Body weight in kilograms.
        height_cm: Body height in centimeters.
    """
    weight, height = _positive("weight_kg", weight_kg), _positive("height_cm", height_cm)
    value = math.sqrt(weight * height / 3600)
    return Calculation(_r(value), "m2", f"sqrt({height:g} cm * {weight:g} kg / 3600) = {value:.3f} m2")


def ideal_body_weight(height_cm: float, sex: str) -> Calculation:
    """Ideal body weight by the Devine formula: 50 kg (male) or 45.5 kg (female) + 2.3 kg per inch over 60 in.

    Args:
        height_cm: Body height in centimeters.
        sex: "male" or "female".
    """
    height_in = _positive("height_cm", height_cm) / 2.54
    base = 50.0 if _sex(sex) == "male" else 45.5
    value = base + 2.3 * (height_in - 60)
    return Calculation(_r(value, 1), "kg", f"{base} + 2.3 * ({height_in:.2f} in - 60) = {value:.2f} kg")


# ------------------------------------------------------------------------------------- kidney
def egfr_ckd_epi_2021(creatinine_mg_dl: float, age_years: float, sex: str) -> Calculation:
    """Estimated GFR by the 2021 CKD-EPI creatinine equation (race-free), in mL/min/1.73m2.

    142 * min(Scr/k, 1)^a * max(Scr/k, 1)^-1.200 * 0.9938^age * 1.012 (if female);
    k = 0.7 (female) or 0.9 (male), a = -0.241 (female) or -0.302 (male).

    Args:
        creatinine_mg_dl: Serum creatinine in mg/dL.
        age_years: Age in years.
        sex: "male" or "female".
    """
    creatinine = _positive("creatinine_mg_dl", creatinine_mg_dl)
    female = _sex(sex) == "female"
    kappa, alpha = (0.7, -0.241) if female else (0.9, -0.302)
    ratio = creatinine / kappa
    value = 142 * min(ratio, 1) ** alpha * max(ratio, 1) ** -1.2 * 0.9938**age_years * (1.012 if female else 1)
    stage = ("G1" if value >= 90 else "G2" if value >= 60 else "G3a" if value >= 45 else "G3b" if value >= 30
             else "G4" if value >= 15 else "G5")
    return Calculation(_r(value, 1), "mL/min/{1.73_m2}",
                       f"142 * min({ratio:.3f},1)^{alpha} * max({ratio:.3f},1)^-1.2 * 0.9938^{age_years:g}"
                       f"{' * 1.012' if female else ''} = {value:.2f}", stage)


def cockcroft_gault(age_years: float, weight_kg: float, creatinine_mg_dl: float, sex: str,
                    height_cm: float | None = None,
                    weight_basis: Literal["actual", "adjusted"] = "actual") -> Calculation:
    """Creatinine clearance by Cockcroft-Gault: (140 - age) * weight * (0.85 if female) / (72 * Scr), mL/min.

    Args:
        age_years: Age in years.
        weight_kg: Body weight in kilograms.
        creatinine_mg_dl: Serum creatinine in mg/dL.
        sex: "male" or "female".
        height_cm: Height in cm; needed only for weight_basis "adjusted".
        weight_basis: "actual" uses the body weight as given (the default). "adjusted" uses the actual weight
            when BMI < 18.5, the lower of ideal and actual weight when BMI is 18.5-24.9, and the adjusted
            body weight IBW + 0.4 * (actual - IBW) when BMI >= 25.
    """
    weight = _positive("weight_kg", weight_kg)
    creatinine = _positive("creatinine_mg_dl", creatinine_mg_dl)
    female = _sex(sex) == "female"
    used = weight
    note = ""
    if weight_basis == "adjusted":
        if height_cm is None:
            raise ValueError("height_cm is needed when weight_basis is 'adjusted'")
        body_mass = bmi(weight, height_cm).value
        ideal = ideal_body_weight(height_cm, sex).value
        if body_mass < 18.5:
            used = weight
        elif body_mass < 25:
            used = min(ideal, weight)
        else:
            used = ideal + 0.4 * (weight - ideal)
        note = f" (BMI {body_mass}, IBW {ideal} kg, weight used {used:.1f} kg)"
    value = (140 - age_years) * used * (0.85 if female else 1.0) / (72 * creatinine)
    return Calculation(_r(value, 1), "mL/min",
                       f"(140 - {age_years:g}) * {used:.1f} kg{' * 0.85' if female else ''} / (72 * {creatinine:g})"
                       f" = {value:.2f} mL/min{note}")


# ------------------------------------------------------------------------------------- chemistry
def anion_gap(sodium_mmol_l: float, chloride_mmol_l: float, bicarbonate_mmol_l: float) -> Calculation:
    """Serum anion gap: Na - (Cl + HCO3), in mmol/L.

    Args:
        sodium_mmol_l: Sodium in mmol/L (same as mEq/L).
        chloride_mmol_l: Chloride in mmol/L.
        bicarbonate_mmol_l: Bicarbonate (total CO2) in mmol/L.
    """
    value = sodium_mmol_l - (chloride_mmol_l + bicarbonate_mmol_l)
    band = "low" if value < 3 else "normal" if value <= 11 else "high"
    return Calculation(_r(value, 1), "mmol/L",
                       f"{sodium_mmol_l:g} - ({chloride_mmol_l:g} + {bicarbonate_mmol_l:g}) = {value:g} mmol/L", band)


def corrected_calcium(calcium_mg_dl: float, albumin_g_dl: float, normal_albumin_g_dl: float = 4.0) -> Calculation:
    """Calcium corrected for albumin: Ca + 0.8 * (normal albumin - albumin), in mg/dL.

    Args:
        calcium_mg_dl: Total serum calcium in mg/dL.
        albumin_g_dl: Serum albumin in g/dL.
        normal_albumin_g_dl: The albumin taken as normal (default 4.0 g/dL).
    """
    value = calcium_mg_dl + 0.8 * (normal_albumin_g_dl - albumin_g_dl)
    return Calculation(_r(value), "mg/dL",
                       f"{calcium_mg_dl:g} + 0.8 * ({normal_albumin_g_dl:g} - {albumin_g_dl:g}) = {value:.2f} mg/dL")


def serum_osmolality(sodium_mmol_l: float, glucose_mg_dl: float, bun_mg_dl: float) -> Calculation:
    """Calculated serum osmolality: 2 * Na + glucose / 18 + BUN / 2.8, in mOsm/kg.

    Args:
        sodium_mmol_l: Sodium in mmol/L.
        glucose_mg_dl: Glucose in mg/dL.
        bun_mg_dl: Blood urea nitrogen in mg/dL.
    """
    value = 2 * sodium_mmol_l + glucose_mg_dl / 18 + bun_mg_dl / 2.8
    return Calculation(_r(value, 1), "mosm/kg",
                       f"2 * {sodium_mmol_l:g} + {glucose_mg_dl:g} / 18 + {bun_mg_dl:g} / 2.8 = {value:.2f}")


def ldl_friedewald(total_cholesterol_mg_dl: float, hdl_mg_dl: float, triglycerides_mg_dl: float) -> Calculation:
    """LDL cholesterol by Friedewald: total - HDL - triglycerides / 5, in mg/dL (invalid above TG 400).

    Args:
        total_cholesterol_mg_dl: Total cholesterol in mg/dL.
        hdl_mg_dl: HDL cholesterol in mg/dL.
        triglycerides_mg_dl: Triglycerides in mg/dL.
    """
    if triglycerides_mg_dl > 400:
        raise ValueError("the Friedewald equation is not valid when triglycerides exceed 400 mg/dL")
    value = total_cholesterol_mg_dl - hdl_mg_dl - triglycerides_mg_dl / 5
    return Calculation(_r(value, 1), "mg/dL",
                       f"{total_cholesterol_mg_dl:g} - {hdl_mg_dl:g} - {triglycerides_mg_dl:g} / 5 = {value:.1f} mg/dL")


def fib4(age_years: float, ast_u_l: float, alt_u_l: float, platelets_10e3_ul: float) -> Calculation:
    """FIB-4 liver fibrosis index: age * AST / (platelets [10^9/L] * sqrt(ALT)).

    Args:
        age_years: Age in years.
        ast_u_l: AST in U/L.
        alt_u_l: ALT in U/L.
        platelets_10e3_ul: Platelet count in 10^3/uL (equal to 10^9/L).
    """
    value = age_years * ast_u_l / (_positive("platelets_10e3_ul", platelets_10e3_ul)
                                   * math.sqrt(_positive("alt_u_l", alt_u_l)))
    band = "low" if value < 1.3 else "indeterminate" if value <= 2.67 else "high"
    return Calculation(_r(value), "", f"{age_years:g} * {ast_u_l:g} / ({platelets_10e3_ul:g} * sqrt({alt_u_l:g}))"
                       f" = {value:.3f}", band)


# ------------------------------------------------------------------------------------- cardiovascular
def qtc(qt_ms: float, heart_rate_bpm: float, formula: Literal["bazett", "fridericia"] = "bazett") -> Calculation:
    """Heart-rate-corrected QT interval in ms. Bazett: QT / sqrt(RR); Fridericia: QT / RR^(1/3); RR = 60 / HR s.

    Args:
        qt_ms: Measured QT interval in milliseconds.
        heart_rate_bpm: Heart rate in beats per minute.
        formula: "bazett" (default) or "fridericia".
    """
    rr = 60 / _positive("heart_rate_bpm", heart_rate_bpm)
    value = qt_ms / (math.sqrt(rr) if formula == "bazett" else rr ** (1 / 3))
    root = "sqrt" if formula == "bazett" else "cbrt"
    return Calculation(_r(value, 1), "ms", f"RR = 60 / {heart_rate_bpm:g} = {rr:.4f} s; {qt_ms:g} / {root}(RR) "
                       f"= {value:.2f} ms", "prolonged" if value > 470 else "normal")


def mean_arterial_pressure(systolic_mmhg: float, diastolic_mmhg: float) -> Calculation:
    """Mean arterial pressure: (systolic + 2 * diastolic) / 3, in mmHg.

    Args:
        systolic_mmhg: Systolic blood pressure in mmHg.
        diastolic_mmhg: Diastolic blood pressure in mmHg.
    """
    value = (systolic_mmhg + 2 * diastolic_mmhg) / 3
    return Calculation(_r(value, 1), "mm[Hg]", f"({systolic_mmhg:g} + 2 * {diastolic_mmhg:g}) / 3 = {value:.2f} mmHg")


def cha2ds2_vasc(age_years: float, sex: str, congestive_heart_failure: bool = False, hypertension: bool = False,
                 diabetes: bool = False, stroke_tia_or_thromboembolism: bool = False,
                 vascular_disease: bool = False) -> Calculation:
    """CHA2DS2-VASc stroke risk in atrial fibrillation (0-9).

    Points: heart failure 1, hypertension 1, age >= 75 2 (65-74 1), diabetes 1, prior stroke/TIA/
    thromboembolism 2, vascular disease (prior MI, peripheral artery disease, aortic plaque) 1, female 1.

    Args:
        age_years: Age in years.
        sex: "male" or "female".
        congestive_heart_failure: History of heart failure.
        hypertension: History of hypertension.
        diabetes: Diabetes mellitus.
        stroke_tia_or_thromboembolism: Prior stroke, TIA or thromboembolism.
        vascular_disease: Prior myocardial infarction, peripheral artery disease or aortic plaque (coronary
            artery disease counts).
    """
    parts = {
        "heart failure": int(congestive_heart_failure), "hypertension": int(hypertension),
        "age": 2 if age_years >= 75 else 1 if age_years >= 65 else 0, "diabetes": int(diabetes),
        "stroke/TIA/thromboembolism": 2 * int(stroke_tia_or_thromboembolism),
        "vascular disease": int(vascular_disease), "female sex": int(_sex(sex) == "female"),
    }
    return _score(parts, "")


def has_bled(age_years: float, uncontrolled_hypertension: bool = False, abnormal_renal_function: bool = False,
             abnormal_liver_function: bool = False, prior_stroke: bool = False, prior_major_bleeding: bool = False,
             labile_inr: bool = False, bleeding_predisposing_drugs: bool = False,
             alcohol_8_or_more_drinks_per_week: bool = False) -> Calculation:
    """HAS-BLED major bleeding risk on anticoagulation (0-9), one point each.

    Args:
        age_years: Age in years (older than 65 scores a point).
        uncontrolled_hypertension: Systolic pressure above 160 mmHg.
        abnormal_renal_function: Dialysis, kidney transplant or creatinine above 2.26 mg/dL.
        abnormal_liver_function: Cirrhosis, or bilirubin > 2x normal with AST/ALT > 3x normal.
        prior_stroke: History of stroke.
        prior_major_bleeding: Prior major bleeding or a predisposition to bleeding.
        labile_inr: Unstable or high INRs (time in therapeutic range under 60%).
        bleeding_predisposing_drugs: Antiplatelet drugs (aspirin, clopidogrel) or NSAIDs.
        alcohol_8_or_more_drinks_per_week: Alcohol use of 8 or more drinks a week.
    """
    parts = {
        "hypertension": int(uncontrolled_hypertension), "renal": int(abnormal_renal_function),
        "liver": int(abnormal_liver_function), "stroke": int(prior_stroke), "bleeding": int(prior_major_bleeding),
        "labile INR": int(labile_inr), "age > 65": int(age_years > 65), "drugs": int(bleeding_predisposing_drugs),
        "alcohol": int(alcohol_8_or_more_drinks_per_week),
    }
    return _score(parts, "")


def wells_pe(heart_rate_bpm: float, clinical_signs_of_dvt: bool = False, pe_most_likely_diagnosis: bool = False,
             immobilization_or_recent_surgery: bool = False, previous_pe_or_dvt: bool = False,
             hemoptysis: bool = False, malignancy: bool = False) -> Calculation:
    """Wells score for pulmonary embolism (0-12.5).

    Points: signs of DVT 3, PE the most likely diagnosis 3, heart rate > 100 1.5, immobilization >= 3 days or
    surgery in the past 4 weeks 1.5, previous PE or DVT 1.5, hemoptysis 1, malignancy under treatment 1.

    Args:
        heart_rate_bpm: Heart rate in beats per minute.
        clinical_signs_of_dvt: Clinical signs and symptoms of deep vein thrombosis.
        pe_most_likely_diagnosis: PE is the most likely diagnosis, or equally likely.
        immobilization_or_recent_surgery: Immobilized 3 days or more, or surgery in the previous 4 weeks.
        previous_pe_or_dvt: Previously diagnosed PE or DVT.
        hemoptysis: Coughing up blood.
        malignancy: Cancer treated within 6 months or palliative.
    """
    parts = {
        "DVT signs": 3.0 * clinical_signs_of_dvt, "PE most likely": 3.0 * pe_most_likely_diagnosis,
        "heart rate > 100": 1.5 * (heart_rate_bpm > 100), "immobilization/surgery": 1.5 * immobilization_or_recent_surgery,
        "previous PE/DVT": 1.5 * previous_pe_or_dvt, "hemoptysis": 1.0 * hemoptysis, "malignancy": 1.0 * malignancy,
    }
    result = _score(parts, "")
    band = "PE likely" if result.value > 4 else "PE unlikely"
    return Calculation(result.value, "", result.explanation, band)


def heart_score(age_years: float, history: int, ecg: int, risk_factor_count: int,
                troponin_times_normal_limit: float, known_atherosclerotic_disease: bool = False) -> Calculation:
    """HEART score for major cardiac events in chest pain (0-10).

    Age < 45: 0, 45-64: 1, >= 65: 2. Risk factors (hypertension, high cholesterol, diabetes, obesity, smoking,
    family history): none 0, 1-2 1, 3 or more (or known atherosclerotic disease) 2. Troponin at or below the
    normal limit 0, 1-3x 1, above 3x 2.

    Args:
        age_years: Age in years.
        history: 0 slightly, 1 moderately, 2 highly suspicious history.
        ecg: 0 normal, 1 non-specific repolarization change, 2 significant ST deviation.
        risk_factor_count: How many of the listed risk factors the patient has.
        troponin_times_normal_limit: Initial troponin as a multiple of the upper normal limit.
        known_atherosclerotic_disease: Prior MI, PCI/CABG, stroke/TIA or peripheral artery disease.
    """
    for name, value in (("history", history), ("ecg", ecg)):
        if value not in (0, 1, 2):
            raise ValueError(f"{name} must be 0, 1 or 2, got {value!r}")
    risk = 2 if risk_factor_count >= 3 or known_atherosclerotic_disease else 1 if risk_factor_count >= 1 else 0
    troponin = 0 if troponin_times_normal_limit <= 1 else 1 if troponin_times_normal_limit <= 3 else 2
    parts = {"history": history, "ECG": ecg, "age": 2 if age_years >= 65 else 1 if age_years >= 45 else 0,
             "risk factors": risk, "troponin": troponin}
    result = _score(parts, "")
    band = "low" if result.value <= 3 else "moderate" if result.value <= 6 else "high"
    return Calculation(result.value, "", result.explanation, band)


# ------------------------------------------------------------------------------------- acute care
def curb_65(age_years: float, bun_mg_dl: float, respiratory_rate: float, systolic_mmhg: float,
            diastolic_mmhg: float, confusion: bool = False) -> Calculation:
    """CURB-65 pneumonia severity (0-5), one point each.

    Confusion; BUN > 19 mg/dL (urea > 7 mmol/L); respiratory rate >= 30; systolic < 90 or diastolic <= 60
    mmHg; age >= 65.

    Args:
        age_years: Age in years.
        bun_mg_dl: Blood urea nitrogen in mg/dL.
        respiratory_rate: Breaths per minute.
        systolic_mmhg: Systolic blood pressure.
        diastolic_mmhg: Diastolic blood pressure.
        confusion: New confusion.
    """
    parts = {"confusion": int(confusion), "BUN > 19": int(bun_mg_dl > 19), "RR >= 30": int(respiratory_rate >= 30),
             "low BP": int(systolic_mmhg < 90 or diastolic_mmhg <= 60), "age >= 65": int(age_years >= 65)}
    return _score(parts, "")


def qsofa(respiratory_rate: float, systolic_mmhg: float, altered_mentation: bool = False) -> Calculation:
    """qSOFA sepsis screen (0-3): respiratory rate >= 22, systolic <= 100 mmHg, altered mentation (GCS < 15).

    Args:
        respiratory_rate: Breaths per minute.
        systolic_mmhg: Systolic blood pressure.
        altered_mentation: Altered mental status (GCS below 15).
    """
    parts = {"RR >= 22": int(respiratory_rate >= 22), "SBP <= 100": int(systolic_mmhg <= 100),
             "altered mentation": int(altered_mentation)}
    result = _score(parts, "")
    return Calculation(result.value, "", result.explanation, "high risk" if result.value >= 2 else "low risk")


def glasgow_coma_scale(eye: int, verbal: int, motor: int) -> Calculation:
    """Glasgow Coma Scale (3-15): eye 1-4, verbal 1-5, motor 1-6.

    Args:
        eye: Eye opening: 4 spontaneous, 3 to voice, 2 to pain, 1 none.
        verbal: Verbal: 5 oriented, 4 confused, 3 inappropriate words, 2 incomprehensible sounds, 1 none.
        motor: Motor: 6 obeys, 5 localizes pain, 4 withdraws, 3 abnormal flexion, 2 extension, 1 none.
    """
    for name, value, top in (("eye", eye, 4), ("verbal", verbal, 5), ("motor", motor, 6)):
        if not 1 <= value <= top:
            raise ValueError(f"{name} must be between 1 and {top}, got {value!r}")
    result = _score({"eye": eye, "verbal": verbal, "motor": motor}, "")
    total = result.value
    band = "severe" if total <= 8 else "moderate" if total <= 12 else "mild"
    return Calculation(total, "", result.explanation, band)


# ------------------------------------------------------------------------------------- liver
def meld_na(creatinine_mg_dl: float, bilirubin_mg_dl: float, inr: float, sodium_mmol_l: float,
            dialysis_twice_in_past_week: bool = False) -> Calculation:
    """MELD-Na (OPTN 2016), 6-40.

    Creatinine, bilirubin and INR below 1.0 are set to 1.0; creatinine above 4.0, or dialysis twice in the past
    week, sets it to 4.0; sodium is bounded to 125-137. MELD(i) = 0.957 ln(Cr) + 0.378 ln(bili) +
    1.120 ln(INR) + 0.643, rounded to the tenth and multiplied by 10; when above 11,
    MELD = MELD(i) + 1.32 (137 - Na) - 0.033 MELD(i) (137 - Na). Rounded to an integer, capped at 40.

    Args:
        creatinine_mg_dl: Serum creatinine in mg/dL.
        bilirubin_mg_dl: Total bilirubin in mg/dL.
        inr: International normalized ratio.
        sodium_mmol_l: Serum sodium in mmol/L.
        dialysis_twice_in_past_week: Dialysis at least twice (or CVVHD) in the past week.
    """
    creatinine = 4.0 if dialysis_twice_in_past_week else min(max(creatinine_mg_dl, 1.0), 4.0)
    bilirubin, ratio = max(bilirubin_mg_dl, 1.0), max(inr, 1.0)
    sodium = min(max(sodium_mmol_l, 125.0), 137.0)
    initial = 0.957 * math.log(creatinine) + 0.378 * math.log(bilirubin) + 1.120 * math.log(ratio) + 0.643
    meld_i = round(round(initial, 1) * 10, 1)
    value = meld_i
    if meld_i > 11:
        value = meld_i + 1.32 * (137 - sodium) - 0.033 * meld_i * (137 - sodium)
    value = min(float(round(value)), 40.0)
    return Calculation(value, "", f"Cr {creatinine:g}, bili {bilirubin:g}, INR {ratio:g}, Na {sodium:g}; "
                       f"MELD(i) = {initial:.4f} -> {meld_i:g}; MELD-Na = {value:g}")


def child_pugh(bilirubin_mg_dl: float, albumin_g_dl: float, inr: float,
               ascites: Literal["none", "slight", "moderate"] = "none",
               encephalopathy: Literal["none", "grade 1-2", "grade 3-4"] = "none") -> Calculation:
    """Child-Pugh score of cirrhosis severity (5-15) and class A (5-6), B (7-9), C (10-15).

    Bilirubin < 2 / 2-3 / > 3 mg/dL; albumin > 3.5 / 2.8-3.5 / < 2.8 g/dL; INR < 1.7 / 1.7-2.3 / > 2.3;
    ascites none / slight / moderate or severe; encephalopathy none / grade 1-2 / grade 3-4: 1, 2, 3 points.

    Args:
        bilirubin_mg_dl: Total bilirubin in mg/dL.
        albumin_g_dl: Albumin in g/dL.
        inr: International normalized ratio.
        ascites: "none", "slight" or "moderate" (moderate to severe).
        encephalopathy: "none", "grade 1-2" or "grade 3-4".
    """
    parts = {
        "bilirubin": 1 if bilirubin_mg_dl < 2 else 2 if bilirubin_mg_dl <= 3 else 3,
        "albumin": 1 if albumin_g_dl > 3.5 else 2 if albumin_g_dl >= 2.8 else 3,
        "INR": 1 if inr < 1.7 else 2 if inr <= 2.3 else 3,
        "ascites": {"none": 1, "slight": 2, "moderate": 3}[ascites],
        "encephalopathy": {"none": 1, "grade 1-2": 2, "grade 3-4": 3}[encephalopathy],
    }
    result = _score(parts, "")
    band = "A" if result.value <= 6 else "B" if result.value <= 9 else "C"
    return Calculation(result.value, "", result.explanation, band)


def _score(parts: dict[str, float], unit: str) -> Calculation:
    total = sum(parts.values())
    value = float(total) if isinstance(total, float) and not float(total).is_integer() else int(total)
    text = " + ".join(f"{name} {points:g}" for name, points in parts.items()) + f" = {value:g}"
    return Calculation(value, unit, text, details={k: float(v) for k, v in parts.items()})


CALCULATORS: dict[str, Callable[..., Calculation]] = {
    "bmi": bmi,
    "bsa": bsa,
    "ideal_body_weight": ideal_body_weight,
    "egfr_ckd_epi_2021": egfr_ckd_epi_2021,
    "cockcroft_gault": cockcroft_gault,
    "anion_gap": anion_gap,
    "corrected_calcium": corrected_calcium,
    "serum_osmolality": serum_osmolality,
    "ldl_friedewald": ldl_friedewald,
    "fib4": fib4,
    "qtc": qtc,
    "mean_arterial_pressure": mean_arterial_pressure,
    "cha2ds2_vasc": cha2ds2_vasc,
    "has_bled": has_bled,
    "wells_pe": wells_pe,
    "heart_score": heart_score,
    "curb_65": curb_65,
    "qsofa": qsofa,
    "glasgow_coma_scale": glasgow_coma_scale,
    "meld_na": meld_na,
    "child_pugh": child_pugh,
}


class CalculatorError(ValueError):
    """Inputs a calculator cannot use; the message names the field and how to fix it."""


_TOOLS: dict[str, Any] = {}


def _tool_for(name: str) -> Any:
    from agentgym.tools import Tool

    if name not in _TOOLS:
        _TOOLS[name] = Tool(CALCULATORS[name], name=name)
    return _TOOLS[name]


def calculator_inputs(name: str) -> str:
    """One line naming a calculator's inputs, their types and which are optional."""
    schema = _tool_for(name).parameters_schema
    required = set(schema.get("required", []))
    pieces = []
    for key, spec in schema["properties"].items():
        kind = spec.get("type") or "/".join(str(s.get("type", s.get("const", ""))) for s in spec.get("anyOf", []))
        if "enum" in spec:
            kind = "|".join(map(str, spec["enum"]))
        pieces.append(f"{key}: {kind}" + ("" if key in required else "?"))
    return ", ".join(pieces)


def describe_calculators() -> str:
    """Each calculator's name, what it computes, and its inputs (`?` marks optional ones)."""
    lines = []
    for name, function in CALCULATORS.items():
        summary = (function.__doc__ or "").strip().splitlines()[0]
        lines.append(f"- {name}: {summary} Inputs: {calculator_inputs(name)}")
    return "\n".join(lines)


def calculate(name: str, inputs: dict[str, Any]) -> Calculation:
    """Validate `inputs` for calculator `name` and run it.

    Raises:
        CalculatorError: unknown calculator (lists the known ones), or inputs missing, mistyped or out of
            range (names the field and the expected inputs).
    """
    if name not in CALCULATORS:
        raise CalculatorError(f"unknown calculator {name!r}; available: {', '.join(CALCULATORS)}")
    if not isinstance(inputs, dict):
        raise CalculatorError(f"inputs must be an object of named values; {name} takes {calculator_inputs(name)}")
    import pydantic

    tool = _tool_for(name)
    try:
        validated = tool.arguments_model.model_validate(inputs)
    except pydantic.ValidationError as error:
        message = tool.describe_validation_error(error).split(". Example call:")[0]
        message = message.replace(f"invalid arguments for tool '{name}'", f"invalid inputs for calculator '{name}'")
        raise CalculatorError(message.removeprefix("Error: ") + f". {name} takes {calculator_inputs(name)}") from None
    values = {key: getattr(validated, key) for key in type(validated).model_fields}
    try:
        return CALCULATORS[name](**values)
    except ValueError as error:
        raise CalculatorError(f"{name}: {error}") from None
