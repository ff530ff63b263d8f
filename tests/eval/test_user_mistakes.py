"""Every command-line mistake a user makes gives one clear line (exit 1 or 2, never a traceback), with "did you
mean" where a name is close, and leaves nothing behind that blocks the corrected command."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import gymnasium as gym
import pytest
from click.testing import CliRunner, Result

from agentgym.cli import main


def _run(*arguments: str) -> Result:
    return CliRunner().invoke(main, list(arguments))


def _one_clear_line(result: Result, *expected: str, exit_code: int | None = None) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert result.exit_code == exit_code if exit_code is not None else result.exit_code in (1, 2), result.output
    for text in expected:
        assert text in result.output, result.output


def test_a_misspelt_agent_fails_before_anything_is_written_and_the_fix_runs(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = _run("eval", "EvalToy-v0", "--agent", "orcle", "--out", str(out), "--n", "2")
    _one_clear_line(result, "unknown agent 'orcle'", "did you mean 'oracle'", exit_code=2)
    assert "ETA" not in result.output  # no progress bar started before the error
    assert not (out / "run.json").exists()
    fixed = _run("eval", "EvalToy-v0", "--agent", "oracle", "--out", str(out), "--n", "2", "--no-progress",
                 "--no-plots")
    assert fixed.exit_code == 0, fixed.output


@pytest.mark.parametrize(("option", "value", "expected"), [
    ("--n", "-1", "--n must be at least 0"),
    ("--workers", "0", "--workers must be at least 1"),
    ("--per-family", "-2", "--per-family must be at least 0"),
    ("--split", "tset", "has no split 'tset'"),
])
def test_bad_counts_and_splits_are_refused(tmp_path: Path, option: str, value: str, expected: str) -> None:
    out = tmp_path / "run"
    result = _run("eval", "EvalToy-v0", "--out", str(out), option, value, "--no-progress")
    _one_clear_line(result, expected, exit_code=2)
    assert not (out / "run.json").exists()


def test_a_misspelt_env_is_named_with_the_close_one(tmp_path: Path) -> None:
    for arguments in (["eval", "EvalToy-v1", "--out", str(tmp_path / "r")], ["info", "EvalToy-v1"],
                      ["play", "EvalToy-v1"], ["tasks", "generate", "SQL-v1", "--out", str(tmp_path / "t.jsonl")]):
        _one_clear_line(_run(*arguments), "unknown environment", "did you mean", exit_code=1)


def test_train_with_a_misspelt_env_fails_before_loading_a_model(tmp_path: Path) -> None:
    pytest.importorskip("agentgym_baselines", reason="agentgym-baselines is not installed (make install installs it)")
    result = _run("train", "grpo", "--env", "SQL-v1", "--model", "none", "--output", str(tmp_path / "o"))
    _one_clear_line(result, "unknown environment 'SQL-v1'", "did you mean 'SQL-v0'", exit_code=1)


def test_play_with_an_unknown_task_id_says_which_exist() -> None:
    result = CliRunner().invoke(main, ["play", "EvalToy-v0", "--task-id", "toy-99"], input=":quit\n")
    _one_clear_line(result, "no task 'toy-99'", "did you mean", exit_code=2)


def test_an_unknown_generator_option_is_refused_with_the_close_one(tmp_path: Path) -> None:
    result = _run("tasks", "generate", "SQL-v0", "--out", str(tmp_path / "t.jsonl"), "--option", "foo=1")
    _one_clear_line(result, "takes no '--option foo'", "it takes:", exit_code=2)
    assert not (tmp_path / "t.jsonl").exists()


def test_missing_and_corrupt_task_files(tmp_path: Path) -> None:
    result = _run("eval", "EvalToy-v0", "--tasks", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "r"))
    _one_clear_line(result, "missing.jsonl", exit_code=1)
    corrupt = tmp_path / "corrupt.jsonl"
    corrupt.write_text('{"id": "a", "prompt": \n')
    result = _run("eval", "EvalToy-v0", "--tasks", str(corrupt), "--out", str(tmp_path / "r2"))
    _one_clear_line(result, "corrupt.jsonl", exit_code=1)


def test_an_unknown_reward_weight_is_refused_with_the_close_one() -> None:
    with pytest.raises(ValueError, match=r"unknown reward weight 'answr' \(did you mean 'answer'\?\)"):
        gym.make("EvalToy-v0", reward_weights={"answr": 1.0})
    result = _run("eval", "EvalToy-v0", "--env-arg", 'reward_weights={"answr": 1}', "--out", "unused-run")
    _one_clear_line(result, "did you mean 'answer'", exit_code=1)
    # the known keys still work
    gym.make("EvalToy-v0", reward_weights={"answer": 1.0, "format": 0.1, "process/lookups": 0.1}).close()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_model_server_fails_fast_with_its_url(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    started = time.monotonic()
    result = _run("eval", "EvalToy-v0", "--agent", "openai:some-model", "--base-url", url, "--n", "2",
                  "--out", str(tmp_path / "run"), "--no-progress")
    _one_clear_line(result, f"the model server at {url} does not answer", exit_code=1)
    assert time.monotonic() - started < 15  # not the ~25 s of retries per episode it used to take
    assert not (tmp_path / "run").exists()


class _KeyWantingServer(ThreadingHTTPServer):
    """A real HTTP server that refuses every request without the key "sk-right" (401), like a hosted API."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                good = self.headers.get("Authorization") == "Bearer sk-right"
                self.send_response(200 if good else 401)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(json.dumps({"data": []} if good else {"error": "no key"}).encode())

        super().__init__(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}/v1"
        threading.Thread(target=self.serve_forever, daemon=True).start()


def test_an_unset_or_wrong_api_key_is_named_before_the_first_episode(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = _KeyWantingServer()
    try:
        unset = _run("eval", "EvalToy-v0", "--agent", "openai:m", "--base-url", server.url,
                     "--out", str(tmp_path / "a"), "--no-progress")
        _one_clear_line(unset, "wants an API key and none is set", "OPENAI_API_KEY", exit_code=1)
        wrong = _run("eval", "EvalToy-v0", "--agent", "openai:m", "--base-url", server.url, "--api-key", "sk-wrong",
                     "--out", str(tmp_path / "b"), "--no-progress")
        _one_clear_line(wrong, "refused the API key (HTTP 401)", exit_code=1)
        assert "sk-wrong" not in wrong.output
    finally:
        server.shutdown()
        server.server_close()
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
