"""How the FHIR world is made or brought in: the synthetic generator, importers, and the default store."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentgym_fhir.store import FhirStore

DEFAULT_PATIENTS = 400


def cache_dir() -> Path:
    """Where generated stores are cached: ``$AGENTGYM_CACHE/fhir`` or ``~/.cache/agentgym/fhir``."""
    from agentgym.cache import cache_dir as agentgym_cache

    return agentgym_cache("fhir")


def default_store(patients: int = DEFAULT_PATIENTS, seed: int = 0) -> FhirStore:
    """The generated population the FHIR environment uses by default, built once and cached.

    The file is ``<cache_dir()>/population-v<generator version>-p<patients>-s<seed>.sqlite`` (the
    version changes whenever the generator's output does, so stale caches are never reused); it is
    generated on first use (about 15 s for 400 patients on two cores), written to a temporary name and
    renamed, so concurrent first users never see a half-written store. Returns the store opened read-only:
    write through `FhirStore.episode`.
    """
    from agentgym_fhir.data.generate import GENERATOR_VERSION, generate_store
    from agentgym_fhir.store import FhirStore

    version = GENERATOR_VERSION.rsplit("/", 1)[-1]
    path = cache_dir() / f"population-v{version}-p{patients}-s{seed}.sqlite"
    if not path.is_file():
        from agentgym.cache import building

        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".partial-{os.getpid()}")
        seconds = max(5, round(patients * 15 / DEFAULT_PATIENTS))
        with building(f"the FHIR store ({patients} synthetic patients)", path, estimate=f"about {seconds} s",
                      total=patients, unit="patients") as progress:
            generate_store(partial, patients, seed, overwrite=True, on_patients=progress.advance).close()
            os.replace(partial, path)
    return FhirStore.open(path, readonly=True)


__all__ = ["DEFAULT_PATIENTS", "cache_dir", "default_store"]
