"""ClinicalQA-v0 hints from real episodes: closest code system and calculator input; never an option's letter."""

from __future__ import annotations

import gymnasium as gym

import agentgym  # noqa: F401  (registers ClinicalQA-v0)
from agentgym.feedback import HINT_PREFIX


def test_code_and_calculator_mistakes_get_the_closest_name() -> None:
    env = gym.make("ClinicalQA-v0", feedback="hints")
    try:
        env.reset(seed=0)
        lookup, *_ = env.step({"name": "lookup_code", "arguments": {"code": "2823-3", "system": "lonic"}})
        assert lookup.split(HINT_PREFIX)[1].startswith("The closest code system is 'loinc'.")
        calculated, *_ = env.step({"name": "calculate", "arguments": {
            "calculator": "egfr_ckd_epi_2021", "inputs": {"creatinine": 1.1, "age_years": 60, "sex": "male"}}})
        assert calculated.split(HINT_PREFIX)[1].startswith(
            "The calculator input closest to 'creatinine' is 'creatinine_mg_dl'.")
        misnamed, *_ = env.step({"name": "calculate", "arguments": {"calculator": "egfr", "inputs": {}}})
        assert "Hint: The closest calculator is 'egfr_ckd_epi_2021'. It takes creatinine_mg_dl" in misnamed
        # a wrong answer ends the episode; no hint follows it
        final, *_ = env.step({"name": "submit", "arguments": {"answer": "Z"}})
        assert HINT_PREFIX not in final
    finally:
        env.close()
