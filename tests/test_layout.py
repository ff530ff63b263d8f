"""The test tree itself: pytest imports test modules by their file name (no packages under tests/), so two test
files with the same name in different folders stop the whole collection ("import file mismatch")."""

from __future__ import annotations

from collections import Counter
from pathlib import Path


def test_every_test_file_name_is_unique() -> None:
    names = Counter(path.name for path in Path(__file__).parent.rglob("test_*.py"))
    assert not [name for name, count in names.items() if count > 1], \
        f"test files sharing a name (rename one, e.g. test_<domain>_...): {sorted(n for n, c in names.items() if c > 1)}"
