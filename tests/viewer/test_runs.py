"""The viewer's data side and command, without a browser: what is read from a run, what the plots count,
what the static report holds, and the messages for mistakes."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

from click.testing import CliRunner
from conftest import PAYLOADS

from agentgym.cli import main
from agentgym.viewer import stats
from agentgym.viewer.page import episode_payload, explain, static_report
from agentgym.viewer.runs import diagnosis_label, load_run, load_runs


def test_index_matches_the_trajectories_and_episodes_are_read_on_demand(oracle_run: Path) -> None:
    run = load_run(oracle_run)
    records = [json.loads(line) for line in (oracle_run / "trajectories.jsonl").read_text().splitlines()]
    assert [row["task"] for row in run.rows] == [record["task_id"] for record in records]
    assert all(row["success"] and row["reward"] == 1.0 for row in run.rows)
    payload = episode_payload(run, 3)
    assert payload["record"] == records[3]
    assert "answer" not in payload["record"] and "solution" not in payload["record"]  # eval records hold no gold


def test_gold_is_looked_up_in_the_envs_task_set(oracle_run: Path) -> None:
    import gymnasium as gym

    run = load_run(oracle_run)
    env = gym.make("SQL-v0")
    task = env.unwrapped.task_set.get(run.rows[2]["task"])
    env.close()
    payload = episode_payload(run, 2)
    assert payload["gold"] == json.loads(json.dumps({"answer": task.answer, "solution": task.solution}))
    assert payload["gold"]["solution"][-1]["name"].startswith("submit")  # the oracle's calls end by submitting
    assert payload["gold_source"] == "SQL-v0's task set on this machine" and payload["gold_missing"] is None


def test_gold_not_available_says_why(diagnosed_run: Path, hostile_run: Path) -> None:
    payload = episode_payload(load_run(diagnosed_run), 1)  # env_id Nowhere-v0
    assert payload["gold"] == {} and "Nowhere-v0 is not installed here" in payload["gold_missing"]
    # a task id the task set lacks (the hostile run appended markup to each): the gold the record holds
    hostile = episode_payload(load_run(hostile_run), 0)
    assert set(hostile["gold"]) == {"answer", "solution"} and hostile["gold_source"] == "the run file"


def test_diagnosis_labels_reach_the_table(diagnosed_run: Path) -> None:
    run = load_run(diagnosed_run)
    diagnosis = run.episode(0)["diagnosis"]
    assert run.rows[0]["diagnosis"].split("; ")[0] == diagnosis["episode"] != ""
    assert diagnosis_label({"episode": "wrong_answer", "domain": ["query_does_not_parse"]}) == \
        "wrong_answer; query_does_not_parse"
    assert diagnosis_label("free text") == "free text" and diagnosis_label(None) == ""


def test_a_cut_last_line_is_skipped_not_fatal(tmp_path: Path, oracle_run: Path) -> None:
    text = (oracle_run / "trajectories.jsonl").read_text()
    (tmp_path / "trajectories.jsonl").write_text(text + '{"env_id": "SQL-v0", "task_')
    run = load_run(tmp_path)
    assert len(run.rows) == len(text.splitlines()) and run.skipped_lines == 1


def test_family_statistics_count_tasks_and_use_the_verifier_score(random_run: Path, oracle_run: Path) -> None:
    oracle = stats.by_family(load_run(oracle_run).rows)
    assert sum(group["tasks"] for group in oracle.values()) == 8
    assert all(group["success"]["value"] == 1.0 for group in oracle.values())
    rows = load_run(random_run).rows
    overall = stats.group_stats(rows)
    assert overall["success"]["value"] == sum(row["success"] for row in rows) / len(rows)
    low, high = overall["reward"]["low"], overall["reward"]["high"]
    assert low is not None and high is not None and low <= overall["reward"]["value"] <= high


def test_pass_at_k_uses_the_unbiased_estimator() -> None:
    rows = [{"env": "E", "task": "t", "success": ok, "turns": 1, "reward": float(ok), "tool_calls": 1,
             "tool_errors": 0} for ok in (True, False, False, False)]
    curve = stats.pass_at_k_curve(rows)
    assert curve["ks"] == [1, 2, 3, 4]
    assert curve["values"] == [0.25, 0.5, 0.75, 1.0]


def test_breakdown_terms_are_explained() -> None:
    assert "verifier" in explain("answer")
    assert "process" in explain("process/parses")
    assert "no description" in explain("made_up_term")


def test_static_report_is_self_contained_and_inert(tmp_path: Path, oracle_run: Path, hostile_run: Path) -> None:
    out = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["view", str(oracle_run), str(hostile_run), "--static", str(out)])
    assert result.exit_code == 0, result.output
    html = out.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # nothing fetched from the network
    for payload in PAYLOADS:
        if "<" in payload:
            assert payload not in html  # embedded data is escaped, never raw markup
    assert "window.__pwned" in html  # the payloads are there, as escaped data
    assert len(re.findall(r"<script", html)) == 3  # the two JSON blocks and the page's own script


def test_training_run_is_plotted(training_run: Path) -> None:
    [run] = load_runs([training_run])
    assert run.kind == "training"
    html = static_report([run])
    for name in ("reward", "loss", "kl"):
        assert f"training: {name}" in html


def test_mistakes_get_one_clear_line(tmp_path: Path, oracle_run: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(main, ["view", str(tmp_path / "nope")])
    assert missing.exit_code != 0 and "does not exist" in missing.output and "Traceback" not in missing.output
    empty = runner.invoke(main, ["view", str(tmp_path)])
    assert empty.exit_code != 0 and "neither trajectories.jsonl" in empty.output
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = runner.invoke(main, ["view", str(oracle_run), "--port", str(port)])
    assert result.exit_code != 0 and "in use" in result.output and "--port" in result.output


def test_ten_thousand_episodes_index(big_run: Path) -> None:
    """Every record becomes a row (the time it takes is bench/viewer.py's figure)."""
    [run] = load_runs([big_run])
    assert len(run.rows) == 10_000
    assert len({(row["task"], row["sample"]) for row in run.rows}) == 10_000


def test_the_served_api_needs_the_token_of_the_printed_address(oracle_run: Path) -> None:
    import urllib.error
    import urllib.request

    from agentgym.viewer.server import ViewerServer

    server = ViewerServer(load_runs([oracle_run]), 0)
    server.start_in_thread()
    try:
        root = server.url.rsplit("/", 2)[0]  # http://127.0.0.1:PORT, without the token
        with urllib.request.urlopen(server.url + "api/episode?run=0&index=0") as response:
            assert "solution" in json.loads(response.read())["gold"]
        for guess in ("/api/episode?run=0&index=0", "/api/rows", "/", "/wrong-token/api/rows"):
            try:
                urllib.request.urlopen(root + guess)
                raise AssertionError(f"{guess} answered without the token")
            except urllib.error.HTTPError as error:
                assert error.code == 404
    finally:
        server.shutdown()
        server.server_close()
