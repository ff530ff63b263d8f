"""The hard tier (issue 30): pipelines over messy exports, awkward file names, planted bugs, a long git history.

Without a sandbox: each fixture part holds the mess its family is about, each task's traps are real (the
shortcut's answer is computed and differs), the difficulty follows the documented proxy, and the test split is
big and varied enough. The oracle over the built task set runs in test_oracle.py (slow suite) and in test_env.py.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from agentgym_cli.data.exports import ExportFile, naive_readings, read_records
from agentgym_cli.data.fixtures import Fixture, get_workspace, workspace_name
from agentgym_cli.data.programs import PROGRAMS, files_of, harness, outcomes, plant
from agentgym_cli.tasks import DEFAULT_FIXTURES, FAMILIES, split_of
from agentgym_cli.tasks.base import TaskSpec, rate
from agentgym_cli.tasks.git_history import bisect

HARD_FAMILIES = ("pipeline", "awkward_files", "debugging", "git_history", "service_config")


def _test_workspaces(count: int) -> list[Fixture]:
    """The test workspaces among the first `count` of seed 0 (each built once per process)."""
    return [get_workspace(workspace_name(0, index)) for index in range(count) if split_of(index) == "test"]


def _specs(fixture: Fixture, family: str) -> list[TaskSpec]:
    return FAMILIES[family].specs(fixture, random.Random(f"{fixture.name}:{family}"))


def _difficulty(spec: TaskSpec) -> str:
    return rate(spec.traps, spec.inputs) if spec.traps is not None else spec.difficulty


# ------------------------------------------------------------------------------------------------ pipeline
def test_the_export_reading_handles_every_kind_of_mess_the_prompt_names() -> None:
    plain = ("id,date,account,amount,status\n"
             "T1,2024-01-02,ACC-1,10.50,settled\n"
             "# a comment\n\n"
             "T2,2024-01-02,ACC-1,N/A,settled\n"          # amount not a number: malformed
             "T3,01/02/2024,ACC-1,5,settled\n"            # date not YYYY-MM-DD: malformed
             "T4,2024-01-03,ACC-1,7\n"                   # four fields: malformed
             "id,date,account,amount,status\n"            # the header again
             " T5 , 2024-01-03 ,ACC-2, -2 ,SETTLED\n")    # spaces around fields, status in capitals
    reordered = "\ufeffstatus,amount,account,date,id\r\nSettled,1.25,ACC-1,2024-01-04,T6\r\nsettled,10.50,ACC-1,2024-01-02,T1\r\n"
    files = [ExportFile("exports/north/2024-01-02.csv", plain.encode()),
             ExportFile("exports/north/2024-01-04.csv.gz", gzip.compress(reordered.encode(), mtime=0))]
    records = read_records(files)
    assert [(r.id, r.amount, r.status, r.account) for r in records] == [
        ("T1", 10.5, "settled", "ACC-1"), ("T5", -2.0, "settled", "ACC-2"), ("T6", 1.25, "settled", "ACC-1")]
    for name, read in naive_readings().items():
        assert read(files) != records, f"the shortcut {name!r} reads these files right: it is no trap here"


def test_a_skipped_line_is_no_record_so_its_id_does_not_hide_a_valid_copy() -> None:
    text = "id,date,account,amount,status\nT7,2024-01-02,ACC-1,N/A,settled\nT7,2024-01-02,ACC-1,4.00,settled\n"
    records = read_records([ExportFile("exports/east/2024-01-02.csv", text.encode())])
    assert [(r.id, r.amount) for r in records] == [("T7", 4.0)]
    fixture = _test_workspaces(4)[0]
    assert "a skipped line is no record" in _specs(fixture, "pipeline")[0].prompt


def test_pipeline_questions_are_hard_because_shortcuts_give_other_answers() -> None:
    for fixture in _test_workspaces(12):
        specs = _specs(fixture, "pipeline")
        assert len(specs) >= 4
        for spec in specs:
            assert spec.traps is not None and len(spec.traps) >= 3, (spec.template, spec.traps)
            assert _difficulty(spec) == "hard"
            assert "Round it to 2 decimal places" in spec.prompt or spec.answer_kind != "number" \
                or "How many" in spec.prompt  # every answer's shape is stated


# ------------------------------------------------------------------------------------------------ awkward files
def test_incoming_holds_newlines_dashes_and_times_exactly_on_the_cut_off() -> None:
    for fixture in _test_workspaces(12):
        files = fixture.files("incoming/")
        cutoff = int(fixture.facts["inbox_cutoff"])  # type: ignore[call-overload]
        names = [entry.path.rsplit("/", 1)[-1] for entry in files]
        assert any("\n" in name for name in names) and any(name.startswith("-") for name in names)
        assert sum(entry.mtime == cutoff for entry in files) >= 2
        assert any(name.startswith(".") for name in names)


def test_the_count_since_cut_off_refutes_line_counting_and_strict_times() -> None:
    for fixture in _test_workspaces(12):
        count = next(spec for spec in _specs(fixture, "awkward_files") if spec.template == "count_since")
        assert any("newline" in trap for trap in count.traps or [])
        assert any("strictly" in trap for trap in count.traps or [])
        assert "exactly that second counts" in count.prompt


# ------------------------------------------------------------------------------------------------ debugging
@pytest.mark.parametrize("kind", sorted(PROGRAMS))
def test_each_planted_bug_alone_changes_a_hidden_result(kind: str) -> None:
    program = PROGRAMS[kind]
    for seed in range(4):
        params = program.params(random.Random(seed))
        cases = program.cases(params)
        right = outcomes(program.source(params, frozenset()), program.function, cases)
        assert "ValueError" in right  # the contract's errors are tested too
        for bug in program.bugs:
            wrong = outcomes(program.source(params, frozenset({bug})), program.function, cases)
            assert wrong != right, (kind, bug, params)


def test_the_hidden_harness_prints_what_the_generator_expects(tmp_path: Path) -> None:
    """The harness runs as the hidden test does (python3 -I, from the work dir): the fixed module gives the
    expected lines, the planted one does not, and the visible test fails before the fix and passes after."""
    rng = random.Random(3)
    for kind in sorted(PROGRAMS):
        planted = plant(rng, kind)
        program = PROGRAMS[kind]
        work = tmp_path / kind
        (work / "tools").mkdir(parents=True)
        for path, text in files_of(planted).items():
            (work / path).write_text(text)
        module = f"tools/{planted['stem']}.py"
        cases = program.cases(planted["params"])
        check = work / "check.py"
        check.write_text(harness(module, program.function, cases))
        expected = outcomes(program.source(planted["params"], frozenset()), program.function, cases)

        def run(*args: str, work: Path = work) -> subprocess.CompletedProcess[str]:
            return subprocess.run([sys.executable, *args], check=False, cwd=work, capture_output=True, text=True, timeout=60,
                                  env={**os.environ, "PYTHONSAFEPATH": "1"})

        assert run("-I", "check.py").stdout.splitlines() != expected
        assert run(f"tools/test_{planted['stem']}.py").returncode == 1
        (work / module).write_text(program.source(planted["params"], frozenset()))
        assert run("-I", "check.py").stdout.splitlines() == expected
        assert run(f"tools/test_{planted['stem']}.py").returncode == 0


def test_debugging_prompts_state_the_whole_contract() -> None:
    for fixture in _test_workspaces(8):
        for spec in _specs(fixture, "debugging"):
            assert "Raise ValueError" in spec.prompt and "Hidden tests" in spec.prompt
            assert _difficulty(spec) == "hard" and len(spec.traps or []) == 3


# ------------------------------------------------------------------------------------------------ git history
def test_the_first_failing_commit_is_what_running_the_check_at_every_commit_finds(tmp_path: Path) -> None:
    fixture = _test_workspaces(4)[0]
    for entry in fixture.files("history/"):
        target = tmp_path / entry.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(entry.data)
    repo = tmp_path / "history"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True).stdout

    ids = git("rev-list", "--reverse", "main").split()
    assert ids == fixture.facts["history_ids"]
    passes = []
    for commit in ids:
        git("checkout", "-q", commit)
        done = subprocess.run([sys.executable, "-B", "check.py"], check=False, cwd=repo, capture_output=True)
        passes.append(done.returncode == 0)
    assert passes == fixture.facts["history_passes"]
    assert passes.index(False) == fixture.facts["history_first_failing"]


def test_the_first_failing_gold_reads_every_commit_in_one_git_call(tmp_path: Path) -> None:
    """Playtest blocker (14:50): the gold's checkout-and-run loop took 15-20 s of the 20 s shell limit on a loaded
    machine. The gold now reads all versions with one `git cat-file --batch`: its answer is right, its cost a
    few process starts whatever the history's length."""
    import time

    fixture = _test_workspaces(4)[0]
    for entry in fixture.files("history/"):
        target = tmp_path / entry.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(entry.data)
    (spec,) = [spec for spec in _specs(fixture, "git_history") if spec.template == "first_failing"]
    command = spec.steps[0]["arguments"]["command"]
    assert "checkout" not in command and '"cat-file", "--batch"' in command
    started = time.monotonic()
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, check=True,
                          env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)})
    elapsed = time.monotonic() - started
    ids = fixture.facts["history_ids"]
    assert done.stdout.strip() == ids[fixture.facts["history_first_failing"]]  # type: ignore[index]
    assert elapsed < 10, elapsed  # a fraction of a second when idle


def test_a_binary_search_trap_is_only_claimed_where_it_misleads() -> None:
    assert bisect([True, True, False, False]) == 2
    assert bisect([True, False, True, True, False, False]) == 4  # lands on the later break, not index 1


# ------------------------------------------------------------------------------------------------ the proxy
def test_difficulty_follows_the_documented_proxy() -> None:
    assert rate([], 1) == "easy"
    assert rate([], 12) == "medium" and rate(["a"], 2) == "medium"
    assert rate(["a", "b"], 5) == "medium" and rate(["a", "b"], 25) == "hard"
    assert rate(["a", "b", "c"], 1) == "hard"


def test_no_family_outside_the_hard_tier_claims_hard_by_hand() -> None:
    """Issue 30: the playtest solved every hand-labelled hard task; the label now comes from measured traps."""
    for fixture in _test_workspaces(8):
        for family in FAMILIES:
            for spec in _specs(fixture, family):
                if spec.traps is None:
                    assert spec.difficulty != "hard", (family, spec.template)


@pytest.mark.slow
def test_the_test_split_has_400_distinct_prompts_and_100_hard_tasks() -> None:
    prompts: Counter[str] = Counter()
    hard = 0
    for fixture in _test_workspaces(DEFAULT_FIXTURES):
        for family in FAMILIES:
            for spec in _specs(fixture, family):
                prompts[spec.prompt] += 1
                hard += _difficulty(spec) == "hard"
    assert len(prompts) >= 400, len(prompts)
    assert hard >= 100, hard


def test_hard_answers_vary_between_workspaces() -> None:
    """No template of the hard families has one answer for most workspaces (issue 25, per template)."""
    answers: dict[str, list[str]] = {}
    for fixture in _test_workspaces(20):
        for family in HARD_FAMILIES:
            for spec in _specs(fixture, family):
                if spec.expected_answer is not None:
                    answers.setdefault(f"{family}/{spec.template.split('-')[0]}", []).append(
                        json.dumps(spec.expected_answer, sort_keys=True))
    assert len(answers) >= 6
    for key, values in answers.items():
        top = Counter(values).most_common(1)[0][1]
        assert top * 2 <= len(values), (key, Counter(values).most_common(2))


def test_the_turn_budget_leaves_room_on_the_hard_tier() -> None:
    """max_turns (40) is ten times the oracle's longest hard solution (its tool calls and the submit): a careful
    agent explores, writes a program, runs it, checks the edge cases and fixes it (10-20 turns)."""
    from agentgym_cli.env import MAX_TURNS

    longest = max(len(spec.steps) + 1 for fixture in _test_workspaces(8) for family in HARD_FAMILIES
                  for spec in _specs(fixture, family))
    assert longest <= 3 and MAX_TURNS >= 10 * longest


def test_the_service_policy_refutes_its_shortcuts() -> None:
    for fixture in _test_workspaces(12):
        (spec,) = _specs(fixture, "service_config")
        assert spec.check_modes and _difficulty(spec) == "hard"
        assert any("extension" in trap for trap in spec.traps or [])
        assert any("symbolic links" in trap for trap in spec.traps or [])


def test_tasks_are_cached_per_family_so_one_family_rebuilds_alone(tmp_path: Path, backend: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache holds one file per family and workspace, keyed by that family's module and the shared sources:
    a second call builds nothing, and another family's tasks are made without touching these."""
    from agentgym_cli.tasks import cache_folder, generate

    from agentgym.cache import no_builds

    monkeypatch.setenv("AGENTGYM_CACHE", str(tmp_path))
    made = generate(0, fixtures=1, families=["git_history"], backend=backend)
    (folder,) = [path for path in cache_folder().iterdir() if path.name.startswith("git_history-")]
    assert [path.name for path in folder.iterdir()] == ["s0-000.jsonl"]
    with no_builds():
        assert generate(0, fixtures=1, families=["git_history"], backend=backend) == made
    generate(0, fixtures=1, families=["service_config"], backend=backend)
    assert sorted(path.name.split("-")[0] for path in cache_folder().iterdir()) == ["git_history", "service_config"]


def test_restoring_a_helper_takes_one_commit_that_changes_nothing_else(tmp_path: Path) -> None:
    """git_history/restore: the hidden test passes on the gold commit and fails on the shortcuts it names (a
    `git revert`-like commit that drops the breaking commit's note line) and on doing nothing."""
    fixture = next(fixture for fixture in _test_workspaces(40)
                   if any(spec.template == "restore" for spec in _specs(fixture, "git_history")))
    spec = next(spec for spec in _specs(fixture, "git_history") if spec.template == "restore")
    assert spec.traps and _difficulty(spec) == "hard"
    expected = spec.steps[0]["arguments"]["content"]
    broken_at = len(fixture.facts["history_passes"]) - [*reversed(fixture.facts["history_passes"])].index(True)
    reverted = "".join(line for line in expected.splitlines(keepends=True)
                       if not line.endswith(f"({broken_at})\n"))

    def graded(content: str | None) -> bool:
        work = tmp_path / f"try-{len(list(tmp_path.iterdir()))}"
        for entry in fixture.files("history/"):
            target = work / entry.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(entry.data)
        env = {"PATH": os.environ["PATH"], "HOME": str(work), "GIT_CONFIG_NOSYSTEM": "1",
               "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "A", "GIT_COMMITTER_EMAIL": "a@x"}
        if content is not None:
            (work / "history" / "calc.py").write_text(content)
            subprocess.run(["git", "commit", "-q", "-am", "fix"], cwd=work / "history", env=env, check=True)
        done = subprocess.run(["bash", "--noprofile", "--norc", "-c", spec.tests[0]["script"]], cwd=work, env=env,
                              capture_output=True, text=True, check=False)
        return done.returncode == 0

    assert graded(expected)
    assert not graded(None)
    assert not graded(reverted)
