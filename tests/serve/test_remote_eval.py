"""`agentgym eval ENV --remote URL`: every episode is played on the served env, and the run is the local run's
(same tasks, rewards and success, same summary shape); a server that is missing or refuses the token fails
before the first episode with one line naming the URL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from tests.serve.conftest import SERVE_EXTRA

for _module in ("openenv", "uvicorn", "websockets"):
    pytest.importorskip(_module, reason=SERVE_EXTRA)

from agentgym.cli import main
from agentgym.serving.remote import TOKEN_VARIABLE
from tests.serve.conftest import free_port, serving


@pytest.fixture(autouse=True)
def _no_token_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # `--token` reaches the episodes through this variable; undo it after each test (setenv records its absence)
    monkeypatch.setenv(TOKEN_VARIABLE, "")


def _eval(out: Path, *arguments: str) -> Result:
    return CliRunner().invoke(main, ["eval", "SQL-v0", "--agent", "oracle", "--n", "4", "--out", str(out),
                                     "--no-progress", "--no-plots", "--bootstrap", "50", *arguments])


def _episodes(out: Path) -> list[tuple[str, int, float, bool, int]]:
    records = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    return sorted((record["task_id"], record["seed"], record["reward"], record["success"], record["turns"])
                  for record in records)


def _shape(value: Any) -> Any:
    """The keys of a summary, recursively (values differ: timings, the backend, the URL)."""
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items() if key not in ("seconds",)}
    return type(value).__name__ if not isinstance(value, (int, float)) or isinstance(value, bool) else "number"


def test_remote_oracle_eval_is_the_local_eval(sql_server: str, tmp_path: Path) -> None:
    local = _eval(tmp_path / "local")
    assert local.exit_code == 0, local.output
    remote = _eval(tmp_path / "remote", "--remote", sql_server.replace("http://", "ws://"))
    assert remote.exit_code == 0, remote.output
    episodes = _episodes(tmp_path / "remote")
    assert episodes == _episodes(tmp_path / "local")
    assert len(episodes) == 4 and all(success for _, _, _, success, _ in episodes)
    local_summary = json.loads((tmp_path / "local" / "summary.json").read_text())
    remote_summary = json.loads((tmp_path / "remote" / "summary.json").read_text())
    local_summary["run"].pop("env_args")
    served_args = remote_summary["run"].pop("env_args")
    assert served_args == {"remote": sql_server.replace("http://", "ws://")}  # the run says where it ran
    assert _shape(remote_summary) == _shape(local_summary)
    assert remote_summary["success_rate"] == local_summary["success_rate"] == 1.0
    assert (tmp_path / "remote" / "report.md").is_file()
    run = json.loads((tmp_path / "remote" / "run.json").read_text())
    assert run["env_args"]["remote"].endswith(sql_server.rsplit(":", 1)[1])
    # the episodes were played by the server: its health saw them come and go, no session is left open
    import httpx

    assert httpx.get(sql_server + "/health").json()["sessions"]["active"] == 0


def test_remote_eval_with_a_token_never_writes_it(tmp_path: Path) -> None:
    token = "tok-remote-eval-7f3a"
    with serving("SQL-v0", token=token, max_sessions=4) as url:
        refused = _eval(tmp_path / "refused", "--remote", url)
        assert refused.exit_code == 1
        assert f"{url} refused the request (HTTP 401)" in refused.output and "--token" in refused.output
        assert "Traceback" not in refused.output and len(refused.output.strip().splitlines()) == 1
        assert not (tmp_path / "refused").exists()  # refused before anything is written
        wrong = _eval(tmp_path / "wrong", "--remote", url, "--token", "not-it")
        assert wrong.exit_code == 1 and "refused the token" in wrong.output
        result = _eval(tmp_path / "ok", "--remote", url, "--token", token, "--n", "2")
        assert result.exit_code == 0, result.output
    assert [success for *_, success, _ in _episodes(tmp_path / "ok")] == [True, True]
    for path in (tmp_path / "ok").rglob("*"):
        if path.is_file():
            assert token not in path.read_text(errors="replace"), path


def test_remote_eval_fails_fast_on_a_missing_or_wrong_server(sql_server: str, tmp_path: Path) -> None:
    missing = f"ws://127.0.0.1:{free_port()}"
    result = _eval(tmp_path / "missing", "--remote", missing)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.startswith(f"Error: no agentgym server answers at {missing.replace('ws://', 'http://')}")
    assert not (tmp_path / "missing").exists()
    other = CliRunner().invoke(main, ["eval", "FHIR-v0", "--remote", sql_server, "--out", str(tmp_path / "fhir")])
    assert other.exit_code == 1 and "serves SQL-v0, not FHIR-v0" in other.output
    two = CliRunner().invoke(main, ["eval", "SQL-v0,FHIR-v0", "--remote", sql_server, "--out", str(tmp_path / "x")])
    assert two.exit_code == 2 and "a server serves one env" in two.output
