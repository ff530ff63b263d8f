"""Registers ClinicalQA-v0 with agentgym (entry point `agentgym.envs: clinical`). Light on purpose: the tools,
tasks and knowledge base are imported only when the env is made, so `import agentgym` stays cheap and works
whichever package a program imports first."""

from __future__ import annotations


def register() -> None:
    """Register ClinicalQA-v0 and its task generator."""
    import agentgym

    agentgym.register(
        id="ClinicalQA-v0",
        entry_point="agentgym_clinical.env:make_env",
        generator="agentgym_clinical.tasks:generate",
        description="Clinical multiple-choice and yes/no/maybe QA with a knowledge base, calculators and code lookup",
    )
