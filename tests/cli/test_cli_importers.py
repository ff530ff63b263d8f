"""Importers: InterCode-Bash (the shared sample) and Terminal-Bench (a tiny task folder written by the test)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentgym.agents import OracleAgent
from agentgym.cli import main
from agentgym.rollout import run_episode
from agentgym.tasks import load_tasks

SAMPLES = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "samples" / "intercode_bash"


def _oracle_rewards(env: Any, tasks: list[Any]) -> dict[str, float]:
    return {task.id: run_episode(env, OracleAgent(), seed=0, task_id=task.id).reward for task in tasks}


def test_intercode_bash_import_runs_gold_commands_and_the_oracle_replays_them(tmp_path: Path, backend: str,
                                                                              make_cli_env: Any) -> None:
    source, tree = SAMPLES / "nl2bash_fs_1_sample.json", SAMPLES / "nl2bash_fs_1_tree.tar.gz"
    if not source.exists():
        pytest.skip(f"the InterCode sample is not at {SAMPLES}")
    out = tmp_path / "ic.jsonl"
    result = CliRunner().invoke(main, ["tasks", "import", "intercode-bash", str(source), "--fs", str(tree),
                                       "--out", str(out), "--backend", backend], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    tasks = load_tasks(out)
    assert len(tasks) == 10 and {task.family for task in tasks} == {"intercode_bash"}
    counting = tasks[0]
    assert "/testbed" not in counting.solution[0]["arguments"]["command"]
    assert counting.answer.strip() == "46"  # `find /testbed | wc -l` on the sample tree
    changed = [task for task in tasks if task.verifier.params["expected"]]
    assert changed, "some gold commands write files: their expected state is recorded"
    env = make_cli_env(tasks=tasks)
    assert set(_oracle_rewards(env, tasks).values()) == {1.0}
    # Doing the right thing by another command scores too; a wrong count does not.
    env.reset(options={"task_id": counting.id})
    env.step({"name": "run_shell", "arguments": {"command": "find testbed -print | wc -l"}})
    assert env.step({"name": "submit", "arguments": {}})[1] == 1.0
    env.reset(options={"task_id": counting.id})
    assert env.step({"name": "submit", "arguments": {"answer": "45"}})[1] == 0.0


def _write_terminal_bench(root: Path) -> None:
    good = root / "greet-names"
    (good / "tests").mkdir(parents=True)
    (good / "task.yaml").write_text(textwrap.dedent("""\
        instruction: |
          Read the names in /app/names.txt and write one line "Hello, NAME!" per name,
          in the same order, to /app/greetings.txt.
        difficulty: easy
        """))
    (good / "names.txt").write_text("Ada\nGrace\nLinus\n")
    (good / "Dockerfile").write_text("FROM agentgym-sandbox\nWORKDIR /app\nCOPY names.txt /app/names.txt\n")
    (good / "solution.sh").write_text("#!/bin/bash\nset -e\nsed 's/.*/Hello, &!/' /app/names.txt > "
                                      "/app/greetings.txt\nexit 0\n")
    (good / "tests" / "test_outputs.py").write_text(textwrap.dedent("""\
        from pathlib import Path

        def test_greetings():
            lines = Path("/app/greetings.txt").read_text().splitlines()
            assert lines == ["Hello, Ada!", "Hello, Grace!", "Hello, Linus!"]
        """))
    broken = root / "broken-solution"
    (broken / "tests").mkdir(parents=True)
    (broken / "task.yaml").write_text("instruction: Create /app/x.txt containing 42.\n")
    (broken / "solution.sh").write_text("echo 41 > /app/x.txt\n")
    (broken / "tests" / "test_x.py").write_text("def test_x():\n    assert open('/app/x.txt').read().strip() == '42'\n")


def test_terminal_bench_import_keeps_tasks_whose_solution_passes_hidden_tests(tmp_path: Path, backend: str,
                                                                             make_cli_env: Any) -> None:
    _write_terminal_bench(tmp_path / "tb")
    out = tmp_path / "tb.jsonl"
    result = CliRunner().invoke(main, ["tasks", "import", "terminal-bench", str(tmp_path / "tb"), "--out", str(out),
                                       "--backend", backend], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "skipped tb-broken-solution" in result.output
    tasks = load_tasks(out)
    assert [task.id for task in tasks] == ["tb-greet-names"]
    task = tasks[0]
    assert "/app" not in task.prompt and "names.txt" in task.prompt
    assert "test_greetings" not in task.prompt and "solution" not in task.prompt
    env = make_cli_env(tasks=tasks)
    assert _oracle_rewards(env, tasks) == {"tb-greet-names": 1.0}
    env.reset(options={"task_id": task.id})
    observation = env.step({"name": "run_shell", "arguments": {"command": "ls -A"}})[0]
    assert observation.split() == ["names.txt"]
    _, reward, _, _, info = env.step({"name": "submit", "arguments": {}})
    assert reward == 0.0 and info["reward_breakdown"]["verifier/tests"] == 0.0


def test_intercode_bad_records_and_a_byte_order_mark_are_skipped_with_reasons(tmp_path: Path, backend: str,
                                                                              make_cli_env: Any) -> None:
    tree = tmp_path / "tree"
    (tree / "testbed" / "logs").mkdir(parents=True)
    (tree / "testbed" / "logs" / "a.log").write_text("ok\nerror: disk\n")
    (tree / "testbed" / "notes.txt").write_text("Zürich\n")
    records = [
        {"query": "Count the lines of /testbed/logs/a.log", "gold": "wc -l < /testbed/logs/a.log"},
        "not a record",
        {"query": "Missing gold"},
        {"query": "Print the notes", "gold": "cat /testbed/notes.txt"},
        {"query": "Run a tool that does not exist", "gold": "no-such-tool-agentgym --flag"},
    ]
    source = tmp_path / "ic.json"
    source.write_bytes(b"\xef\xbb\xbf" + json.dumps(records, ensure_ascii=False).encode("utf-8"))
    out = tmp_path / "ic.jsonl"
    result = CliRunner().invoke(main, ["tasks", "import", "intercode-bash", str(source), "--fs", str(tree),
                                       "--out", str(out), "--backend", backend], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "2 x not an object with non-empty text 'query' and 'gold' (e.g. intercode-ic-0001, intercode-ic-0002)" \
        in result.output
    tasks = load_tasks(out)
    ids = [task.id for task in tasks]
    assert ids[:2] == ["intercode-ic-0000", "intercode-ic-0003"]
    assert tasks[1].answer.strip() == "Zürich"
    env = make_cli_env(tasks=tasks)
    assert set(_oracle_rewards(env, tasks).values()) == {1.0}


def test_terminal_bench_odd_encodings_and_broken_folders_do_not_end_the_import(tmp_path: Path, backend: str,
                                                                              make_cli_env: Any) -> None:
    _write_terminal_bench(tmp_path / "tb")
    odd = tmp_path / "tb" / "latin1-test"
    (odd / "tests").mkdir(parents=True)
    (odd / "task.yaml").write_bytes(b"\xef\xbb\xbfinstruction: Write caf\xc3\xa9 to /app/menu.txt.\n")
    (odd / "solution.sh").write_text("printf 'café\\n' > /app/menu.txt\n")
    (odd / "tests" / "test_menu.py").write_bytes(
        b"# Men\xfc check (a latin-1 comment)\n"
        b"def test_menu():\n    assert open('/app/menu.txt', encoding='utf-8').read() == 'caf\\u00e9\\n'\n")
    bad_yaml = tmp_path / "tb" / "bad-yaml"
    (bad_yaml / "tests").mkdir(parents=True)
    (bad_yaml / "task.yaml").write_text("instruction: [unclosed\n")
    (bad_yaml / "solution.sh").write_text("true\n")
    no_solution = tmp_path / "tb" / "no-solution"
    no_solution.mkdir()
    (no_solution / "task.yaml").write_text("instruction: Do something.\n")
    out = tmp_path / "tb.jsonl"
    result = CliRunner().invoke(main, ["tasks", "import", "terminal-bench", str(tmp_path / "tb"), "--out", str(out),
                                       "--backend", backend], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "skipped tb-bad-yaml: no readable instruction" in result.output
    assert "skipped tb-no-solution: no solution.sh" in result.output
    assert "skipped 3 tasks, by reason:" in result.output
    tasks = load_tasks(out)
    assert [task.id for task in tasks] == ["tb-greet-names", "tb-latin1-test"]
    assert "café" in tasks[1].prompt
    env = make_cli_env(tasks=tasks)
    assert set(_oracle_rewards(env, tasks).values()) == {1.0}


def test_intercode_golds_that_race_or_differ_between_runs_are_left_out_with_reasons(tmp_path: Path,
                                                                                    backend: str) -> None:
    # InterCode's nl2bash_fs_1-0011 writes its file from a background job (`... | tee out &`): whether the file
    # exists at grading is a race, and the oracle failed it 2 runs of 4. Such a gold, and one whose two runs on
    # fresh trees print different things, leave no fixed answer to grade: both are left out, with the reason.
    tree = tmp_path / "tree"
    (tree / "testbed" / "dir").mkdir(parents=True)
    (tree / "testbed" / "dir" / "a.txt").write_text("alpha\n")
    records = [
        {"query": "Count the files in /testbed", "gold": "find /testbed -type f | wc -l"},
        {"query": "List the files into list.txt", "gold": "find /testbed -type f | tee /testbed/list.txt &"},
        {"query": "Print 16 random bytes", "gold": "head -c 16 /dev/urandom | od -An -tx1"},
        {"query": "Print a and b", "gold": "echo 'a & b' && echo done 2>&1"},
    ]
    source = tmp_path / "race.json"
    source.write_text(json.dumps(records))
    out = tmp_path / "race.jsonl"
    result = CliRunner().invoke(main, ["tasks", "import", "intercode-bash", str(source), "--fs", str(tree),
                                       "--out", str(out), "--backend", backend], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert [task.id for task in load_tasks(out)] == ["intercode-race-0000", "intercode-race-0003"]
    assert "skipped intercode-race-0001: the gold runs a command in the background (&)" in result.output
    assert "skipped intercode-race-0002: the gold solution's result differs between two runs" in result.output
