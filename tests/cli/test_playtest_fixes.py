"""Each unfair or lenient playtest verdict of CLI-v0 (/work/playtest/CLI-v0.md), fixed at its cause and kept
here as a test: the equivalent answers score 1, the near misses 0. Run without a sandbox: the hidden test
scripts are bash, run here on files written as an agent would write them."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

from agentgym_cli.data.fixtures import get_workspace, workspace_name
from agentgym_cli.tasks import FAMILIES
from agentgym_cli.tasks.base import TaskSpec


def _spec(family: str, template: str) -> tuple[TaskSpec, object]:
    for index in range(40):
        fixture = get_workspace(workspace_name(0, index))
        for spec in FAMILIES[family].specs(fixture, random.Random(f"{fixture.name}:{family}")):
            if spec.template == template:
                return spec, fixture
    raise AssertionError(f"no {family}/{template} task in the first 40 workspaces")


def _passes(script: str, workdir: Path) -> bool:
    done = subprocess.run(["bash", "--noprofile", "--norc", "-c", script], cwd=workdir, capture_output=True,
                          text=True, check=False, timeout=60)
    return done.returncode == 0


def test_playtest_2_ips_txt_must_be_sorted_either_way_a_reader_means_it(tmp_path: Path) -> None:
    """#2 (lenient): "sorted" was not checked, so the IPs in first-appearance order scored 1."""
    spec, fixture = _spec("text_processing", "ips")
    assert "ascending order" in spec.prompt
    (script,) = (test["script"] for test in spec.tests)
    access = fixture.text("logs/access.log").splitlines()  # type: ignore[attr-defined]
    first_seen = list(dict.fromkeys(line.split()[0] for line in access))
    as_text = sorted(first_seen)
    as_numbers = sorted(first_seen, key=lambda ip: tuple(int(part) for part in ip.split(".")))
    assert as_text != as_numbers and first_seen not in (as_text, as_numbers)  # this fixture tells them apart

    def graded(lines: list[str], ending: str = "\n") -> bool:
        (tmp_path / "ips.txt").write_text(ending.join(lines) + ending)
        return _passes(script, tmp_path)

    assert graded(as_text) and graded(as_numbers)                      # `sort -u`, `sort -t. -n -k1,1 ...`
    assert graded(as_text, ending="\r\n") and graded(as_numbers[:-1] + [as_numbers[-1] + "  "])  # CRLF, spaces
    (tmp_path / "ips.txt").write_text("\n".join(as_text))              # no final newline
    assert _passes(script, tmp_path)
    assert not graded(first_seen)                                      # unsorted: first appearance
    assert not graded(list(reversed(as_text)))                         # descending
    assert not graded(as_text + as_text[:1])                           # a repeat
    assert not graded(as_text[1:])                                     # one missing
    assert not graded([" ".join(as_text)])                             # all on one line


def test_playtest_14_extension_lines_have_no_dot_and_the_named_cases_are_tested(tmp_path: Path) -> None:
    """#14 (unfair on replay): "a line `EXTENSION COUNT`" did not say whether the dot belongs to EXTENSION, and
    `.py 3` scored 0. The prompt now defines the extension (after the last dot, without it; `.env` has `env`; a
    name ending in a dot has none) and the hidden test's tree holds those cases."""
    spec, _ = _spec("scripts", "extension_count")
    assert "without the dot" in spec.prompt and "`py 3`" in spec.prompt
    (test,) = spec.tests
    path = spec.steps[0]["arguments"]["path"]
    gold = spec.steps[0]["arguments"]["content"]

    def graded(program: str) -> bool:
        work = tmp_path / f"w{len(list(tmp_path.iterdir()))}"
        (work / "bin").mkdir(parents=True)
        (work / path).write_text(program)
        (work / path).chmod(0o755)
        scratch = work / "scratch"
        scratch.mkdir()
        done = subprocess.run(["bash", "--noprofile", "--norc", "-c", test["script"]], cwd=work, check=False,
                              capture_output=True, text=True, timeout=60,
                              env={"PATH": "/usr/bin:/bin", "AGENTGYM_SCRATCH": str(scratch), "WORKSPACE": str(work),
                                   "LC_ALL": "C.UTF-8"})
        return done.returncode == 0 and done.stdout.rstrip("\n") == test["stdout"].rstrip("\n")

    assert graded(gold)
    with_dot = gold.replace("sed 's/.*\\.//'", "sed 's/.*\\./\\./'")
    assert with_dot != gold and not graded(with_dot)                      # `.py 3`
    assert not graded(gold.replace(" ! -name '*.'", ""))                  # counts `trailing.` as an extension
    assert not graded(gold.replace("-name '*.*'", "-name '[!.]*.*'"))     # skips the hidden `.env`
