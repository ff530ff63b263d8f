"""Typed answers, write inspection and the judge fallback; unit conversion; code lookup."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from agentgym_fhir import codes, units
from agentgym_fhir.verify import ask_judge, check_resource, score_answer

from agentgym.tasks import Task


@pytest.mark.parametrize("gold, submission, kind, params, expected", [
    (4.1, "4.1 mmol/L", "number", {"unit": "mmol/L", "require_unit": True}, 1.0),
    (4.1, "4.1 mEq/L", "number", {"unit": "mmol/L", "require_unit": True}, 1.0),
    (4.1, "4.1", "number", {"unit": "mmol/L", "require_unit": True}, 0.0),
    (100.0, "5.55 mmol/L", "number", {"unit": "mg/dL", "analyte": "glucose", "tolerance": 0.2}, 1.0),
    (70.0, {"value": 154.3, "unit": "lb"}, "number", {"unit": "kg", "tolerance": 0.05}, 1.0),
    (91.7, 92.5, "number", {"tolerance": 0.6}, 0.0),
    ("2023-05-02", "2023-05-02T10:00:00Z", "date", {}, 1.0),
    ("2023-05-02", "May 2, 2023", "date", {}, 1.0),
    ("2023-05-02", "2023-05-03", "date", {}, 0.0),
    ("E11.9", "e119", "code", {}, 1.0),
    ("E11.9", "http://hl7.org/fhir/sid/icd-10-cm|E11.9", "code", {}, 1.0),
    ("E11.9", "E11", "code", {}, 0.0),
    ([["metformin", "6809"], ["lisinopril", "29046"]], "Lisinopril, metformin", "set", {}, 1.0),
    ([["metformin", "6809"], ["lisinopril", "29046"]], ["6809"], "set", {}, 0.0),
    ([], "none found", "set", {}, 1.0),
    ([], ["aspirin"], "set", {}, 0.0),
    ("yes", "Yes, it is contraindicated", "yes_no", {}, 1.0),
    ("no", "yes", "yes_no", {}, 0.0),
    (None, "None found", "none", {}, 1.0),
    (None, "12", "none", {}, 0.0),
])
def test_typed_answers(gold, submission, kind, params, expected) -> None:  # type: ignore[no-untyped-def]
    assert score_answer(gold, submission, kind=kind, **params).value == expected


@pytest.mark.parametrize("gold, submission, kind, params", [
    # numbers: units that hold digits of their own, a number in a sentence, fullwidth digits
    (6.0, "6 10*3/uL", "number", {"unit": "10*3/uL", "require_unit": True}),
    (72.3, "72.3 mL/min/1.73m2", "number", {"tolerance": 0.6}),
    (72.3, "72.3 mL/min/1.73 m2", "number", {"tolerance": 0.6}),
    (4.1, "The latest potassium is 4.1 mmol/L.", "number", {"unit": "mmol/L", "require_unit": True}),
    (4.0, "\uff14", "number", {"tolerance": 0}),
    (-0.3, "-0.3 mg/dL", "number", {"tolerance": 0.011}),
    # codes: dots, case, a system prefix, a coding object
    ("E11.65", "E1165", "code", {}),
    ("E11.65", " e11.65. ", "code", {}),
    ("E11.65", "ICD-10-CM: E11.65", "code", {}),
    ("E11.65", {"system": "http://hl7.org/fhir/sid/icd-10-cm", "code": "E11.65"}, "code", {}),
    # lists: JSON text, bullets, "and"
    ([["metformin", "6809"], ["lisinopril", "29046"]], '["metformin", "lisinopril"]', "set", {}),
    ([["metformin", "6809"], ["lisinopril", "29046"]], "- metformin\n- lisinopril", "set", {}),
    ([["metformin", "6809"], ["lisinopril", "29046"]], "metformin and lisinopril", "set", {}),
    ("no", "No.", "yes_no", {}),
    ("yes", True, "yes_no", {}),
    ("2023-05-02", "on 2023-05-02", "date", {}),
])
def test_every_legal_form_of_the_right_answer_scores(gold, submission, kind, params) -> None:  # type: ignore[no-untyped-def]
    assert score_answer(gold, submission, kind=kind, **params).value == 1.0


@pytest.mark.parametrize("gold, submission, kind, params", [
    # hedges: every candidate at once, the favourite first
    (4, "4 (or 3, 2, 1)", "number", {"tolerance": 0}),
    (4, "4, 3, 2, 1", "number", {"tolerance": 0}),
    (4, [4, 3], "number", {"tolerance": 0}),
    (3.9, "3.9 or 4.2 mmol/L", "number", {"unit": "mmol/L"}),
    ("E11.9", "E11.9, I10, J45.909", "code", {}),
    ("E11.9", "E11.9 or I10", "code", {}),
    ("E11.9", "I10|E11.9", "code", {}),
    ("E11.9", ["E11.9", "I10"], "code", {}),
    ([["warfarin", "11289"]], "warfarin, aspirin, lisinopril", "set", {}),
    ("yes", "yes or no", "yes_no", {}),
    ("yes", "Yes/No", "yes_no", {}),
    ("no", "no, yes", "yes_no", {}),
    ("2023-05-02", "2023-05-02 or 2023-06-01", "date", {}),
    # an absolute tolerance never swallows a small gold: 0 is not a change of 0.01
    (0.01, "0", "number", {"tolerance": 0.011}),
    (0.004, 0, "number", {"tolerance": 0.011}),
    # look-alikes are other characters, not the answer (Cyrillic E, a Cyrillic o in none)
    ("E11.9", "\u041511.9", "code", {}),
    ([["warfarin", "11289"]], "n\u043ene found", "set", {}),
])
def test_hedged_and_look_alike_answers_score_zero(gold, submission, kind, params) -> None:  # type: ignore[no-untyped-def]
    assert score_answer(gold, submission, kind=kind, **params).value == 0.0


def test_write_inspection_checks_each_field() -> None:
    resource = {"resourceType": "MedicationRequest", "status": "active", "intent": "order",
                "subject": {"reference": "Patient/p1"},
                "medicationCodeableConcept": {"coding": [{"system": "http://www.nlm.nih.gov/research/umls/rxnorm",
                                                          "code": "8591"}]},
                "dosageInstruction": [{"route": {"coding": [{"system": "http://snomed.info/sct", "code": "26643006"}]},
                                       "timing": {"repeat": {"frequency": 2, "period": 1, "periodUnit": "d"}},
                                       "doseAndRate": [{"doseQuantity": {"value": 40, "code": "meq"}}]}]}
    spec = {"resourceType": "MedicationRequest", "subject": "Patient/p1",
            "code": ["http://www.nlm.nih.gov/research/umls/rxnorm", "8591"], "dose": {"value": 40, "unit": "meq"},
            "route": ["http://snomed.info/sct", "26643006"], "per_day": 1}
    checks = check_resource(resource, spec)
    assert checks == {"type": True, "subject": True, "code": True, "dose": True, "route": True, "timing": False}


def test_llm_judge_over_an_openai_compatible_endpoint() -> None:
    """A real HTTP server speaking the chat-completions shape stands in for the model (no model runs here)."""
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(body)
            verdict = "CORRECT" if "metformin" in body["messages"][0]["content"].split("Candidate answer:")[1] else "INCORRECT"
            payload = json.dumps({"choices": [{"message": {"content": verdict}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    config = {"base_url": f"http://127.0.0.1:{server.server_port}/v1", "model": "judge", "api_key": "x"}
    try:
        assert ask_judge(config, "Which drug?", "metformin", "It is metformin").value == 1.0
        assert ask_judge(config, "Which drug?", "metformin", "insulin").value == 0.0
    finally:
        server.shutdown()
    assert seen[0]["model"] == "judge"


def test_judge_is_off_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentgym_fhir.verify import judge_config, llm_judge

    monkeypatch.delenv("AGENTGYM_JUDGE_BASE_URL", raising=False)
    assert judge_config(None) is None
    task = Task(id="t", domain="fhir", family="x", prompt="?", answer="Metformin", verifier={"name": "llm_judge"})
    assert llm_judge(task, "metformin", None).value == 1.0


def test_unit_conversion() -> None:
    assert units.convert(100, "mg/dL", "mmol/L", "glucose") == pytest.approx(5.5506, abs=1e-3)
    assert units.convert(1.0, "mg/dL", "umol/L", "creatinine") == pytest.approx(88.4, abs=0.1)
    assert units.convert(212, "[degF]", "Cel") == pytest.approx(100)
    assert units.convert(1, "[lb_av]", "kg") == pytest.approx(0.45359237)
    assert units.convert(5, "ft", "cm") == pytest.approx(152.4)
    with pytest.raises(units.UnitError, match="analyte"):
        units.convert(100, "mg/dL", "mmol/L")
    with pytest.raises(units.UnitError, match="only temperatures"):
        units.convert(1, "Cel", "kg")
    with pytest.raises(units.UnitError, match="unknown unit"):
        units.convert(1, "furlong", "kg")


def test_code_lookup() -> None:
    assert codes.lookup("ICD-10-CM", "e119").display == "Type 2 diabetes mellitus without complications"
    assert "not billable" in codes.lookup("icd10cm", "E11").kind
    assert codes.lookup("http://loinc.org", "2823-3").display == "Potassium"
    assert codes.lookup("rxnorm", "6809").display == "metformin"
    assert codes.lookup("snomed", "49436004").display == "Atrial fibrillation"
    assert "N18.4" in [e.code for e in codes.search("chronic kidney disease stage 4", "icd10cm")]
    with pytest.raises(codes.CodeLookupError, match="not an ICD-10-CM code"):
        codes.lookup("icd10cm", "ZZZ.99")
    with pytest.raises(codes.CodeLookupError, match="unknown code system"):
        codes.lookup("mesh", "D003924")
