import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import toy_env

toy_env.register()


@pytest.fixture(autouse=True)
def _quiet_trl(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
