"""agentgym-fhir: FHIR R4 data for agentgym.

`FhirStore` (an indexed SQLite store with FHIR search), the synthetic population generator
(`agentgym_fhir.data.generate`), importers for Bundles and bulk NDJSON, a FHIR REST server and a
small client with the same interface as the store.
"""

from agentgym_fhir.errors import FhirError
from agentgym_fhir.store import Episode, FhirStore, SearchResult

__all__ = ["Episode", "FhirError", "FhirStore", "SearchResult"]
