"""Medication orders: find the drug's RxNorm code and order it with the stated dose, route and timing."""

from __future__ import annotations

from agentgym.tasks import Task
from agentgym_fhir.tasks.common import RXNORM, SNOMED, Context, call, submit
from agentgym_fhir.vocab.drugs import DRUGS, ROUTES

FAMILY = "medication_order"
REQUIRES = "patients with active conditions the project's drug table treats"
# condition SNOMED code -> drug keys commonly started for it
TREATS = {
    "59621000": ["lisinopril", "amlodipine", "hydrochlorothiazide", "losartan"],
    "44054006": ["metformin", "empagliflozin", "glipizide"], "55822004": ["atorvastatin", "simvastatin"],
    "370143000": ["sertraline", "fluoxetine"], "40930008": ["levothyroxine"], "235595009": ["omeprazole"],
    "49436004": ["apixaban", "metoprolol"], "84114007": ["furosemide", "carvedilol", "spironolactone"],
    "13645005": ["tiotropium", "albuterol"], "195967001": ["fluticasone", "albuterol"], "90560007": ["allopurinol"],
}
UNIT_WORDS = {"[iU]": "units", "{puff}": "puffs", "meq": "mEq", "ug": "micrograms"}


def build(ctx: Context) -> list[Task]:
    tasks = []
    for record in ctx.records:
        active_drugs = {row.get("rxnorm") for row in record.active_medications()}
        options = [(code, key) for code in sorted(record.condition_codes()) for key in TREATS.get(code, [])
                   if DRUGS[key].rxcui not in active_drugs and DRUGS[key].per_day > 0]
        if not options or ctx.rng.random() < 0.4:
            continue
        _condition, key = ctx.rng.choice(options)
        drug = DRUGS[key]
        route_code, route_display = ROUTES[drug.route]
        unit_word = UNIT_WORDS.get(drug.unit, drug.unit)
        resource = {
            "resourceType": "MedicationRequest", "status": "active", "intent": "order",
            "subject": {"reference": record.reference}, "authoredOn": record.now.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "medicationCodeableConcept": {"coding": [{"system": RXNORM, "code": drug.rxcui, "display": drug.name}]},
            "dosageInstruction": [{
                "route": {"coding": [{"system": SNOMED, "code": route_code, "display": route_display}]},
                "timing": {"repeat": {"frequency": drug.per_day, "period": 1, "periodUnit": "d"}},
                "doseAndRate": [{"doseQuantity": {"value": drug.dose, "unit": drug.unit,
                                                  "system": "http://unitsofmeasure.org", "code": drug.unit}}]}]}
        spec = {"resourceType": "MedicationRequest", "subject": record.reference, "code": [RXNORM, drug.rxcui],
                "status": ["active"], "intent": ["order"], "dose": {"value": drug.dose, "unit": drug.unit},
                "route": [SNOMED, route_code], "per_day": drug.per_day}
        times = {1: "once", 2: "twice", 3: "three times", 4: "four times"}.get(drug.per_day, f"{drug.per_day} times")
        unit_text = f"{unit_word} (UCUM {drug.unit})" if unit_word != drug.unit else unit_word
        tasks.append(ctx.task(
            key=f"{record.id}:{key}", record=record,
            prompt=f"Order {drug.name} for {record.describe()}: {drug.dose:g} {unit_word} by the {drug.route} route, "
                   f"{times} a day, as an active MedicationRequest (intent order) coded with the drug's RxNorm "
                   f"ingredient code as its one coding, one dosage instruction, the dose in {unit_text}. Then submit "
                   "\"done\".",
            answer="done",
            solution=[call("lookup_code", text=drug.name, system="rxnorm"),
                      call("create_medication_request", resource=resource), submit("done")],
            verifier={"name": "fhir_write", "params": {"expected": [spec]}}, difficulty="medium",
            metadata={"drug": key}))
    return tasks
