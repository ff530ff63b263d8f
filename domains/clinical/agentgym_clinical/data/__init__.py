"""Where ClinicalQA-v0 questions come from besides the generator: readers of benchmark files (`benchmarks`)."""

from .benchmarks import ImportReport, constant_baseline, read_medmcqa, read_medqa, read_pubmedqa

__all__ = ["ImportReport", "constant_baseline", "read_medmcqa", "read_medqa", "read_pubmedqa"]
