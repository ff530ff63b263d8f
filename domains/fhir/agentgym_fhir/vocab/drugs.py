"""Drugs by RxNorm ingredient code (RxCUI), with the usual adult dose, route, frequency and drug class.

Medication requests name the ingredient's RxCUI and carry the dose in ``dosageInstruction``, which is
valid FHIR and keeps one code per drug. Doses are common starting or maintenance doses, written for
generating plausible records, not prescribing advice. ``cautions`` are short, our own wording of well-known
safety facts that safety-check tasks can build on.
"""

from __future__ import annotations

from dataclasses import dataclass

# SNOMED CT route codes.
ROUTES: dict[str, tuple[str, str]] = {
    "oral": ("26643006", "Oral route"),
    "intravenous": ("47625008", "Intravenous route"),
    "subcutaneous": ("34206005", "Subcutaneous route"),
    "inhalation": ("447694001", "Respiratory tract route"),
    "intramuscular": ("78421000", "Intramuscular route"),
}


@dataclass(frozen=True)
class Drug:
    """One drug ingredient.

    Attributes:
        key: Our short handle (``metformin``).
        rxcui: RxNorm ingredient concept id.
        name: Ingredient name.
        drug_class: Pharmacological or therapeutic class, in words.
        dose: Usual single dose (number).
        unit: UCUM unit of the dose (``mg``, ``[iU]``, ``{puff}``, ``meq``).
        route: Key into `ROUTES`.
        per_day: Doses per day (0: as needed).
        cautions: Safety facts in our words.
    """

    key: str
    rxcui: str
    name: str
    drug_class: str
    dose: float
    unit: str
    route: str
    per_day: int
    cautions: str = ""

    @property
    def display(self) -> str:
        """Human-readable drug and dose, e.g. ``metformin 500 mg oral``."""
        dose = f"{self.dose:g}"
        unit = {"[iU]": "units", "{puff}": "puffs", "meq": "mEq"}.get(self.unit, self.unit)
        return f"{self.name} {dose} {unit} {self.route}"


def _d(key: str, rxcui: str, name: str, drug_class: str, dose: float, unit: str, route: str, per_day: int,
       cautions: str = "") -> Drug:
    return Drug(key, rxcui, name, drug_class, dose, unit, route, per_day, cautions)


DRUGS: dict[str, Drug] = {d.key: d for d in [
    _d("metformin", "6809", "metformin", "biguanide", 500, "mg", "oral", 2,
       "Avoid when eGFR is below 30; hold around iodinated contrast."),
    _d("insulin_glargine", "274783", "insulin glargine", "long-acting insulin", 20, "[iU]", "subcutaneous", 1,
       "Risk of hypoglycemia."),
    _d("insulin_lispro", "86009", "insulin lispro", "rapid-acting insulin", 6, "[iU]", "subcutaneous", 3,
       "Risk of hypoglycemia; give with meals."),
    _d("empagliflozin", "1545653", "empagliflozin", "SGLT2 inhibitor", 10, "mg", "oral", 1,
       "Not started for glucose control when eGFR is below 30."),
    _d("glipizide", "4821", "glipizide", "sulfonylurea", 5, "mg", "oral", 1, "Risk of hypoglycemia, more so in the elderly."),
    _d("lisinopril", "29046", "lisinopril", "ACE inhibitor", 10, "mg", "oral", 1,
       "Raises potassium; contraindicated in pregnancy; can cause cough and angioedema."),
    _d("losartan", "52175", "losartan", "angiotensin receptor blocker", 50, "mg", "oral", 1,
       "Raises potassium; contraindicated in pregnancy."),
    _d("amlodipine", "17767", "amlodipine", "calcium channel blocker", 5, "mg", "oral", 1, "Ankle swelling."),
    _d("hydrochlorothiazide", "5487", "hydrochlorothiazide", "thiazide diuretic", 25, "mg", "oral", 1,
       "Lowers potassium and sodium."),
    _d("furosemide", "4603", "furosemide", "loop diuretic", 40, "mg", "oral", 1, "Lowers potassium and magnesium."),
    _d("spironolactone", "9997", "spironolactone", "potassium-sparing diuretic", 25, "mg", "oral", 1,
       "Raises potassium, especially with ACE inhibitors, ARBs or kidney disease."),
    _d("metoprolol", "6918", "metoprolol", "beta blocker", 25, "mg", "oral", 2, "Slows the heart rate."),
    _d("carvedilol", "20352", "carvedilol", "beta blocker", 6.25, "mg", "oral", 2, "Slows the heart rate."),
    _d("atorvastatin", "83367", "atorvastatin", "statin", 40, "mg", "oral", 1, "Muscle aches; check liver enzymes."),
    _d("simvastatin", "36567", "simvastatin", "statin", 20, "mg", "oral", 1, "Muscle toxicity with some interacting drugs."),
    _d("aspirin", "1191", "aspirin", "antiplatelet", 81, "mg", "oral", 1,
       "Adds bleeding risk to anticoagulants."),
    _d("clopidogrel", "32968", "clopidogrel", "antiplatelet", 75, "mg", "oral", 1, "Bleeding risk."),
    _d("warfarin", "11289", "warfarin", "vitamin K antagonist anticoagulant", 5, "mg", "oral", 1,
       "Keep INR 2 to 3 for atrial fibrillation; many interactions; bleeding risk."),
    _d("apixaban", "1364430", "apixaban", "direct oral anticoagulant", 5, "mg", "oral", 2, "Bleeding risk."),
    _d("rivaroxaban", "1114195", "rivaroxaban", "direct oral anticoagulant", 20, "mg", "oral", 1,
       "Bleeding risk; avoid when creatinine clearance is below 15."),
    _d("digoxin", "3407", "digoxin", "cardiac glycoside", 0.125, "mg", "oral", 1,
       "Toxicity is more likely with low potassium or poor kidney function."),
    _d("albuterol", "435", "albuterol", "short-acting beta agonist", 2, "{puff}", "inhalation", 0, "Tremor, fast heart rate."),
    _d("tiotropium", "69120", "tiotropium", "long-acting muscarinic antagonist", 2, "{puff}", "inhalation", 1, ""),
    _d("fluticasone", "41126", "fluticasone", "inhaled corticosteroid", 2, "{puff}", "inhalation", 2, "Rinse mouth after use."),
    _d("prednisone", "8640", "prednisone", "systemic corticosteroid", 40, "mg", "oral", 1, "Raises blood sugar."),
    _d("sertraline", "36437", "sertraline", "SSRI antidepressant", 50, "mg", "oral", 1,
       "Adds bleeding risk with anticoagulants; serotonin syndrome with other serotonergic drugs."),
    _d("fluoxetine", "4493", "fluoxetine", "SSRI antidepressant", 20, "mg", "oral", 1, "Many interactions through CYP2D6."),
    _d("levothyroxine", "10582", "levothyroxine", "thyroid hormone", 50, "ug", "oral", 1, "Take on an empty stomach."),
    _d("omeprazole", "7646", "omeprazole", "proton pump inhibitor", 20, "mg", "oral", 1, ""),
    _d("potassium_chloride", "8591", "potassium chloride", "potassium supplement", 20, "meq", "oral", 1,
       "Do not give when potassium is high or kidney function is poor without monitoring."),
    _d("potassium_chloride_iv", "8591", "potassium chloride", "potassium supplement", 10, "meq", "intravenous", 0,
       "Infuse slowly; never as a push."),
    _d("ceftriaxone", "2193", "ceftriaxone", "third-generation cephalosporin", 1000, "mg", "intravenous", 1, ""),
    _d("vancomycin", "11124", "vancomycin", "glycopeptide antibiotic", 1000, "mg", "intravenous", 2,
       "Dose by kidney function; monitor levels."),
    _d("amoxicillin", "723", "amoxicillin", "penicillin antibiotic", 500, "mg", "oral", 3, "Do not give with a penicillin allergy."),
    _d("azithromycin", "18631", "azithromycin", "macrolide antibiotic", 500, "mg", "oral", 1, "Can prolong the QT interval."),
    _d("nitrofurantoin", "7454", "nitrofurantoin", "urinary antibacterial", 100, "mg", "oral", 2, "Avoid when eGFR is below 30."),
    _d("cephalexin", "2231", "cephalexin", "first-generation cephalosporin", 500, "mg", "oral", 4, ""),
    _d("sulfamethoxazole", "10180", "sulfamethoxazole", "sulfonamide antibiotic", 800, "mg", "oral", 2,
       "Do not give with a sulfonamide allergy; raises potassium."),
    _d("heparin", "5224", "heparin", "anticoagulant", 5000, "[iU]", "subcutaneous", 3, "Bleeding risk; watch platelets."),
    _d("enoxaparin", "67108", "enoxaparin", "low molecular weight heparin", 40, "mg", "subcutaneous", 1,
       "Reduce the dose when creatinine clearance is below 30."),
    _d("acetaminophen", "161", "acetaminophen", "analgesic and antipyretic", 650, "mg", "oral", 4,
       "No more than 3 to 4 g a day; less with liver disease."),
    _d("ibuprofen", "5640", "ibuprofen", "NSAID", 400, "mg", "oral", 3,
       "Avoid in kidney disease, heart failure and with anticoagulants."),
    _d("ondansetron", "26225", "ondansetron", "antiemetic", 4, "mg", "intravenous", 0, "Can prolong the QT interval."),
    _d("sodium_chloride", "9863", "sodium chloride 0.9%", "intravenous fluid", 1000, "mL", "intravenous", 0, ""),
    _d("norepinephrine", "7512", "norepinephrine", "vasopressor", 8, "ug/min", "intravenous", 0, ""),
    _d("oxytocin", "7824", "oxytocin", "uterotonic", 10, "[iU]", "intramuscular", 0, ""),
    _d("folic_acid", "4511", "folic acid", "vitamin", 0.4, "mg", "oral", 1, ""),
    _d("allopurinol", "519", "allopurinol", "xanthine oxidase inhibitor", 100, "mg", "oral", 1, "Lower the dose in kidney disease."),
    _d("gabapentin", "25480", "gabapentin", "anticonvulsant used for nerve pain", 300, "mg", "oral", 3,
       "Lower the dose in kidney disease."),
]}

# Pairs of drug classes or drugs that interact, in our words (for safety-check tasks).
INTERACTIONS: list[tuple[str, str, str]] = [
    ("warfarin", "aspirin", "more bleeding"),
    ("warfarin", "ibuprofen", "more bleeding"),
    ("apixaban", "aspirin", "more bleeding"),
    ("rivaroxaban", "aspirin", "more bleeding"),
    ("warfarin", "sertraline", "more bleeding"),
    ("lisinopril", "spironolactone", "high potassium"),
    ("losartan", "spironolactone", "high potassium"),
    ("lisinopril", "potassium_chloride", "high potassium"),
    ("spironolactone", "potassium_chloride", "high potassium"),
    ("lisinopril", "losartan", "high potassium and kidney injury (dual RAAS blockade)"),
    ("digoxin", "furosemide", "low potassium raises digoxin toxicity"),
    ("simvastatin", "amlodipine", "higher simvastatin levels (limit simvastatin to 20 mg)"),
    ("azithromycin", "ondansetron", "QT prolongation"),
    ("sertraline", "fluoxetine", "serotonin syndrome"),
]

# Drug (key) to avoid with a condition (key), and why.
CONTRAINDICATIONS: list[tuple[str, str, str]] = [
    ("metformin", "ckd4", "eGFR below 30"),
    ("nitrofurantoin", "ckd4", "eGFR below 30"),
    ("ibuprofen", "ckd", "worsens kidney function"),
    ("ibuprofen", "heart_failure", "fluid retention"),
    ("lisinopril", "pregnancy", "harms the fetus"),
    ("losartan", "pregnancy", "harms the fetus"),
    ("warfarin", "pregnancy", "harms the fetus"),
    ("amoxicillin", "penicillin", "penicillin allergy"),
    ("sulfamethoxazole", "sulfonamide", "sulfonamide allergy"),
]
