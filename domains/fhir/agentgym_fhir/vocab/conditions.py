"""Conditions (SNOMED CT with the matching ICD-10-CM code), procedures, encounter types, vaccines and
allergies used by the generator. Codes are the code systems'; names and descriptions are our wording."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConditionCode:
    """A condition coded in SNOMED CT and ICD-10-CM.

    Attributes:
        key: Our short handle (``diabetes``).
        snomed: SNOMED CT concept id.
        icd10: ICD-10-CM code (with its dot).
        name: Display name (ours).
        description: One line on what it is, in our words.
        chronic: Whether it usually stays on the problem list.
    """

    key: str
    snomed: str
    icd10: str
    name: str
    description: str
    chronic: bool


def _c(key: str, snomed: str, icd10: str, name: str, description: str, chronic: bool = True) -> ConditionCode:
    return ConditionCode(key, snomed, icd10, name, description, chronic)


CONDITIONS: dict[str, ConditionCode] = {c.key: c for c in [
    _c("hypertension", "59621000", "I10", "Essential hypertension", "Blood pressure persistently above target without a secondary cause"),
    _c("diabetes", "44054006", "E11.9", "Type 2 diabetes mellitus", "High blood sugar from insulin resistance and failing insulin secretion"),
    _c("prediabetes", "15777000", "R73.03", "Prediabetes", "Blood sugar above normal but below the diabetes threshold"),
    _c("hyperlipidemia", "55822004", "E78.5", "Hyperlipidemia", "Raised blood cholesterol or triglycerides"),
    _c("ckd", "709044004", "N18.9", "Chronic kidney disease", "Kidney function reduced for three months or more"),
    _c("ckd3", "433144002", "N18.30", "Chronic kidney disease stage 3", "Kidney filtration 30 to 59 mL/min/1.73 m2"),
    _c("ckd4", "431857002", "N18.4", "Chronic kidney disease stage 4", "Kidney filtration 15 to 29 mL/min/1.73 m2"),
    _c("afib", "49436004", "I48.91", "Atrial fibrillation", "Irregular, often fast heart rhythm from disorganized atrial activity"),
    _c("heart_failure", "84114007", "I50.9", "Heart failure", "The heart cannot pump enough blood for the body's needs"),
    _c("cad", "53741008", "I25.10", "Coronary artery disease", "Narrowing of the heart's arteries by plaque"),
    _c("copd", "13645005", "J44.9", "Chronic obstructive pulmonary disease", "Lasting airflow limitation, usually from smoking"),
    _c("asthma", "195967001", "J45.909", "Asthma", "Airways that narrow reversibly in response to triggers"),
    _c("depression", "370143000", "F32.9", "Major depressive disorder", "Persistent low mood or loss of interest with other symptoms"),
    _c("anxiety", "197480006", "F41.9", "Anxiety disorder", "Excessive worry or fear that disturbs daily life"),
    _c("hypothyroidism", "40930008", "E03.9", "Hypothyroidism", "The thyroid gland makes too little hormone"),
    _c("obesity", "414916001", "E66.9", "Obesity", "Body mass index of 30 or more"),
    _c("osteoarthritis", "396275006", "M19.90", "Osteoarthritis", "Wear of joint cartilage causing pain and stiffness"),
    _c("gerd", "235595009", "K21.9", "Gastroesophageal reflux disease", "Stomach acid flowing back into the esophagus"),
    _c("pregnancy", "72892002", "Z34.90", "Normal pregnancy", "A pregnancy without complications", chronic=False),
    _c("sepsis", "91302008", "A41.9", "Sepsis", "Life-threatening organ dysfunction caused by the body's response to infection", chronic=False),
    _c("pneumonia", "233604007", "J18.9", "Pneumonia", "Infection of the lung tissue", chronic=False),
    _c("uti", "68566005", "N39.0", "Urinary tract infection", "Bacterial infection of the bladder or urinary tract", chronic=False),
    _c("bronchitis", "10509002", "J20.9", "Acute bronchitis", "Short-lived inflammation of the large airways", chronic=False),
    _c("sinusitis", "444814009", "J01.90", "Viral sinusitis", "Inflammation of the sinuses caused by a virus", chronic=False),
    _c("strep_throat", "43878008", "J02.0", "Streptococcal pharyngitis", "Throat infection by group A streptococcus", chronic=False),
    _c("hypokalemia", "43339004", "E87.6", "Hypokalemia", "Potassium in the blood below normal", chronic=False),
    _c("hyperkalemia", "14140009", "E87.5", "Hyperkalemia", "Potassium in the blood above normal", chronic=False),
    _c("aki", "14669001", "N17.9", "Acute kidney injury", "A sudden fall in kidney function", chronic=False),
    _c("hf_exacerbation", "84114007", "I50.9", "Heart failure", "Worsening of heart failure needing treatment", chronic=False),
    _c("copd_exacerbation", "195951007", "J44.1", "Acute exacerbation of COPD", "A flare of COPD with more breathlessness and sputum", chronic=False),
    _c("back_pain", "279039007", "M54.50", "Low back pain", "Pain in the lower back", chronic=False),
    _c("migraine", "37796009", "G43.909", "Migraine", "Recurring headaches, often one-sided, with nausea or light sensitivity"),
    _c("gout", "90560007", "M10.9", "Gout", "Joint inflammation from uric acid crystals"),
    _c("anemia", "271737000", "D64.9", "Anemia", "Too little hemoglobin in the blood"),
]}

# Referral specialties (SNOMED CT qualifier values used in ServiceRequest.performerType).
SPECIALTIES = {
    "cardiology": ("394579002", "Cardiology"), "nephrology": ("394589003", "Nephrology"),
    "endocrinology": ("394583002", "Endocrinology"), "psychiatry": ("394587001", "Psychiatry"),
    "pulmonology": ("418112009", "Pulmonary medicine"), "obstetrics": ("394585009", "Obstetrics and gynecology"),
}

PROCEDURES: dict[str, tuple[str, str]] = {
    "medication_reconciliation": ("430193006", "Medication reconciliation"),
    "depression_screening": ("171207006", "Depression screening"),
    "ecg": ("29303009", "Electrocardiogram"),
    "echocardiography": ("40701008", "Echocardiography"),
    "colonoscopy": ("73761001", "Colonoscopy"),
    "spirometry": ("127783003", "Spirometry"),
    "chest_xray": ("399208008", "Plain chest X-ray"),
    "blood_culture": ("30088009", "Blood culture"),
    "dialysis": ("265764009", "Renal dialysis"),
    "delivery": ("177184002", "Normal delivery procedure"),
    "cesarean": ("11466000", "Cesarean section"),
    "oxygen": ("371908008", "Oxygen administration by mask"),
    "nebulizer": ("56251003", "Nebulizer therapy"),
    "pci": ("415070008", "Percutaneous coronary intervention"),
}

REFERRAL = ("3457005", "Patient referral")
LAB_PROCEDURE_CATEGORY = ("108252007", "Laboratory procedure")

ENCOUNTER_TYPES: dict[str, tuple[str, str, str]] = {  # key: (class code, SNOMED type code, display)
    "checkup": ("AMB", "185349003", "Encounter for check up"),
    "followup": ("AMB", "390906007", "Follow-up encounter"),
    "problem": ("AMB", "185347001", "Encounter for problem"),
    "prenatal": ("AMB", "424619006", "Prenatal visit"),
    "emergency": ("EMER", "50849002", "Emergency room admission"),
    "inpatient": ("IMP", "32485007", "Hospital admission"),
}
ENCOUNTER_CLASS_DISPLAY = {"AMB": "ambulatory", "EMER": "emergency", "IMP": "inpatient encounter"}

VACCINES: dict[str, tuple[str, str]] = {  # CVX codes
    "influenza": ("140", "Influenza, seasonal, injectable, preservative free"),
    "tdap": ("115", "Tdap"),
    "td": ("113", "Td (adult), preservative free"),
    "pneumococcal_conjugate": ("133", "Pneumococcal conjugate PCV 13"),
    "pneumococcal_polysaccharide": ("33", "Pneumococcal polysaccharide PPV23"),
    "zoster": ("187", "Zoster vaccine recombinant"),
    "covid19": ("208", "COVID-19, mRNA, LNP-S, PF, 30 mcg/0.3 mL dose"),
    "hepatitis_b": ("43", "Hepatitis B vaccine, adult dosage"),
}

ALLERGIES: dict[str, tuple[str, str, str, str]] = {  # key: (SNOMED, display, category, criticality)
    "penicillin": ("91936005", "Allergy to penicillin", "medication", "high"),
    "sulfonamide": ("294505008", "Allergy to sulfonamide", "medication", "low"),
    "peanut": ("91935009", "Allergy to peanuts", "food", "high"),
    "shellfish": ("300913006", "Shellfish allergy", "food", "high"),
    "bee_venom": ("424213003", "Allergy to bee venom", "environment", "low"),
    "grass_pollen": ("418689008", "Allergy to grass pollen", "environment", "low"),
    "latex": ("300916003", "Latex allergy", "environment", "low"),
}
ALLERGY_REACTIONS = {"hives": ("247472004", "Hives"), "anaphylaxis": ("39579001", "Anaphylaxis"),
                     "rash": ("271807003", "Skin rash"), "nausea": ("422587007", "Nausea")}
