"""Fixtures and task specs without a sandbox: determinism, the variety the issue asks for, families, splits."""

from __future__ import annotations

import io
import json
import random
import tarfile
from collections import Counter

import pytest
from agentgym_cli.data.fixtures import Fixture, build_workspace, get_workspace, workspace_name
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
    # World-writable files are drawn per workspace (the `world_writable` answer may be []): most have some.
    assert sum(any(entry.mode & 0o002 for entry in other.entries if entry.kind == "file")
               for other in _workspaces(10)) >= 7, "world-writable files"
    assert any(name.startswith("repo/.git/") for name in names), "a git repository"
    assert {"data/sales.csv", "data/users.json", "config/app.ini", "logs/access.log"} <= set(names)
    assert all(member.mtime > 0 and member.uid == 0 for member in members.values()), "reproducible metadata"


@pytest.mark.slow  # builds 40 workspaces (about a minute here)
def test_at_least_twelve_families_and_800_tasks_split_by_workspace() -> None:
    assert len(FAMILIES) >= 12
    count = 0
    fixtures_by_split: dict[str, set[str]] = {"train": set(), "test": set()}
    for index, fixture in enumerate(_workspaces()):
        fixtures_by_split[split_of(index)].add(fixture.name)
        for family, module in FAMILIES.items():
            count += len(module.specs(fixture, random.Random(f"{fixture.name}:{family}")))
    assert count >= 800
    assert fixtures_by_split["train"] and fixtures_by_split["test"]
    assert not fixtures_by_split["train"] & fixtures_by_split["test"]
    assert workspace_name(0, 3) in fixtures_by_split["test"]


SAMPLE = 40  # workspaces the variety checks read (building all 100 default ones takes minutes here)


def _workspaces(count: int = SAMPLE) -> list[Fixture]:
    """The first `count` default workspaces of seed 0 (each built once per process, `get_workspace`)."""
    return [get_workspace(workspace_name(0, index)) for index in range(min(count, DEFAULT_FIXTURES))]


def _answer_specs() -> dict[tuple[str, str], list[object]]:
    """(family, template) -> the expected answers of its answer tasks over the default workspaces of seed 0."""
    answers: dict[tuple[str, str], list[object]] = {}
    for fixture in _workspaces():
        for family, module in FAMILIES.items():
            for spec in module.specs(fixture, random.Random(f"{fixture.name}:{family}")):
                if spec.expected_answer is not None:
                    value = sorted(set(spec.expected_answer)) if spec.answer_kind == "lines" else spec.expected_answer
                    answers.setdefault((family, spec.template), []).append(repr(value))
    return answers


@pytest.mark.slow  # builds 40 workspaces (about a minute here)
def test_no_answer_template_has_one_answer_for_most_workspaces() -> None:
    """Issue 25: the generator varies the facts the questions ask about (folders, links, countries...), so no
    template's most common answer is the answer of more than half its tasks (the redteam suite plays it)."""
    answers = _answer_specs()
    assert len(answers) >= 15
    crowded = {key: (Counter(values).most_common(1)[0], len(values)) for key, values in answers.items()
               if Counter(values).most_common(1)[0][1] * 2 > len(values)}
    assert not crowded, f"templates whose most common answer is most answers: {crowded}"


@pytest.mark.slow  # builds 40 workspaces (about a minute here)
def test_folders_links_and_countries_vary_between_workspaces() -> None:
    folders, links, countries = Counter(), Counter(), Counter()
    for fixture in _workspaces():
        dirs = {e.path for e in fixture.entries if e.kind == "dir" and e.path.startswith("project/")}
        for entry in fixture.entries:
            parts = entry.path.split("/")[:-1]
            if parts[:1] == ["project"]:
                dirs |= {"/".join(parts[:depth]) for depth in range(2, len(parts) + 1)}
        folders[len(dirs)] += 1
        links[tuple(sorted(f"{e.path}->{e.target}" for e in fixture.entries if e.kind == "symlink"))] += 1
        countries[len({user["country"] for user in json.loads(fixture.text("data/users.json"))})] += 1
    for name, seen in (("folder counts", folders), ("link sets", links), ("country counts", countries)):
        assert len(seen) >= 6 and seen.most_common(1)[0][1] <= 0.3 * len(_workspaces()), (name, seen)


def test_links_stay_out_of_the_folders_tasks_move_pack_or_chmod() -> None:
    for fixture in _workspaces(12):
        for entry in fixture.entries:
            if entry.kind == "symlink":
                assert not entry.path.startswith(("downloads/", "logs/old/", "secrets/", "project/scripts/",
                                                  "repo/", "bin/")), entry.path
