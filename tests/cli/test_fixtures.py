"""Fixtures and task specs without a sandbox: determinism, the variety the issue asks for, families, splits."""

from __future__ import annotations

import io
import random
import tarfile

from agentgym_cli.data.fixtures import build_workspace, workspace_name
from agentgym_cli.tasks import DEFAULT_FIXTURES, FAMILIES, split_of


def test_the_same_name_gives_byte_identical_tars_and_names_differ() -> None:
    first, again, other = build_workspace(0, 3), build_workspace(0, 3), build_workspace(0, 4)
    assert first.tar == again.tar
    assert first.digest != other.digest
    assert build_workspace(1, 3).digest != first.digest  # the seed matters too


def test_a_workspace_has_every_kind_of_entry_the_tasks_need() -> None:
    fixture = build_workspace(0, 2)
    with tarfile.open(fileobj=io.BytesIO(fixture.tar)) as archive:
        members = {member.name: member for member in archive.getmembers()}
    names = list(members)
    assert any(member.issym() for member in members.values()), "symlinks"
    assert any(name.rsplit("/", 1)[-1].startswith(".") for name in names), "hidden files"
    assert any(" " in name for name in names), "names with spaces"
    assert any(not name.isascii() for name in names), "unicode names"
    assert any(member.size >= 1_000_000 for member in members.values()), "a large file (index % 5 == 2)"
    assert any(member.mode & 0o002 for member in members.values() if member.isfile()), "world-writable files"
    assert any(name.startswith("repo/.git/") for name in names), "a git repository"
    assert {"data/sales.csv", "data/users.json", "config/app.ini", "logs/access.log"} <= set(names)
    assert all(member.mtime > 0 and member.uid == 0 for member in members.values()), "reproducible metadata"


def test_at_least_eight_families_and_800_tasks_split_by_workspace() -> None:
    assert len(FAMILIES) >= 8
    count = 0
    fixtures_by_split: dict[str, set[str]] = {"train": set(), "test": set()}
    for index in range(DEFAULT_FIXTURES):
        fixture = build_workspace(0, index)
        fixtures_by_split[split_of(index)].add(fixture.name)
        for family, module in FAMILIES.items():
            count += len(module.specs(fixture, random.Random(f"{fixture.name}:{family}")))
    assert count >= 800
    assert fixtures_by_split["train"] and fixtures_by_split["test"]
    assert not fixtures_by_split["train"] & fixtures_by_split["test"]
    assert workspace_name(0, 4) in fixtures_by_split["test"]
