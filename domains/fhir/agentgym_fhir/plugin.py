"""Registers FHIR-v0 with agentgym (entry point ``agentgym.envs: fhir``). Light on purpose: the store, tools
and tasks are imported only when the env is made."""

from __future__ import annotations


def register() -> None:
    """Register FHIR-v0 and its task generator."""
    import agentgym

    agentgym.register(
        id="FHIR-v0",
        entry_point="agentgym_fhir.env:make_env",
        generator="agentgym_fhir.tasks:generate",
        description="Clinical tool-use over FHIR R4 records: lookups, safety checks, risk scores, orders",
    )
