"""Reward integrity of SQL-v0: each task is scored on what it asks for, rows are compared whole, tolerances
are relative to the gold, long golds are not cut off, and a right answer in any legal form scores 1."""

from __future__ import annotations

import collections
import sqlite3
from pathlib import Path

import gymnasium as gym
import pytest
from agentgym_sql.verify import answer_matches, compare

import agentgym  # noqa: F401
from agentgym import Task, VerifierSpec, save_tasks
from agentgym.agents import OracleAgent
from agentgym.rollout import run_episode

PLAYERS = [("Ana", "red", 10), ("Ben", "blue", 20), ("Caro", "red", 30), ("Dev", "blue", 40)]


@pytest.fixture(scope="module")
def league(tmp_path_factory: pytest.TempPathFactory) -> Path:
    database = tmp_path_factory.mktemp("league") / "league.sqlite"
    connection = sqlite3.connect(database)
    connection.execute("CREATE TABLE players (name TEXT, team TEXT, score INTEGER)")
    connection.executemany("INSERT INTO players VALUES (?, ?, ?)", PLAYERS)
    connection.execute("CREATE TABLE events (id INTEGER PRIMARY KEY, flagged INTEGER, weight REAL)")
    connection.executemany("INSERT INTO events VALUES (?, ?, ?)",
                           [(i, int(i % 5000 == 0), i / 3) for i in range(15_000)])
    connection.commit()
    connection.close()
    return database


def make_task(database: Path, number: int, sql: str, *, match: str = "set", mode: str = "sql",
              alternatives: list[str] | None = None) -> Task:
    params: dict[str, object] = {"match": match, "mode": mode}
    if alternatives:
        params["alternatives"] = alternatives
    rows = [list(row) for row in sqlite3.connect(database).execute(sql).fetchall()]
    value = rows[0][0] if len(rows) == 1 and len(rows[0]) == 1 else rows
    solution = ([{"name": "submit_answer", "arguments": {"value": value}}] if mode == "answer"
                else [{"name": "submit", "arguments": {"sql": sql}}])
    return Task(id=f"league-{number}", domain="sql", family="league", split="test", prompt=f"Q{number}",
                answer=None, solution=solution, verifier=VerifierSpec(name="sql_execution", params=params),
                metadata={"database_path": str(database), "db_id": "league", "dialect": "sqlite",
                          "gold_sql": {"sqlite": sql}, "question": f"Q{number}", "evidence": None})


@pytest.fixture(scope="module")
def env(league: Path, tmp_path_factory: pytest.TempPathFactory) -> gym.Env:
    tasks = [
        make_task(league, 0, "SELECT name, score FROM players ORDER BY score DESC", match="ordered"),
        make_task(league, 1, "SELECT name, score FROM players", match="multiset", mode="answer"),
        make_task(league, 2, "SELECT name FROM players ORDER BY score DESC", match="ordered", mode="answer"),
        make_task(league, 3, "SELECT 1.0 * SUM(flagged) / COUNT(*) FROM events", mode="answer"),
        make_task(league, 4, "SELECT 1.0 * SUM(flagged) / COUNT(*) FROM events"),
        make_task(league, 5, "SELECT id, weight FROM events", match="multiset"),  # 15,000 rows
        make_task(league, 6, "SELECT name FROM players WHERE team = 'red'",
                  alternatives=["SELECT name, team FROM players WHERE team = 'red'"]),
        make_task(league, 7, "SELECT COUNT(*) FROM players WHERE team = 'red'", mode="answer",
                  alternatives=["SELECT COUNT(*) FROM players WHERE score > 15"]),
    ]
    path = tmp_path_factory.mktemp("tasks") / "league.jsonl"
    save_tasks(tasks, path)
    made = gym.make("SQL-v0", tasks=str(path))
    yield made
    made.close()


def play(env: gym.Env, task_id: str, *actions: dict) -> tuple[float, str]:
    env.reset(options={"task_id": task_id})
    reward, observation = 0.0, ""
    for action in actions:
        observation, reward, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
    return reward, observation


def submit(sql: str) -> dict:
    return {"name": "submit", "arguments": {"sql": sql}}


def answer(value: object) -> dict:
    return {"name": "submit_answer", "arguments": {"value": value}}


def test_oracle_scores_one_on_every_fixture_task(env: gym.Env) -> None:
    assert all(run_episode(env, OracleAgent(), task_id=t.id).reward == 1.0 for t in env.unwrapped.task_set)


def test_a_query_task_refuses_a_value_and_an_answer_task_refuses_a_query(env: gym.Env) -> None:
    env.reset(options={"task_id": "league-0"})
    observation, reward, terminated, *_ = env.step(answer(["Dev", 40, "Caro", 30, "Ben", 20, "Ana", 10]))
    assert not terminated and reward == 0.0 and "call submit(sql)" in observation
    env.reset(options={"task_id": "league-1"})
    observation, reward, terminated, *_ = env.step(submit("SELECT name, score FROM players"))
    assert not terminated and reward == 0.0 and "submit_answer(value)" in observation


def test_order_matters_on_ordered_tasks(env: gym.Env) -> None:
    assert play(env, "league-0", submit("SELECT name, score FROM players ORDER BY score DESC"))[0] == 1.0
    assert play(env, "league-0", submit("SELECT name, score FROM players ORDER BY score"))[0] == 0.0
    assert play(env, "league-2", answer(["Dev", "Caro", "Ben", "Ana"]))[0] == 1.0
    assert play(env, "league-2", answer("Dev, Caro, Ben, Ana"))[0] == 1.0
    assert play(env, "league-2", answer(["Ana", "Ben", "Caro", "Dev"]))[0] == 0.0


def test_rows_stay_whole_and_every_legal_form_scores(env: gym.Env) -> None:
    legal = [
        [["Ana", 10], ["Ben", 20], ["Caro", 30], ["Dev", 40]],
        [["Dev", 40], ["Ben", 20], ["Ana", 10], ["Caro", 30]],          # rows in another order
        [[10, "Ana"], ["Ben", "20"], ["Caro", 30.0], ["dev", 40]],      # cells of a row in any order, typed freely
        ["Ana", 10, "Ben", 20, "Caro", 30, "Dev", 40],                  # flat, row by row
        '[["Caro", 30], ["Ana", 10], ["Dev", 40], ["Ben", 20]]',        # JSON text
    ]
    for value in legal:
        assert play(env, "league-1", answer(value))[0] == 1.0, value
    wrong = [
        [["Ana", 20], ["Ben", 10], ["Caro", 30], ["Dev", 40]],          # crossed pairs
        ["Ana", "Ben", "Caro", "Dev", 10, 20, 30, 40],                  # flat, but not row by row
        [["Ana", 10], ["Ben", 20], ["Caro", 30]],                       # a row missing
        [["Ana", 10], ["Ben", 20], ["Caro", 30], ["Dev", 40], ["Eve", 50]],  # an extra candidate
    ]
    for value in wrong:
        assert play(env, "league-1", answer(value))[0] == 0.0, value


def test_tolerance_is_relative_to_the_gold(env: gym.Env) -> None:
    ratio = 3 / 15_000  # 0.0002: an absolute 5e-3 tolerance, or 4-place rounding, would take 0 for it
    for value in (0, "0", 0.0, 0.00019):
        assert play(env, "league-3", answer(value))[0] == 0.0, value
    for value in (ratio, "0.0002", "2e-4", str(ratio)):
        assert play(env, "league-3", answer(value))[0] == 1.0, value
    assert play(env, "league-4", submit("SELECT 0"))[0] == 0.0
    assert play(env, "league-4", submit("SELECT 0.0002"))[0] == 1.0
    assert play(env, "league-4", submit("SELECT AVG(flagged) FROM events"))[0] == 1.0


def test_a_gold_longer_than_ten_thousand_rows_is_matched_and_longer_results_fail(env: gym.Env) -> None:
    assert play(env, "league-5", submit("SELECT id, weight FROM events ORDER BY id DESC"))[0] == 1.0
    assert play(env, "league-5", submit("SELECT id, id / 3.0 FROM events"))[0] == 1.0  # same floats, other SQL
    reward, _ = play(env, "league-5", submit("SELECT id, weight FROM events UNION ALL SELECT 0, 0"))
    assert reward == 0.0
    reward, _ = play(env, "league-5", submit("SELECT a.id, a.weight FROM events a, events b"))  # 225 M rows
    assert reward == 0.0


def test_any_alternative_gold_scores(env: gym.Env) -> None:
    assert play(env, "league-6", submit("SELECT name FROM players WHERE team = 'red'"))[0] == 1.0
    assert play(env, "league-6", submit("SELECT name, team FROM players WHERE score IN (10, 30)"))[0] == 1.0
    assert play(env, "league-6", submit("SELECT team FROM players WHERE team = 'red'"))[0] == 0.0
    assert play(env, "league-7", answer(2))[0] == 1.0
    assert play(env, "league-7", answer(3))[0] == 1.0  # the alternative reading of the question
    assert play(env, "league-7", answer(4))[0] == 0.0


def test_random_results_cannot_be_submitted(env: gym.Env) -> None:
    env.reset(options={"task_id": "league-4"})
    observation, _, terminated, *_ = env.step(submit("SELECT abs(random()) % 3"))
    assert not terminated and "random() makes its result change" in observation


def test_float_rows_match_whatever_order_near_equal_values_come_in() -> None:
    third = 1 / 3
    gold = [[third, "b"], [third + 1e-12, "a"]]
    assert compare([[third + 1e-12, "b"], [third, "a"]], gold)["multiset"] == 1.0
    assert compare([[0.1 + 0.2, 1]], [[0.3, 1]])["ordered"] == 1.0
    assert compare([[0.00003]], [[0.00002]])["set"] == 0.0  # distinct small values stay distinct
    assert compare([[12345678901]], [[12345678902]])["set"] == 0.0  # integers compare exactly
    assert compare([["x", 1.0], ["x", 1.0]], [["x", 1.0000000001]])["set"] == 1.0
    assert compare([["x", 1.0], ["x", 2.0]], [["x", 1.0]])["set"] == 0.0


def test_typed_answers_in_both_directions() -> None:
    gold = [["Boston", 12], ["Lyon", 7]]
    assert answer_matches([["Lyon", 7], ["Boston", 12]], gold)
    assert answer_matches(["Boston", 12, "Lyon", 7], gold)
    assert not answer_matches(["Boston", 7, "Lyon", 12], gold)
    assert not answer_matches([["Boston", 12], ["Lyon", 7]], gold[::-1], ordered=True)
    assert answer_matches("Boston, Lyon", [["Boston"], ["Lyon"]])
    assert answer_matches("Lyon; Boston", [["Boston"], ["Lyon"]])
    assert not answer_matches("Boston, Lyon, Oslo", [["Boston"], ["Lyon"]])
    assert not answer_matches("Boston or Lyon", [["Boston"]])
    assert answer_matches("1,234", [[1234]]) and answer_matches("12.5 %", [[12.5]])
    assert not answer_matches("3 or 4", [[3]])
    repeated = [["Boston"], ["Lyon"], ["Boston"]]  # set match: each distinct row once, repeats allowed
    assert answer_matches(["Lyon", "Boston"], repeated, distinct=True)
    assert answer_matches(["Lyon", "Boston", "boston"], repeated, distinct=True)
    assert not answer_matches(["Lyon", "Boston", "Oslo"], repeated, distinct=True)
    assert not answer_matches(["Lyon", "Boston"], repeated)  # multiset: the repeat is part of the answer
    assert answer_matches("2021-03-04", [["2021-03-04"]]) and answer_matches("March 4, 2021", [["2021-03-04"]])


def test_best_constant_answer_per_family_scores_at_most_a_half() -> None:
    """On the built-in tasks, no constant (0, 1, NULL, '', an empty result) is a strategy."""
    made = gym.make("SQL-v0")
    constants = (0, 1, None, "", "yes")
    score: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    for task in made.unwrapped.task_set:
        for constant in constants:
            if task.verifier.params["mode"] == "answer":
                ok = answer_matches(constant, task.answer)
            else:
                ok = bool(compare([[constant]] if constant is not None else [], task.answer)[task.verifier.params["match"]])
            score[(task.family, repr(constant))].append(float(ok))
    made.close()
    best = {family: max(sum(v) / len(v) for (f, _), v in score.items() if f == family) for family, _ in score}
    assert max(best.values()) <= 0.5, best
    assert max(best.values()) <= 0.15, best  # measured: 0.104 (dates, answer 0 or 1), 0.07 aggregates, else <= 0.034
