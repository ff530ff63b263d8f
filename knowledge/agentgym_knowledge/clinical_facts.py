"""Clinical facts tables written for this project: drugs, laboratory tests and conditions, in our own words.

They feed the default clinical knowledge base (`default.py`), so an agent can look up what a drug treats, what
a lab measures and its usual range, or what a condition is and how it is managed. Values are typical adult
figures for orientation in simulated tasks, not clinical guidance; reference ranges vary between laboratories.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Drug:
    """A medicine: its class, what it treats, a common adult dose, and what to monitor."""

    name: str
    drug_class: str
    treats: str
    dose: str
    monitoring: str
    note: str = ""


@dataclass(frozen=True)
class Lab:
    """A laboratory test: its LOINC code, what it measures, units and the usual adult reference range."""

    name: str
    loinc: str
    measures: str
    units: str
    normal: str
    note: str = ""


@dataclass(frozen=True)
class Interaction:
    """Two drugs whose combination carries a known risk, with the kind of risk (`effect`) in a few words."""

    first: str
    second: str
    effect: str
    why: str


@dataclass(frozen=True)
class Condition:
    """A condition: its ICD-10-CM code, a short summary, how it is found and how it is usually managed."""

    name: str
    icd10: str
    summary: str
    diagnosis: str
    management: str


DRUGS: tuple[Drug, ...] = (
    Drug("metformin", "biguanide", "type 2 diabetes", "500 mg once or twice daily with meals, raised slowly to "
         "1,000 mg twice daily", "kidney function (eGFR) at least yearly; vitamin B12 on long use",
         "avoid when eGFR is below 30; stomach upset is common at the start"),
    Drug("lisinopril", "ACE inhibitor", "high blood pressure, heart failure, protecting the kidneys in diabetes",
         "10 mg once daily, up to 40 mg", "potassium and creatinine 1-2 weeks after starting or raising the dose",
         "dry cough and, rarely, angioedema; not in pregnancy"),
    Drug("losartan", "angiotensin II receptor blocker (ARB)", "high blood pressure, diabetic kidney disease",
         "50 mg once daily, up to 100 mg", "potassium and creatinine after starting",
         "an option when an ACE inhibitor causes cough; not in pregnancy"),
    Drug("amlodipine", "dihydropyridine calcium channel blocker", "high blood pressure, stable angina",
         "5 mg once daily, up to 10 mg", "blood pressure; ankle swelling", "ankle oedema is the usual side effect"),
    Drug("hydrochlorothiazide", "thiazide diuretic", "high blood pressure, fluid retention",
         "12.5 to 25 mg once daily", "sodium, potassium, glucose and uric acid",
         "can lower potassium and sodium and raise uric acid"),
    Drug("chlorthalidone", "thiazide-like diuretic", "high blood pressure", "12.5 to 25 mg once daily",
         "sodium and potassium", "longer acting than hydrochlorothiazide"),
    Drug("metoprolol", "beta blocker (beta-1 selective)", "high blood pressure, angina, heart failure, "
         "rate control in atrial fibrillation, after a heart attack",
         "tartrate 25 to 100 mg twice daily or succinate 25 to 200 mg once daily", "heart rate and blood pressure",
         "do not stop suddenly; can slow the heart too much"),
    Drug("carvedilol", "beta blocker with alpha blockade", "heart failure with reduced ejection fraction, "
         "high blood pressure", "3.125 mg twice daily, raised every two weeks to 25 mg twice daily",
         "heart rate, blood pressure, dizziness", "take with food"),
    Drug("atorvastatin", "statin (HMG-CoA reductase inhibitor)", "high LDL cholesterol, prevention of heart "
         "attack and stroke", "10 to 80 mg once daily", "lipid panel 4-12 weeks after starting; liver enzymes "
         "if symptoms; muscle pain", "muscle aches are the common complaint; rare rhabdomyolysis"),
    Drug("rosuvastatin", "statin", "high LDL cholesterol, cardiovascular prevention", "5 to 40 mg once daily",
         "lipid panel; muscle symptoms", "high intensity at 20-40 mg"),
    Drug("simvastatin", "statin", "high LDL cholesterol", "20 to 40 mg once daily in the evening",
         "lipid panel; muscle symptoms", "many interactions through CYP3A4 (for example amiodarone, diltiazem)"),
    Drug("aspirin", "antiplatelet (COX inhibitor)", "prevention of heart attack and stroke in people with "
         "vascular disease; pain and fever at higher doses", "81 mg once daily for prevention",
         "bleeding, especially from the stomach", "avoid in children with viral illness (Reye syndrome)"),
    Drug("clopidogrel", "P2Y12 antiplatelet", "after coronary stents or heart attack, stroke prevention",
         "75 mg once daily", "bleeding", "often combined with aspirin for a limited time after a stent"),
    Drug("warfarin", "vitamin K antagonist anticoagulant", "atrial fibrillation, venous thrombosis and pulmonary "
         "embolism, mechanical heart valves", "dose adjusted to the INR, commonly 2 to 10 mg daily",
         "INR regularly: target 2.0-3.0 for most uses", "many food and drug interactions; vitamin K reverses it"),
    Drug("apixaban", "direct factor Xa inhibitor anticoagulant", "atrial fibrillation, deep vein thrombosis, "
         "pulmonary embolism", "5 mg twice daily (2.5 mg twice daily in selected patients)",
         "kidney function, bleeding, haemoglobin", "no routine INR monitoring"),
    Drug("rivaroxaban", "direct factor Xa inhibitor anticoagulant", "atrial fibrillation, venous thromboembolism",
         "20 mg once daily with the evening meal for atrial fibrillation", "kidney function, bleeding",
         "take with food for full absorption"),
    Drug("enoxaparin", "low-molecular-weight heparin", "treatment and prevention of venous thromboembolism",
         "40 mg under the skin daily for prevention; 1 mg/kg twice daily for treatment",
         "platelet count, kidney function, bleeding", "dose is reduced when creatinine clearance is below 30"),
    Drug("heparin", "unfractionated heparin anticoagulant", "acute venous thromboembolism, acute coronary "
         "syndromes, anticoagulation in hospital", "by continuous intravenous infusion adjusted to the aPTT",
         "aPTT or anti-Xa level, platelet count (heparin-induced thrombocytopenia)",
         "protamine reverses it"),
    Drug("furosemide", "loop diuretic", "fluid overload in heart failure, kidney disease and cirrhosis, oedema",
         "20 to 80 mg by mouth once or twice daily", "weight, potassium, sodium, creatinine",
         "can cause low potassium and dehydration"),
    Drug("spironolactone", "mineralocorticoid receptor antagonist (potassium-sparing diuretic)",
         "heart failure with reduced ejection fraction, resistant hypertension, ascites in cirrhosis",
         "25 to 50 mg once daily", "potassium and creatinine", "can raise potassium; breast tenderness in men"),
    Drug("insulin glargine", "long-acting basal insulin", "type 1 and type 2 diabetes",
         "often started at 10 units (or 0.1-0.2 units/kg) once daily, adjusted to fasting glucose",
         "blood glucose, HbA1c, hypoglycaemia", "given once a day at the same time"),
    Drug("insulin lispro", "rapid-acting mealtime insulin", "type 1 and type 2 diabetes",
         "units before meals, individually adjusted", "blood glucose before meals and at bedtime",
         "given within 15 minutes of a meal"),
    Drug("glipizide", "sulfonylurea", "type 2 diabetes", "2.5 to 10 mg once or twice daily before meals",
         "blood glucose, hypoglycaemia", "can cause low blood sugar, especially in older people"),
    Drug("empagliflozin", "SGLT2 inhibitor", "type 2 diabetes, heart failure, chronic kidney disease",
         "10 mg once daily (up to 25 mg for glucose)", "kidney function, genital infections, ketoacidosis",
         "lowers glucose by making the kidneys pass more sugar in the urine"),
    Drug("semaglutide", "GLP-1 receptor agonist", "type 2 diabetes, weight management",
         "0.25 mg under the skin weekly, raised monthly to 1 mg (higher doses for weight loss)",
         "HbA1c, weight, nausea, pancreatitis symptoms", "nausea is common while the dose is raised"),
    Drug("sitagliptin", "DPP-4 inhibitor", "type 2 diabetes", "100 mg once daily (less when kidney function "
         "is reduced)", "kidney function, HbA1c", "low risk of hypoglycaemia on its own"),
    Drug("levothyroxine", "thyroid hormone (T4)", "hypothyroidism", "about 1.6 micrograms/kg daily; older "
         "people and those with heart disease start at 25-50 micrograms", "TSH 6-8 weeks after each dose change",
         "take on an empty stomach, apart from calcium and iron"),
    Drug("methimazole", "antithyroid drug", "hyperthyroidism (Graves disease)", "5 to 30 mg daily",
         "free T4, TSH, white cell count if fever or sore throat", "rare agranulocytosis"),
    Drug("albuterol", "short-acting beta-2 agonist bronchodilator", "relief of asthma and COPD symptoms",
         "1 to 2 puffs (90 micrograms each) every 4 to 6 hours as needed", "how often it is needed",
         "also called salbutamol; needing it often means control is poor"),
    Drug("fluticasone-salmeterol", "inhaled corticosteroid with long-acting beta agonist",
         "maintenance treatment of asthma and COPD", "one inhalation twice daily", "symptom control; oral thrush",
         "rinse the mouth after use"),
    Drug("tiotropium", "long-acting muscarinic antagonist", "maintenance treatment of COPD", "18 micrograms "
         "inhaled once daily", "symptoms, dry mouth, urinary retention", "not for sudden symptoms"),
    Drug("prednisone", "oral corticosteroid", "flares of asthma and COPD, inflammatory and autoimmune diseases",
         "5 to 60 mg daily depending on the condition", "blood glucose, blood pressure, mood, bone health on long use",
         "long courses must be tapered rather than stopped"),
    Drug("omeprazole", "proton pump inhibitor", "gastro-oesophageal reflux, peptic ulcer, H. pylori (with "
         "antibiotics)", "20 to 40 mg once daily before breakfast", "magnesium and B12 on long use",
         "long use linked to fractures and C. difficile infection"),
    Drug("pantoprazole", "proton pump inhibitor", "reflux disease, ulcer prevention", "40 mg once daily",
         "magnesium on long use", "also given intravenously in hospital"),
    Drug("sertraline", "selective serotonin reuptake inhibitor (SSRI)", "depression, anxiety disorders, OCD, PTSD",
         "50 mg once daily, up to 200 mg", "mood, suicidal thoughts in young people, sodium in older people",
         "takes 2-6 weeks to work"),
    Drug("escitalopram", "SSRI", "depression, generalised anxiety disorder", "10 mg once daily, up to 20 mg",
         "mood, QT interval at high doses", "takes several weeks for full effect"),
    Drug("bupropion", "norepinephrine-dopamine reuptake inhibitor", "depression, help to stop smoking",
         "150 mg once daily, then 150 mg twice daily or 300 mg extended release", "blood pressure, seizures",
         "avoid with seizure disorders or eating disorders"),
    Drug("gabapentin", "gabapentinoid", "nerve pain, partial seizures", "300 mg at night, raised to "
         "300-1,200 mg three times daily", "drowsiness, kidney function", "dose is reduced in kidney disease"),
    Drug("acetaminophen", "analgesic and antipyretic", "pain and fever", "500 to 1,000 mg every 6 hours, at most "
         "4 g a day (3 g in liver disease or heavy drinking)", "liver function in overdose or heavy use",
         "also called paracetamol; overdose damages the liver"),
    Drug("ibuprofen", "nonsteroidal anti-inflammatory drug (NSAID)", "pain, fever, inflammation",
         "200 to 400 mg every 6 to 8 hours with food", "kidney function, blood pressure, stomach bleeding",
         "avoid in kidney disease, heart failure and with anticoagulants"),
    Drug("oxycodone", "opioid analgesic", "moderate to severe pain", "5 mg every 4 to 6 hours as needed "
         "(opioid-naive adults)", "breathing, sedation, constipation, misuse",
         "naloxone reverses opioid overdose"),
    Drug("amoxicillin", "penicillin antibiotic", "ear, sinus and throat infections, community pneumonia, "
         "H. pylori", "500 mg three times daily or 875 mg twice daily", "rash, diarrhoea",
         "not for people with penicillin allergy"),
    Drug("amoxicillin-clavulanate", "penicillin with beta-lactamase inhibitor", "sinusitis, bites, "
         "respiratory and skin infections", "875/125 mg twice daily", "diarrhoea, liver tests on long courses",
         "broader cover than amoxicillin alone"),
    Drug("azithromycin", "macrolide antibiotic", "atypical pneumonia, chlamydia, some respiratory infections",
         "500 mg on day 1 then 250 mg daily for 4 days", "QT interval in people at risk",
         "many once-daily short courses"),
    Drug("ciprofloxacin", "fluoroquinolone antibiotic", "complicated urinary tract infections, some "
         "gastrointestinal infections", "250 to 750 mg twice daily", "tendon pain, QT interval, blood glucose",
         "risk of tendon rupture; avoid for simple infections when other choices exist"),
    Drug("nitrofurantoin", "urinary antibacterial", "uncomplicated bladder infection (cystitis)",
         "100 mg (modified release) twice daily for 5 days", "kidney function",
         "ineffective when eGFR is low; not for kidney infection"),
    Drug("doxycycline", "tetracycline antibiotic", "Lyme disease, chlamydia, acne, some pneumonias",
         "100 mg twice daily", "sun sensitivity, oesophageal irritation", "take upright with water"),
    Drug("ceftriaxone", "third-generation cephalosporin", "pneumonia, meningitis, gonorrhoea, serious "
         "infections in hospital", "1 to 2 g intravenously once daily", "allergy, gallbladder sludge",
         "given by injection"),
    Drug("vancomycin", "glycopeptide antibiotic", "MRSA and other serious Gram-positive infections (IV); "
         "C. difficile colitis (by mouth)", "15 to 20 mg/kg IV every 8 to 12 hours, adjusted to levels",
         "trough or AUC levels, kidney function", "can harm the kidneys"),
    Drug("allopurinol", "xanthine oxidase inhibitor", "gout prevention, high uric acid",
         "100 mg daily, raised until uric acid is below 6 mg/dL", "uric acid, kidney function, rash",
         "stop at the first sign of a rash"),
    Drug("colchicine", "anti-inflammatory for gout", "gout attacks, pericarditis", "1.2 mg then 0.6 mg an hour "
         "later for a gout attack", "diarrhoea, kidney function, drug interactions", "toxic in overdose"),
    Drug("alendronate", "bisphosphonate", "osteoporosis", "70 mg once weekly", "calcium, vitamin D, kidney "
         "function", "take fasting with water and stay upright for 30 minutes"),
    Drug("tamsulosin", "alpha-1 blocker", "urinary symptoms of benign prostatic hyperplasia", "0.4 mg once daily",
         "dizziness on standing", "can cause low blood pressure when standing up"),
    Drug("donepezil", "cholinesterase inhibitor", "Alzheimer dementia", "5 mg at night, raised to 10 mg",
         "heart rate, nausea", "can slow the heart"),
    Drug("levetiracetam", "antiseizure medicine", "focal and generalised seizures", "500 mg twice daily, up to "
         "1,500 mg twice daily", "mood, kidney function", "irritability can occur"),
    Drug("digoxin", "cardiac glycoside", "rate control in atrial fibrillation, heart failure symptoms",
         "0.125 to 0.25 mg once daily", "digoxin level, potassium, kidney function, heart rate",
         "toxicity (nausea, visual changes, arrhythmia) is more likely with low potassium"),
    Drug("amiodarone", "class III antiarrhythmic", "atrial fibrillation and ventricular arrhythmias",
         "loading doses, then 100 to 200 mg daily", "thyroid and liver tests, lungs, eyes, QT interval",
         "many interactions, including with warfarin and simvastatin"),
    Drug("diltiazem", "non-dihydropyridine calcium channel blocker", "rate control in atrial fibrillation, "
         "angina, hypertension", "120 to 360 mg daily (extended release)", "heart rate, blood pressure",
         "avoid in heart failure with reduced ejection fraction"),
    Drug("potassium chloride", "electrolyte supplement", "low potassium", "20 to 40 mEq by mouth daily, "
         "divided", "potassium level, kidney function", "too much causes dangerous high potassium"),
    Drug("ondansetron", "5-HT3 antagonist antiemetic", "nausea and vomiting", "4 to 8 mg every 8 hours as needed",
         "QT interval", "can cause constipation and headache"),
    Drug("montelukast", "leukotriene receptor antagonist", "asthma maintenance, allergic rhinitis",
         "10 mg once daily in the evening", "mood and sleep changes", "not for acute attacks"),
    Drug("methotrexate", "antimetabolite (disease-modifying antirheumatic drug)", "rheumatoid arthritis, "
         "psoriasis", "7.5 to 25 mg once WEEKLY with folic acid", "blood counts, liver and kidney function",
         "weekly, never daily: daily dosing by mistake is dangerous"),
)

LABS: tuple[Lab, ...] = (
    Lab("hemoglobin A1c", "4548-4", "average blood glucose over the past 2-3 months (glycated haemoglobin)", "%",
        "below 5.7%", "5.7-6.4% is prediabetes; 6.5% or more on two tests is diabetes; most diabetes targets are "
        "below 7%"),
    Lab("glucose (serum or plasma)", "2345-7", "sugar in the blood", "mg/dL", "70-99 mg/dL fasting",
        "fasting 100-125 is impaired fasting glucose, 126 or more is diabetes; below 70 is hypoglycaemia"),
    Lab("creatinine (serum)", "2160-0", "a muscle waste product cleared by the kidneys; rises when kidney "
        "function falls", "mg/dL", "about 0.6-1.2 mg/dL (lower in women)", "used to estimate GFR"),
    Lab("estimated glomerular filtration rate (eGFR)", "33914-3", "how well the kidneys filter, estimated from "
        "creatinine, age and sex", "mL/min/1.73m2", "90 or more", "below 60 for three months or more is "
        "chronic kidney disease; stages: G3a 45-59, G3b 30-44, G4 15-29, G5 below 15"),
    Lab("blood urea nitrogen (BUN)", "3094-0", "urea from protein breakdown, cleared by the kidneys", "mg/dL",
        "7-20 mg/dL", "rises with dehydration, kidney failure and gut bleeding"),
    Lab("potassium (serum)", "2823-3", "potassium in the blood, key to heart rhythm", "mmol/L", "3.5-5.0 mmol/L",
        "above 5.5 or below 3.0 can cause dangerous arrhythmias"),
    Lab("sodium (serum)", "2951-2", "sodium in the blood, reflecting water balance", "mmol/L", "135-145 mmol/L",
        "below 135 is hyponatraemia, above 145 hypernatraemia"),
    Lab("chloride (serum)", "2075-0", "chloride in the blood", "mmol/L", "98-107 mmol/L"),
    Lab("bicarbonate (total CO2)", "2028-9", "bicarbonate in the blood, reflecting acid-base balance", "mmol/L",
        "22-29 mmol/L", "low in metabolic acidosis"),
    Lab("calcium (serum)", "17861-6", "total calcium in the blood", "mg/dL", "8.5-10.2 mg/dL",
        "interpret with albumin"),
    Lab("magnesium (serum)", "19123-9", "magnesium in the blood", "mg/dL", "1.7-2.2 mg/dL",
        "low with diuretics and proton pump inhibitors"),
    Lab("hemoglobin", "718-7", "the oxygen-carrying protein of red cells", "g/dL",
        "about 13.5-17.5 g/dL in men, 12.0-15.5 g/dL in women", "low values mean anaemia"),
    Lab("white blood cell count", "6690-2", "leukocytes in the blood", "10^3/uL", "4.5-11.0 x10^3/uL",
        "high in infection and inflammation, low with some drugs and marrow disease"),
    Lab("platelet count", "777-3", "platelets, the cells that start clotting", "10^3/uL", "150-400 x10^3/uL",
        "below 50 raises bleeding risk"),
    Lab("LDL cholesterol", "13457-7", "low-density lipoprotein cholesterol (calculated)", "mg/dL",
        "below 100 mg/dL is optimal", "main target of statin treatment; below 70 for many with vascular disease"),
    Lab("HDL cholesterol", "2085-9", "high-density lipoprotein cholesterol", "mg/dL",
        "40 mg/dL or more in men, 50 or more in women", "higher is protective"),
    Lab("total cholesterol", "2093-3", "all cholesterol in the blood", "mg/dL", "below 200 mg/dL"),
    Lab("triglycerides", "2571-8", "fats carried in the blood", "mg/dL", "below 150 mg/dL fasting",
        "very high levels (over 500) risk pancreatitis"),
    Lab("thyroid stimulating hormone (TSH)", "3016-3", "the pituitary signal to the thyroid; first test of "
        "thyroid function", "mIU/L", "about 0.4-4.0 mIU/L", "high in hypothyroidism, low in hyperthyroidism"),
    Lab("free thyroxine (free T4)", "3024-7", "unbound thyroid hormone", "ng/dL", "about 0.8-1.8 ng/dL"),
    Lab("alanine aminotransferase (ALT)", "1742-6", "a liver enzyme released when liver cells are damaged", "U/L",
        "about 7-56 U/L", "raised in hepatitis, fatty liver, drug injury"),
    Lab("aspartate aminotransferase (AST)", "1920-8", "an enzyme of liver and muscle", "U/L", "about 10-40 U/L",
        "an AST to ALT ratio above 2 suggests alcohol-related liver disease"),
    Lab("total bilirubin", "1975-2", "the breakdown product of haemoglobin cleared by the liver", "mg/dL",
        "0.1-1.2 mg/dL", "high levels cause jaundice"),
    Lab("albumin (serum)", "1751-7", "the main blood protein, made by the liver", "g/dL", "3.5-5.0 g/dL",
        "low in liver disease, malnutrition, kidney protein loss"),
    Lab("international normalized ratio (INR)", "6301-6", "how long blood takes to clot, standardised; used to "
        "dose warfarin", "ratio", "about 0.8-1.2 without anticoagulation",
        "target 2.0-3.0 on warfarin for most indications"),
    Lab("troponin I (cardiac)", "10839-9", "a heart-muscle protein released when heart cells are injured",
        "ng/mL", "below the 99th percentile of the assay (often under 0.04 ng/mL)",
        "a rise and fall suggests a heart attack"),
    Lab("B-type natriuretic peptide (BNP)", "30934-4", "a hormone released by stretched heart ventricles",
        "pg/mL", "below 100 pg/mL", "high in heart failure"),
    Lab("C-reactive protein (CRP)", "1988-5", "a liver protein that rises with inflammation", "mg/L",
        "below 10 mg/L (below 3 for cardiovascular risk)"),
    Lab("25-hydroxyvitamin D", "1989-3", "the body's vitamin D stores", "ng/mL", "30-100 ng/mL",
        "below 20 is deficiency"),
    Lab("urine albumin-to-creatinine ratio", "9318-7", "albumin leaking into the urine, an early sign of kidney "
        "damage", "mg/g", "below 30 mg/g", "30-300 is moderately increased, above 300 severely increased"),
    Lab("prostate-specific antigen (PSA)", "2857-1", "a protein made by the prostate", "ng/mL",
        "usually below 4.0 ng/mL", "raised in prostate cancer, enlargement and inflammation"),
    Lab("lactate", "2524-7", "a product of anaerobic metabolism; high when tissues lack oxygen", "mmol/L",
        "0.5-2.2 mmol/L", "above 2 in suspected sepsis signals higher risk"),
)

CONDITIONS: tuple[Condition, ...] = (
    Condition("essential hypertension", "I10", "persistently raised blood pressure without a single identifiable "
              "cause; a major risk factor for stroke, heart attack, heart failure and kidney disease",
              "repeated readings of 130/80 mmHg or more (stage 1) or 140/90 or more (stage 2)",
              "salt reduction, exercise, weight loss; first drugs are thiazide diuretics, ACE inhibitors or ARBs, "
              "and calcium channel blockers such as amlodipine"),
    Condition("type 2 diabetes mellitus", "E11.9", "high blood sugar from insulin resistance and failing insulin "
              "secretion; damages eyes, kidneys, nerves and blood vessels over time",
              "HbA1c 6.5% or more, fasting glucose 126 mg/dL or more, or random glucose 200 with symptoms",
              "diet and activity; metformin first; add SGLT2 inhibitors or GLP-1 agonists (especially with heart "
              "or kidney disease), then insulin; HbA1c target usually below 7%"),
    Condition("type 1 diabetes mellitus", "E10.9", "autoimmune loss of insulin-making beta cells, usually starting "
              "young", "high glucose with autoantibodies, often presenting as diabetic ketoacidosis",
              "lifelong insulin (basal plus mealtime or a pump), glucose monitoring"),
    Condition("hyperlipidemia", "E78.5", "raised blood cholesterol or triglycerides, which build plaque in arteries",
              "fasting or non-fasting lipid panel", "diet and exercise; statins first, then ezetimibe or PCSK9 "
              "inhibitors when LDL stays high"),
    Condition("chronic kidney disease stage 3", "N18.30", "kidney damage or eGFR below 60 for at least three "
              "months; stage 3 is eGFR 30-59", "eGFR and urine albumin-to-creatinine ratio, repeated over 3 months",
              "blood pressure control with an ACE inhibitor or ARB, SGLT2 inhibitor, avoiding NSAIDs, dosing drugs "
              "for kidney function"),
    Condition("heart failure", "I50.9", "the heart cannot pump enough blood for the body's needs, causing "
              "breathlessness, fatigue and fluid retention", "symptoms, BNP or NT-proBNP, echocardiogram (ejection "
              "fraction)", "for reduced ejection fraction: ACE inhibitor/ARB/ARNI, beta blocker, "
              "spironolactone, SGLT2 inhibitor; loop diuretics for fluid"),
    Condition("atrial fibrillation", "I48.91", "an irregular, often fast heart rhythm from chaotic atrial "
              "activity; raises stroke risk", "ECG", "rate control (beta blockers, diltiazem, digoxin), rhythm "
              "control in some, anticoagulation (apixaban, rivaroxaban, warfarin) guided by the CHA2DS2-VASc score"),
    Condition("coronary artery disease", "I25.10", "narrowing of the heart's arteries by plaque, causing angina "
              "and heart attacks", "stress testing, coronary angiography", "aspirin, high-intensity statin, "
              "blood pressure and diabetes control, beta blockers or nitrates for angina, stents or bypass"),
    Condition("acute myocardial infarction", "I21.9", "death of heart muscle from a blocked coronary artery",
              "chest pain with ECG changes and a rise in troponin", "emergency reperfusion (stent), aspirin and a "
              "P2Y12 inhibitor, anticoagulation, statin, beta blocker"),
    Condition("ischemic stroke", "I63.9", "brain injury from a blocked artery", "sudden neurological deficit; CT "
              "or MRI of the brain", "clot-dissolving drugs or clot retrieval when early enough; then "
              "antiplatelets or anticoagulation, statin, blood pressure control"),
    Condition("deep vein thrombosis", "I82.409", "a blood clot in a deep vein, usually of the leg",
              "compression ultrasound; D-dimer to rule out when probability is low",
              "anticoagulation (apixaban, rivaroxaban, enoxaparin then warfarin) for at least 3 months"),
    Condition("pulmonary embolism", "I26.99", "a clot that travelled to the lung arteries", "CT pulmonary "
              "angiography", "anticoagulation; clot-dissolving treatment when blood pressure falls"),
    Condition("chronic obstructive pulmonary disease", "J44.9", "long-term airflow limitation, mostly from "
              "smoking, with cough and breathlessness", "spirometry: FEV1/FVC below 0.70 after a bronchodilator",
              "stop smoking; inhaled bronchodilators (LAMA, LABA), inhaled steroids for frequent flares, "
              "vaccines, pulmonary rehabilitation"),
    Condition("asthma", "J45.909", "variable airway narrowing and inflammation with wheeze, cough and "
              "breathlessness", "symptoms and reversible airflow obstruction on spirometry",
              "inhaled corticosteroids as the base; short-acting relievers; add long-acting beta agonists or "
              "montelukast when not controlled"),
    Condition("community-acquired pneumonia", "J18.9", "lung infection acquired outside hospital", "symptoms and "
              "a new infiltrate on chest X-ray", "outpatients: amoxicillin or doxycycline or a macrolide; "
              "inpatients: ceftriaxone plus azithromycin"),
    Condition("urinary tract infection", "N39.0", "bacterial infection of the urinary tract, most often the "
              "bladder", "symptoms with urinalysis and urine culture", "uncomplicated cystitis: nitrofurantoin "
              "for 5 days or similar; kidney infection needs broader antibiotics"),
    Condition("sepsis", "A41.9", "life-threatening organ dysfunction caused by the body's response to infection",
              "suspected infection with organ dysfunction; lactate, blood cultures",
              "antibiotics within the first hour, intravenous fluids, vasopressors if pressure stays low"),
    Condition("hypothyroidism", "E03.9", "too little thyroid hormone, causing tiredness, weight gain, cold "
              "intolerance", "high TSH with low free T4", "levothyroxine, adjusted by TSH"),
    Condition("hyperthyroidism", "E05.90", "too much thyroid hormone, causing weight loss, tremor, palpitations",
              "low TSH with high free T4 or T3", "methimazole, radioactive iodine or surgery; beta blockers for "
              "symptoms"),
    Condition("obesity", "E66.9", "excess body fat harming health; body mass index 30 or more",
              "body mass index and waist circumference", "diet, activity and behaviour change; GLP-1 agonists "
              "such as semaglutide; bariatric surgery for severe obesity"),
    Condition("major depressive disorder", "F32.9", "persistent low mood or loss of interest with changes in "
              "sleep, appetite, energy and concentration for at least two weeks", "clinical interview; PHQ-9 "
              "questionnaire", "psychotherapy and antidepressants such as sertraline or escitalopram"),
    Condition("generalized anxiety disorder", "F41.1", "excessive worry on most days for six months or more",
              "clinical interview; GAD-7 questionnaire", "cognitive behavioural therapy, SSRIs or SNRIs"),
    Condition("osteoarthritis", "M19.90", "wear of joint cartilage causing pain and stiffness", "symptoms and "
              "X-ray", "exercise, weight loss, acetaminophen or topical and oral NSAIDs, joint replacement"),
    Condition("osteoporosis", "M81.0", "thin, fragile bones that break easily", "DEXA scan T-score of -2.5 or "
              "lower, or a fragility fracture", "calcium and vitamin D, bisphosphonates such as alendronate"),
    Condition("gout", "M10.9", "joint inflammation from uric acid crystals, classically in the big toe",
              "crystals in joint fluid; high uric acid", "attacks: NSAIDs, colchicine or steroids; prevention: "
              "allopurinol to uric acid below 6 mg/dL"),
    Condition("gastroesophageal reflux disease", "K21.9", "stomach acid flowing back into the oesophagus, "
              "causing heartburn", "symptoms; endoscopy for alarm features", "weight loss, avoiding late meals, "
              "proton pump inhibitors such as omeprazole"),
    Condition("iron deficiency anemia", "D50.9", "too few red cells from lack of iron, often from blood loss",
              "low haemoglobin, small red cells, low ferritin", "oral iron, finding the cause of blood loss"),
    Condition("acute kidney injury", "N17.9", "a sudden fall in kidney function over hours to days",
              "creatinine rising by 0.3 mg/dL in 48 hours or 1.5 times baseline, or low urine output",
              "treat the cause, restore fluids, stop kidney-harming drugs (NSAIDs, contrast)"),
    Condition("hyperkalemia", "E87.5", "high blood potassium, which can cause dangerous heart rhythms",
              "serum potassium above 5.0 mmol/L; ECG changes", "calcium gluconate to protect the heart, insulin "
              "with glucose, potassium binders, stopping drugs that raise potassium"),
    Condition("hypokalemia", "E87.6", "low blood potassium, often from diuretics or vomiting",
              "serum potassium below 3.5 mmol/L", "potassium chloride replacement; check magnesium"),
    Condition("hyponatremia", "E87.1", "low blood sodium, usually from too much water relative to sodium",
              "serum sodium below 135 mmol/L", "treat the cause; correct slowly to avoid brain injury"),
    Condition("alcoholic cirrhosis of liver", "K70.30", "scarring of the liver from long heavy drinking",
              "liver tests, imaging, sometimes biopsy", "stop alcohol, diuretics for ascites, screening for "
              "varices and liver cancer"),
    Condition("rheumatoid arthritis", "M06.9", "autoimmune inflammation of many joints, especially hands",
              "symmetric joint swelling, rheumatoid factor, anti-CCP antibodies", "methotrexate and other "
              "disease-modifying drugs, short steroid courses"),
    Condition("Alzheimer disease", "G30.9", "progressive dementia with memory loss", "clinical assessment, "
              "cognitive testing, imaging", "cholinesterase inhibitors such as donepezil, support for carers"),
    Condition("epilepsy", "G40.909", "a tendency to recurrent unprovoked seizures", "history, EEG, MRI",
              "antiseizure medicines such as levetiracetam"),
    Condition("benign prostatic hyperplasia", "N40.0", "non-cancerous enlargement of the prostate that can slow "
              "urine flow", "symptoms, examination, PSA", "tamsulosin, finasteride, surgery for severe cases"),
)


# The kinds of risk an interaction carries; each kind has the same number of pairs, so that a task family asking
# "what is the risk of combining X with Y?" gives no effect a head start.
# The names avoid the drugs' own words (not "digoxin toxicity", nor "high potassium" for potassium chloride), so
# that a question naming the drugs does not point at its answer by a shared word.
INTERACTION_EFFECTS: tuple[str, ...] = (
    "bleeding", "hyperkalemia", "QT prolongation", "myopathy", "cardiac glycoside toxicity",
)

INTERACTIONS: tuple[Interaction, ...] = (
    Interaction("warfarin", "aspirin", "bleeding", "an antiplatelet added to an anticoagulant"),
    Interaction("warfarin", "ibuprofen", "bleeding", "an NSAID harms the stomach lining and platelets"),
    Interaction("apixaban", "clopidogrel", "bleeding", "an antiplatelet added to an anticoagulant"),
    Interaction("rivaroxaban", "aspirin", "bleeding", "an antiplatelet added to an anticoagulant"),
    Interaction("lisinopril", "spironolactone", "hyperkalemia", "both make the kidneys keep potassium"),
    Interaction("losartan", "spironolactone", "hyperkalemia", "both make the kidneys keep potassium"),
    Interaction("lisinopril", "potassium chloride", "hyperkalemia", "a supplement on top of a drug that keeps "
                "potassium"),
    Interaction("spironolactone", "potassium chloride", "hyperkalemia", "a supplement on top of a drug that "
                "keeps potassium"),
    Interaction("azithromycin", "ondansetron", "QT prolongation", "each lengthens the QT interval"),
    Interaction("escitalopram", "ondansetron", "QT prolongation", "each lengthens the QT interval"),
    Interaction("amiodarone", "azithromycin", "QT prolongation", "each lengthens the QT interval"),
    Interaction("ciprofloxacin", "escitalopram", "QT prolongation", "each lengthens the QT interval"),
    Interaction("simvastatin", "amiodarone", "myopathy", "amiodarone slows simvastatin's breakdown "
                "(CYP3A4), so its level rises"),
    Interaction("simvastatin", "diltiazem", "myopathy", "diltiazem slows simvastatin's breakdown "
                "(CYP3A4)"),
    Interaction("simvastatin", "amlodipine", "myopathy", "amlodipine raises simvastatin levels; keep "
                "simvastatin at 20 mg or less"),
    Interaction("atorvastatin", "diltiazem", "myopathy", "diltiazem slows atorvastatin's breakdown "
                "(CYP3A4)"),
    Interaction("digoxin", "furosemide", "cardiac glycoside toxicity", "the loop diuretic lowers potassium, which makes "
                "digoxin more toxic"),
    Interaction("digoxin", "amiodarone", "cardiac glycoside toxicity", "amiodarone raises the digoxin level; halve the dose"),
    Interaction("digoxin", "hydrochlorothiazide", "cardiac glycoside toxicity", "the thiazide lowers potassium, which makes "
                "digoxin more toxic"),
    Interaction("digoxin", "diltiazem", "cardiac glycoside toxicity", "diltiazem raises the digoxin level and slows the "
                "heart further"),
)


@dataclass(frozen=True)
class DoseRule:
    """How a drug's dose follows kidney function (or other patient facts), written out as one rule."""

    drug: str
    use: str
    rule: str


# Simplified renal dosing rules for simulated tasks (modelled on common labelling, not clinical guidance). Each
# band is stated with its ends, so a value exactly on a cut-off has one reading.
DOSE_RULES: tuple[DoseRule, ...] = (
    DoseRule("metformin", "type 2 diabetes",
             "judged by the eGFR from the CKD-EPI 2021 creatinine equation: eGFR 45 mL/min/1.73m2 or more: at "
             "most 2,000 mg a day; eGFR 30 to under 45: at most 1,000 mg a day; eGFR under 30: do not use (0 mg)"),
    DoseRule("dabigatran", "stroke prevention in atrial fibrillation",
             "judged by the creatinine clearance from the Cockcroft-Gault equation with actual body weight: "
             "above 30 mL/min: 150 mg twice a day; 15 to 30 mL/min (both ends included): 75 mg twice a day; "
             "under 15 mL/min: do not use (0 mg)"),
    DoseRule("rivaroxaban", "stroke prevention in atrial fibrillation",
             "judged by the creatinine clearance from the Cockcroft-Gault equation with actual body weight: "
             "above 50 mL/min: 20 mg once a day; 15 to 50 mL/min (both ends included): 15 mg once a day; under "
             "15 mL/min: do not use (0 mg)"),
    DoseRule("gabapentin", "nerve pain",
             "judged by the creatinine clearance from the Cockcroft-Gault equation with actual body weight: 60 "
             "mL/min or more: at most 3,600 mg a day; 30 to under 60 mL/min: at most 1,400 mg a day; 15 to under "
             "30 mL/min: at most 700 mg a day; under 15 mL/min: at most 300 mg a day"),
    DoseRule("enoxaparin", "treatment of deep vein thrombosis",
             "1 mg per kg of actual body weight every 12 hours; when the creatinine clearance from the "
             "Cockcroft-Gault equation with actual body weight is under 30 mL/min: 1 mg per kg once every 24 "
             "hours"),
    DoseRule("apixaban", "stroke prevention in atrial fibrillation",
             "5 mg twice a day; 2.5 mg twice a day when at least two of these hold: age 80 years or more, body "
             "weight 60 kg or less, serum creatinine 1.5 mg/dL or more"),
)


@dataclass(frozen=True)
class Conversion:
    """A unit conversion between the conventional (US) unit and the SI unit of one quantity."""

    quantity: str
    conventional: str
    si: str
    factor: float  # one conventional unit is `factor` SI units

    def passage(self) -> str:
        return (f"{self.quantity[0].upper() + self.quantity[1:]}: 1 {self.conventional} = {self.factor:g} "
                f"{self.si}. To convert {self.si} to {self.conventional}, divide by {self.factor:g}; to convert "
                f"{self.conventional} to {self.si}, multiply by {self.factor:g}.")


CONVERSIONS: tuple[Conversion, ...] = (
    Conversion("serum creatinine", "mg/dL", "umol/L", 88.4),
    Conversion("total bilirubin", "mg/dL", "umol/L", 17.1),
    Conversion("total calcium", "mg/dL", "mmol/L", 0.2495),
    Conversion("albumin", "g/dL", "g/L", 10),
    Conversion("glucose", "mg/dL", "mmol/L", 0.0555),
    Conversion("blood urea nitrogen (BUN) as urea", "mg/dL of BUN", "mmol/L of urea", 0.357),
    Conversion("total, HDL and LDL cholesterol", "mg/dL", "mmol/L", 0.02586),
    Conversion("triglycerides", "mg/dL", "mmol/L", 0.01129),
    Conversion("body weight", "kg", "lb", 2.2046),
    Conversion("height", "inch", "cm", 2.54),
)


def _sentence(text: str) -> str:
    text = text.strip()
    return text[0].upper() + text[1:] + ("" if text.endswith(".") else ".")


def drug_passage(drug: Drug) -> str:
    """The passage text for one drug."""
    article = "an" if drug.drug_class[0].lower() in "aeiou" else "a"
    parts = [f"{drug.name.capitalize()} is {article} {drug.drug_class}.", _sentence(f"It is used for {drug.treats}"),
             _sentence(f"Common adult dose: {drug.dose}"), _sentence(f"Monitor: {drug.monitoring}")]
    if drug.note:
        parts.append(_sentence(drug.note))
    return " ".join(parts)


def lab_passage(lab: Lab) -> str:
    """The passage text for one laboratory test."""
    parts = [f"{lab.name[0].upper() + lab.name[1:]} (LOINC {lab.loinc}) measures {lab.measures}.",
             f"Units: {lab.units}.", _sentence(f"Usual adult reference range: {lab.normal}")]
    if lab.note:
        parts.append(_sentence(lab.note))
    return " ".join(parts)


def condition_passage(condition: Condition) -> str:
    """The passage text for one condition."""
    return " ".join([
        (f"{condition.name[0].upper() + condition.name[1:]} (ICD-10-CM {condition.icd10}) is "
        f"{condition.summary}."),
        _sentence(f"Diagnosis: {condition.diagnosis}"),
        _sentence(f"Management: {condition.management}"),
    ])


def interaction_passage(interaction: Interaction) -> str:
    """The passage text for one drug interaction."""
    return (f"Interaction of {interaction.first} with {interaction.second}: the combination raises the risk of "
            f"{interaction.effect}; {interaction.why}.")


def interaction_id(interaction: Interaction) -> str:
    """The passage id of one interaction, e.g. `interaction:warfarin+aspirin`."""
    return f"interaction:{interaction.first.replace(' ', '-')}+{interaction.second.replace(' ', '-')}"


def dose_rule_passage(rule: DoseRule) -> str:
    """The passage text for one dosing rule."""
    return f"Dosing rule for {rule.drug} ({rule.use}): {rule.rule}."


def fact_passages() -> Iterator[tuple[str, str, str, str]]:
    """Every fact as (id, title, source, text), sources "drugs", "labs", "conditions", "interactions", "dosing"
    and "units"."""
    for drug in DRUGS:
        yield f"drug:{drug.name.replace(' ', '-')}", drug.name, "drugs", drug_passage(drug)
    for lab in LABS:
        yield f"lab:{lab.loinc}", lab.name, "labs", lab_passage(lab)
    for condition in CONDITIONS:
        yield f"condition:{condition.icd10}", condition.name, "conditions", condition_passage(condition)
    for interaction in INTERACTIONS:
        yield (interaction_id(interaction), f"{interaction.first} and {interaction.second}", "interactions",
               interaction_passage(interaction))
    for rule in DOSE_RULES:
        yield f"dosing:{rule.drug}", f"{rule.drug} dosing", "dosing", dose_rule_passage(rule)
    for conversion in CONVERSIONS:
        yield (f"units:{conversion.quantity.split(' (')[0].replace(' ', '-').replace(',', '').lower()}",
               f"{conversion.quantity} units", "units", conversion.passage())
