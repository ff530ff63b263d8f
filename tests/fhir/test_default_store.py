"""`default_store`: generated once, cached under $AGENTGYM_CACHE, opened read-only."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentgym_fhir.data import cache_dir, default_store
from agentgym_fhir.errors import FhirError


def test_default_store_is_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTGYM_CACHE", str(tmp_path))
    assert cache_dir() == tmp_path / "fhir"
    store = default_store(patients=4, seed=3)
    files = list((tmp_path / "fhir").glob("*.sqlite"))
    assert len(files) == 1 and store.count("Patient") == 4
    modified = files[0].stat().st_mtime_ns
    again = default_store(patients=4, seed=3)
    assert files[0].stat().st_mtime_ns == modified and again.count() == store.count()
    with pytest.raises(FhirError, match="read-only"):
        store.create_resource({"resourceType": "Basic", "code": {"text": "x"}})
    assert not list((tmp_path / "fhir").glob("*.partial-*"))
