"""agentgym-clinical: `ClinicalQA-v0`, multiple-choice and yes/no/maybe clinical questions answered with tools.

Tasks come from this project's own clinical facts (`agentgym_clinical.tasks`) or from a benchmark's files
(`agentgym tasks import medqa|pubmedqa|medmcqa`). See docs/clinical-qa.md.
"""
