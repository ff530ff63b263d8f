"""Hostile agents on the write paths of SQL-v0, FHIR-v0 and CLI-v0 (invariant 4).

Each test runs an agent that tries to destroy the gold data while a second episode runs at the same time,
then checks what a user would notice: the gold files are byte-identical (sha256), the concurrent episode
never saw the damage (its queries return the gold values and its oracle still scores 1.0), and the next
episode starts clean.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from reliability_support import checksums, sqlite_family, wait_for_no_containers

import agentgym  # noqa: F401  (registers the envs)
from agentgym.agents import OracleAgent
from agentgym.rollout import run_episode


class Witness(threading.Thread):
    """Plays `episode()` over and over in its own thread until told to stop; keeps every failure it saw."""

    def __init__(self, episode: Callable[[], None]) -> None:
        super().__init__(name="reliability-witness", daemon=True)
        self.episode = episode
        self.stop = threading.Event()
        self.rounds = 0
        self.failures: list[str] = []

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.episode()
            except AssertionError as failure:
                self.failures.append(str(failure)[:500])
            except Exception as error:  # noqa: BLE001 (recorded, then asserted on by finish())
                self.failures.append(f"{type(error).__name__}: {error}"[:500])
            self.rounds += 1

    def finish(self, minimum_rounds: int = 1, timeout: float = 60.0) -> None:
        self.stop.set()
        self.join(timeout)
        assert not self.is_alive(), "the concurrent episode did not finish"
        assert self.rounds >= minimum_rounds, f"the concurrent episode ran only {self.rounds} times"
        assert not self.failures, f"the concurrent episode saw damage: {self.failures[:3]}"


# ===================================================================================================== SQL
SQL_ATTACKS = [
    "DROP TABLE {table}",
    "DELETE FROM {table}",
    "DELETE FROM {table} RETURNING *",
    "UPDATE {table} SET {column} = NULL",
    "REPLACE INTO {table} SELECT * FROM {table}",
    "INSERT INTO {table} SELECT * FROM {table}",
    "ALTER TABLE {table} RENAME TO gone",
    "CREATE INDEX evil ON {table}({column})",
    "ATTACH DATABASE '{path}' AS gold",
    "ATTACH DATABASE ':memory:' AS scratch",
    "DETACH DATABASE main",
    "VACUUM",
    "VACUUM INTO '{path}'",
    "VACUUM INTO '/tmp/agentgym-reliability-copy.db'",
    "REINDEX",
    "ANALYZE",
    "PRAGMA journal_mode = WAL",
    "PRAGMA user_version = 7",
    "PRAGMA writable_schema = ON",
    "BEGIN EXCLUSIVE",
    "SAVEPOINT s1",
    "SELECT 1; DROP TABLE {table}",
    "SELECT 1 /* ; */ ; DELETE FROM {table}",
    "/* harmless */ DROP TABLE {table}",
    "-- note\nDELETE FROM {table}",
    "WITH doomed AS (SELECT 1) DELETE FROM {table}",
    "WITH doomed AS (SELECT 1) INSERT INTO {table} SELECT * FROM {table}",
    "(SELECT 1) UNION ALL SELECT writefile('/tmp/agentgym-reliability-write', 'x')",
    "SELECT load_extension('/tmp/evil.so')",
    "SELECT * FROM {table} WHERE 1 = (SELECT COUNT(*) FROM pragma_writable_schema)",
]


def _sql_oracle_witness(database: str, count_sql: str, expected: str) -> Callable[[], None]:
    env = gym.make("SQL-v0", timeout_s=2.0)
    tasks = [t for t in env.unwrapped.task_set if t.metadata["database"] == database][:5]
    oracle = OracleAgent()

    def episode() -> None:
        for task in tasks:
            trajectory = run_episode(env, oracle, seed=0, task_id=task.id)
            assert trajectory.reward == 1.0, f"oracle scored {trajectory.reward} on {task.id}"
        env.reset(options={"task_id": tasks[0].id})
        observation, *_ = env.step({"name": "execute_sql", "arguments": {"sql": count_sql}})
        assert expected in observation, f"count changed: {observation[:200]}"

    episode.env = env  # type: ignore[attr-defined]
    return episode


@pytest.mark.timeout(300)
@pytest.mark.parametrize("database,table,column", [("retail", "products", "unit_price"),
                                                   ("hospital", "patients", "last_name")])
def test_sql_hostile_agent_changes_no_byte_and_no_concurrent_episode_sees_it(
        database: str, table: str, column: str) -> None:
    from agentgym_sql.data import DATABASES, ensure_sqlite

    path = ensure_sqlite(DATABASES[database])
    files = sqlite_family(path)
    before = checksums(files)
    env = gym.make("SQL-v0", timeout_s=2.0, max_turns=500)
    task = next(t for t in env.unwrapped.task_set if t.metadata["database"] == database)
    env.reset(options={"task_id": task.id})
    count_sql = f"SELECT COUNT(*) AS n FROM {table}"
    observation, *_ = env.step({"name": "execute_sql", "arguments": {"sql": count_sql}})
    expected = observation.split("\n")[2]  # the one data row of the Markdown table
    witness_episode = _sql_oracle_witness(database, count_sql, expected)
    witness = Witness(witness_episode)
    witness.start()
    try:
        for attack in SQL_ATTACKS:
            sql = attack.format(table=table, column=column, path=path)
            for tool in ("execute_sql", "submit"):
                observation, reward, terminated, _, info = env.step({"name": tool, "arguments": {"sql": sql}})
                json.dumps(info)
                assert reward == 0.0
                if terminated:
                    # submit checks only that the text is one SELECT / WITH statement (a write hidden behind
                    # WITH, a denied function); the verifier then runs it on the read-only engine, which refuses
                    # it: reward 0, nothing written. Start a new episode.
                    assert tool == "submit" and sql.lstrip("( ").upper().startswith(("WITH", "SELECT")), sql[:80]
                    env.reset(options={"task_id": task.id})
                else:
                    assert observation.startswith("Error:"), (tool, sql[:80], observation[:300])
        # list_tables / describe_table with hostile names are reads, and must stay reads
        for name in (f"{table}; DROP TABLE {table}", f"{table}\" ; DELETE FROM \"{table}", "../../etc/passwd"):
            observation, *_ = env.step({"name": "describe_table", "arguments": {"table": name}})
            assert observation.startswith("Error:"), observation[:200]
        observation, *_ = env.step({"name": "execute_sql", "arguments": {"sql": count_sql}})
        assert expected in observation
    finally:
        witness.finish(minimum_rounds=1)
        witness_episode.env.close()  # type: ignore[attr-defined]
        env.close()
    assert checksums(files) == before
    assert not Path("/tmp/agentgym-reliability-copy.db").exists()
    assert not Path("/tmp/agentgym-reliability-write").exists()
    # a fresh env (new engines, new connections) reads the same data and the oracle still solves the task
    fresh = gym.make("SQL-v0")
    assert run_episode(fresh, OracleAgent(), seed=0, task_id=task.id).reward == 1.0
    fresh.close()


# ===================================================================================================== FHIR
def _fhir_env(store_path: Path, **kwargs: Any) -> Any:
    return gym.make("FHIR-v0", store=str(store_path), knowledge=False, **kwargs)


def _observation(patient: str, value: float, code: str = "29463-7") -> dict[str, Any]:
    return {"resourceType": "Observation", "status": "final", "subject": {"reference": f"Patient/{patient}"},
            "code": {"coding": [{"system": "http://loinc.org", "code": code, "display": "Body weight"}]},
            "effectiveDateTime": "2024-12-01T10:00:00Z",
            "valueQuantity": {"value": value, "unit": "kg", "system": "http://unitsofmeasure.org", "code": "kg"}}


def _count(env: Any, resource_type: str, patient: str) -> int:
    observation, *_ = env.step({"name": "fhir_search", "arguments": {
        "resource_type": resource_type, "params": {"patient": patient, "_summary": "count"}}})
    return int(json.loads(observation)["total"])


def _write_task(env: Any) -> Any:
    for task in env.unwrapped.task_set:
        if task.metadata.get("patient_id") and any(call["name"].startswith("create_") for call in task.solution):
            return task
    pytest.skip("the generated FHIR tasks include no write task")


@pytest.mark.timeout(300)
def test_fhir_hostile_writes_stay_in_their_episode_and_the_store_is_byte_identical(fhir_store_path: Path) -> None:
    files = sqlite_family(fhir_store_path)
    before = checksums(files)
    env = _fhir_env(fhir_store_path, max_turns=1000)
    task = _write_task(env)
    patient = task.metadata["patient_id"]
    others = [t.metadata["patient_id"] for t in env.unwrapped.task_set
              if t.metadata.get("patient_id") not in (None, patient)]
    other = others[0]
    env.reset(options={"task_id": task.id})
    gold_counts = {kind: _count(env, kind, patient) for kind in ("Observation", "MedicationRequest",
                                                                   "ServiceRequest")}
    other_count = _count(env, "Observation", other)

    witness_env = _fhir_env(fhir_store_path)
    oracle = OracleAgent()

    def witness_episode() -> None:
        trajectory = run_episode(witness_env, oracle, seed=0, task_id=task.id)
        assert trajectory.reward == 1.0, f"oracle scored {trajectory.reward}"
        witness_env.reset(options={"task_id": task.id})
        seen = {kind: _count(witness_env, kind, patient) for kind in gold_counts}
        assert seen == gold_counts, f"another episode's writes leaked: {seen} != {gold_counts}"

    witness = Witness(witness_episode)
    witness.start()
    try:
        refused = [
            ("create_observation", _observation(other, 80.0)),  # another patient
            ("create_observation", {**_observation(patient, 1.0), "subject": {"reference": f"Patient/{other}"}}),
            ("create_observation", {**_observation(patient, 1.0),
                                    "subject": {"reference": f"http://evil/fhir/Patient/{other}/_history/1"}}),
            ("create_observation", {**_observation(patient, 1.0), "resourceType": "Patient"}),
            ("create_observation", {**_observation(patient, 1.0), "status": "not-a-status"}),
            ("create_observation", {"resourceType": "Observation", "subject": {"reference": f"Patient/{patient}"}}),
            ("create_observation", {**_observation(patient, 1.0), "valueQuantity": "lots"}),
            ("create_medication_request", {"resourceType": "MedicationRequest",
                                           "subject": {"reference": f"Patient/{patient}"}}),
            ("create_service_request", {"resourceType": "ServiceRequest", "status": "bogus", "intent": "order",
                                        "subject": {"reference": f"Patient/{patient}"}}),
            ("create_observation", "DROP TABLE resources"),
            ("create_observation", {**_observation(patient, 1.0), "id": "../../Patient/" + other}),
        ]
        for name, resource in refused:
            observation, *_ = env.step({"name": name, "arguments": {"resource": resource}})
            assert observation.startswith("Error:"), (name, str(resource)[:100], observation[:300])
        # mass creates that are valid: they land in this episode only
        for index in range(300):
            observation, *_ = env.step({"name": "create_observation",
                                        "arguments": {"resource": _observation(patient, 50.0 + index)}})
            assert not observation.startswith("Error:"), observation[:300]
        assert _count(env, "Observation", patient) == gold_counts["Observation"] + 300
        assert _count(env, "Observation", other) == other_count
        env.step({"name": "submit", "arguments": {"answer": "done"}})
        # the next episode of the same env, on the same patient, starts from the gold record
        env.reset(options={"task_id": task.id})
        assert {kind: _count(env, kind, patient) for kind in gold_counts} == gold_counts
    finally:
        witness.finish(minimum_rounds=1)
        witness_env.close()
        env.close()
    assert checksums(files) == before
    # a fresh env over the same file sees the gold record
    fresh = _fhir_env(fhir_store_path)
    fresh.reset(options={"task_id": task.id})
    assert {kind: _count(fresh, kind, patient) for kind in gold_counts} == gold_counts
    fresh.close()


# ===================================================================================================== CLI
CLI_ATTACKS = [
    "rm -rf --no-preserve-root / 2>/dev/null; rm -rf ./* ./.[!.]* 2>/dev/null; ls -A | wc -l",
    "chmod -R 000 ./* 2>&1 | tail -1; chmod 777 / /etc 2>&1 | tail -1",
    "find . -type f -exec sh -c 'echo pwned > \"$1\"' _ {} \\; 2>/dev/null; echo overwritten",
    "ln -sf /etc/passwd hijack; mv -f hijack project 2>&1 | tail -1",
    "dd if=/dev/zero of=/proc/sysrq-trigger bs=1 count=1 2>&1 | tail -1",
    "echo evil > /tmp/agentgym-reliability-cli; cp -r /etc . 2>/dev/null; echo copied",
]


@pytest.mark.docker
@pytest.mark.timeout(600)
def test_cli_hostile_agent_leaves_fixtures_caches_and_other_sandboxes_untouched(
        docker_backend: str, cli_tasks_path: Path) -> None:
    from agentgym_cli.data.fixtures import build_workspace, cache_root, get_workspace
    from agentgym_cli.env import CliEnv, fixture_for

    from agentgym.tasks import load_tasks

    tasks = load_tasks(cli_tasks_path)
    task = next(t for t in tasks if t.family == "organise")
    fixture = fixture_for(task)
    caches = [cache_root(), cli_tasks_path]
    before = checksums(caches)
    tar_before = fixture.digest
    # two warm sandboxes: the hostile episode and the witness each hold one at the same time
    env = CliEnv(tasks, backend=docker_backend, pool_size=2, command_timeout=10.0, max_turns=200)
    witness_env = CliEnv(tasks, backend=docker_backend, pool_size=2, command_timeout=10.0)
    oracle = OracleAgent()
    expected = {entry.path: entry.data for entry in fixture.files() if len(entry.data) < 4096}

    def witness_episode() -> None:
        trajectory = run_episode(witness_env, oracle, seed=0, task_id=task.id)
        assert trajectory.reward == 1.0, f"oracle scored {trajectory.reward}: {trajectory.reward_breakdown}"
        witness_env.reset(options={"task_id": task.id})
        workspace = witness_env.unwrapped.state
        assert workspace.snapshot() == workspace.baseline(), "the witness's workspace differs from the fixture"

    try:
        env.reset(options={"task_id": task.id})
        witness = Witness(witness_episode)
        witness.start()
        try:
            for command in CLI_ATTACKS:
                observation, *_ = env.step({"name": "run_shell", "arguments": {"command": command}})
                assert isinstance(observation, str)
            for path, data in list(expected.items())[:10]:  # overwrite fixture files through write_file
                observation, *_ = env.step({"name": "write_file", "arguments": {"path": path, "content": "x"}})
                observation, *_ = env.step({"name": "write_file", "arguments": {"path": "/" + path, "content": "x"}})
                observation, *_ = env.step({"name": "write_file", "arguments": {
                    "path": "../../../../" + path, "content": "x"}})
            observation, *_ = env.step({"name": "run_shell", "arguments": {"command": "echo alive"}})
            assert "alive" in observation
            env.step({"name": "submit", "arguments": {}})
        finally:
            witness.finish(minimum_rounds=1, timeout=120)
        # the sandbox the hostile episode used goes back to the pool and comes out clean
        for _ in range(2):
            trajectory = run_episode(env, oracle, seed=0, task_id=task.id)
            assert trajectory.reward == 1.0, trajectory.reward_breakdown
            env.reset(options={"task_id": task.id})
            workspace = env.unwrapped.state
            assert workspace.snapshot() == workspace.baseline()
    finally:
        witness_env.close()
        env.close()
    assert fixture.digest == tar_before == build_workspace(0, int(fixture.name.split("-")[-1])).digest
    assert get_workspace(fixture.name).digest == tar_before
    after = checksums(caches)
    # other processes may add or rotate cache files meanwhile; every file present both times is unchanged
    assert {path: after[path] for path in before if path in after} == {path: before[path] for path in after
                                                                       if path in before}
    assert after[str(cli_tasks_path)] == before[str(cli_tasks_path)]
    assert not Path("/tmp/agentgym-reliability-cli").exists()
    # every container made here is either back in the shared pool or gone: nothing new but the pool
    from agentgym.sandbox import close_pools

    close_pools()
    assert wait_for_no_containers() == []


@pytest.mark.docker
@pytest.mark.timeout(180)
def test_cli_unreadable_workspace_root_then_submit_is_scored_not_raised(docker_backend: str,
                                                                      cli_tasks_path: Path) -> None:
    from agentgym_cli.env import CliEnv

    from agentgym.tasks import load_tasks

    tasks = load_tasks(cli_tasks_path)
    task = next(t for t in tasks if t.family == "organise")
    env = CliEnv(tasks, backend=docker_backend, pool_size=1, command_timeout=10.0)
    try:
        env.reset(options={"task_id": task.id})
        env.step({"name": "run_shell", "arguments": {"command": "chmod 000 ."}})
        _, reward, terminated, _, _ = env.step({"name": "submit", "arguments": {}})
        assert terminated and reward == 0.0
    finally:
        env.close()
