"""Laboratory tests, vital signs, scores and panels, by LOINC code.

The codes are LOINC's; the names and descriptions are this project's own short wording. Reference ranges
are typical adult ranges used by the generator to set ``referenceRange`` and ``interpretation``; a real
laboratory's ranges differ by method and population.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Measurement:
    """One LOINC-coded measurement.

    Attributes:
        loinc: The LOINC code.
        name: Short display name (ours).
        description: What it measures, in our words.
        unit: UCUM unit code ("" for coded results).
        low, high: Typical adult reference range (None: no bound on that side).
        decimals: Decimals the value is reported with.
        category: FHIR observation category: laboratory, vital-signs, survey, procedure, social-history.
    """

    loinc: str
    name: str
    description: str
    unit: str
    low: float | None
    high: float | None
    decimals: int
    category: str


def _lab(loinc: str, name: str, description: str, unit: str, low: float | None, high: float | None,
         decimals: int, category: str = "laboratory") -> Measurement:
    return Measurement(loinc, name, description, unit, low, high, decimals, category)


LABS: dict[str, Measurement] = {m.loinc: m for m in [
    _lab("4548-4", "Hemoglobin A1c", "Share of hemoglobin carrying glucose; reflects average blood sugar over about three months", "%", 4.0, 5.6, 1),
    _lab("2345-7", "Glucose", "Sugar level in serum or plasma", "mg/dL", 70, 99, 0),
    _lab("2160-0", "Creatinine", "Serum creatinine, a waste product cleared by the kidneys", "mg/dL", 0.6, 1.3, 2),
    _lab("98979-8", "eGFR (CKD-EPI 2021)", "Estimated kidney filtration from creatinine, age and sex by the 2021 race-free CKD-EPI equation", "mL/min/{1.73_m2}", 60, None, 0),
    _lab("2823-3", "Potassium", "Serum or plasma potassium", "mmol/L", 3.5, 5.1, 1),
    _lab("2951-2", "Sodium", "Serum or plasma sodium", "mmol/L", 136, 145, 0),
    _lab("2075-0", "Chloride", "Serum or plasma chloride", "mmol/L", 98, 107, 0),
    _lab("2028-9", "Carbon dioxide (bicarbonate)", "Total carbon dioxide in serum or plasma, mostly bicarbonate", "mmol/L", 22, 29, 0),
    _lab("3094-0", "Urea nitrogen (BUN)", "Blood urea nitrogen in serum or plasma", "mg/dL", 7, 20, 0),
    _lab("17861-6", "Calcium", "Total calcium in serum or plasma", "mg/dL", 8.6, 10.3, 1),
    _lab("1751-7", "Albumin", "Albumin protein in serum or plasma", "g/dL", 3.5, 5.0, 1),
    _lab("2093-3", "Total cholesterol", "All cholesterol in serum or plasma", "mg/dL", None, 199, 0),
    _lab("2571-8", "Triglycerides", "Triglyceride fats in serum or plasma", "mg/dL", None, 149, 0),
    _lab("2085-9", "HDL cholesterol", "Cholesterol carried by high-density lipoprotein", "mg/dL", 40, None, 0),
    _lab("18262-6", "LDL cholesterol", "Cholesterol carried by low-density lipoprotein, measured directly", "mg/dL", None, 99, 0),
    _lab("6690-2", "White blood cell count", "Leukocytes per volume of blood", "10*3/uL", 4.0, 11.0, 1),
    _lab("718-7", "Hemoglobin", "Hemoglobin concentration in blood", "g/dL", 12.0, 17.5, 1),
    _lab("4544-3", "Hematocrit", "Share of blood volume taken by red cells", "%", 36, 50, 1),
    _lab("777-3", "Platelet count", "Platelets per volume of blood", "10*3/uL", 150, 400, 0),
    _lab("3016-3", "TSH", "Thyroid-stimulating hormone in serum or plasma", "m[IU]/L", 0.4, 4.0, 2),
    _lab("30934-4", "BNP", "B-type natriuretic peptide, raised when the heart is under strain", "pg/mL", None, 99, 0),
    _lab("6301-6", "INR", "Clotting time relative to a standard (international normalized ratio)", "{INR}", 0.8, 1.2, 1),
    _lab("2524-7", "Lactate", "Lactic acid in serum or plasma; raised in poor tissue perfusion", "mmol/L", 0.5, 2.0, 1),
    _lab("1975-2", "Total bilirubin", "All bilirubin in serum or plasma", "mg/dL", 0.1, 1.2, 1),
    _lab("1742-6", "ALT", "Alanine aminotransferase, a liver enzyme", "U/L", 7, 56, 0),
    _lab("1920-8", "AST", "Aspartate aminotransferase, a liver and muscle enzyme", "U/L", 10, 40, 0),
    _lab("19123-9", "Magnesium", "Magnesium in serum or plasma", "mg/dL", 1.7, 2.2, 1),
    _lab("14959-1", "Urine albumin/creatinine ratio", "Albumin in urine relative to creatinine; a marker of kidney damage", "mg/g", None, 29, 0),
    _lab("10839-9", "Troponin I", "Cardiac troponin I, released by injured heart muscle", "ng/mL", None, 0.04, 2),
    _lab("1988-5", "C-reactive protein", "An inflammation marker in serum or plasma", "mg/L", None, 10, 1),
    _lab("33959-8", "Procalcitonin", "A marker that rises in bacterial infection", "ng/mL", None, 0.49, 2),
    _lab("2106-3", "Pregnancy test (urine hCG)", "Whether human chorionic gonadotropin is present in urine", "", None, None, 0),
    _lab("600-7", "Blood culture", "Bacteria grown from a blood sample", "", None, None, 0),
]}

VITALS: dict[str, Measurement] = {m.loinc: m for m in [
    _lab("85354-9", "Blood pressure panel", "Systolic and diastolic blood pressure taken together", "", None, None, 0, "vital-signs"),
    _lab("8480-6", "Systolic blood pressure", "Arterial pressure while the heart contracts", "mm[Hg]", 90, 129, 0, "vital-signs"),
    _lab("8462-4", "Diastolic blood pressure", "Arterial pressure while the heart relaxes", "mm[Hg]", 60, 79, 0, "vital-signs"),
    _lab("8867-4", "Heart rate", "Heart beats per minute", "/min", 60, 100, 0, "vital-signs"),
    _lab("9279-1", "Respiratory rate", "Breaths per minute", "/min", 12, 20, 0, "vital-signs"),
    _lab("8310-5", "Body temperature", "Core body temperature", "Cel", 36.1, 37.5, 1, "vital-signs"),
    _lab("59408-5", "Oxygen saturation (pulse oximetry)", "Share of hemoglobin carrying oxygen, read by a pulse oximeter", "%", 95, 100, 0, "vital-signs"),
    _lab("29463-7", "Body weight", "Weight of the body", "kg", None, None, 1, "vital-signs"),
    _lab("8302-2", "Body height", "Standing height", "cm", None, None, 1, "vital-signs"),
    _lab("39156-5", "Body mass index", "Weight in kilograms divided by the square of height in meters", "kg/m2", 18.5, 24.9, 1, "vital-signs"),
]}

SCORES: dict[str, Measurement] = {m.loinc: m for m in [
    _lab("44261-6", "PHQ-9 total score", "Sum of the nine depression questionnaire items, 0 to 27", "{score}", 0, 4, 0, "survey"),
    _lab("70274-6", "GAD-7 total score", "Sum of the seven anxiety questionnaire items, 0 to 21", "{score}", 0, 4, 0, "survey"),
    _lab("72514-3", "Pain severity (0-10)", "Pain the patient reports on a 0 to 10 scale", "{score}", 0, 3, 0, "survey"),
    _lab("9269-2", "Glasgow coma score total", "Sum of eye, verbal and motor responses, 3 to 15", "{score}", 15, 15, 0, "survey"),
    _lab("72166-2", "Tobacco smoking status", "Whether the patient smokes, smoked or never smoked", "", None, None, 0, "social-history"),
    _lab("8634-8", "QT interval (ECG)", "Time from the start of the Q wave to the end of the T wave on an electrocardiogram", "ms", 350, 450, 0, "procedure"),
]}

# Panels reported as a DiagnosticReport grouping their member results.
PANELS: dict[str, tuple[str, tuple[str, ...]]] = {
    "51990-0": ("Basic metabolic panel", ("2345-7", "3094-0", "2160-0", "98979-8", "2951-2", "2823-3", "2075-0", "2028-9", "17861-6")),
    "24323-8": ("Comprehensive metabolic panel", ("2345-7", "3094-0", "2160-0", "98979-8", "2951-2", "2823-3", "2075-0", "2028-9", "17861-6", "1751-7", "1975-2", "1742-6", "1920-8")),
    "57698-3": ("Lipid panel", ("2093-3", "2571-8", "2085-9", "18262-6")),
    "58410-2": ("Complete blood count", ("6690-2", "718-7", "4544-3", "777-3")),
}

# Coded answers for coded observations (SNOMED CT).
SMOKING_STATUS = {"never": ("266919005", "Never smoked tobacco"), "former": ("8517006", "Ex-smoker"),
                  "current": ("449868002", "Smokes tobacco daily")}
PRESENCE = {"positive": ("10828004", "Positive"), "negative": ("260385009", "Negative")}
ORGANISMS = {"ecoli": ("112283007", "Escherichia coli"), "saureus": ("3092008", "Staphylococcus aureus"),
             "none": ("264868006", "No growth")}

ALL_MEASUREMENTS: dict[str, Measurement] = {**LABS, **VITALS, **SCORES}
